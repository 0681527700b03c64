// What `ctx.once` may record: JSON that reads back the same from a token, a task's record or the stream's pass.

const MAX_DEPTH = 64

/** Why `value` is not JSON that reads back as it is, or undefined when it is. */
export function notJson (value: unknown, depth = 0): string | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : `the number ${value}`
  if (typeof value !== 'object') return value === undefined ? 'undefined in an array' : `a ${typeof value}`
  if (depth === MAX_DEPTH) return `nesting deeper than ${MAX_DEPTH} levels`
  if (Array.isArray(value)) {
    for (const item of value) {
      const reason = notJson(item, depth + 1)
      if (reason !== undefined) return reason
    }
    return undefined
  }
  const prototype: unknown = Object.getPrototypeOf(value)
  if (prototype !== Object.prototype && prototype !== null) {
    return `an object of class ${(prototype as { constructor?: { name?: string } }).constructor?.name ?? '(unnamed)'}`
  }
  for (const key of Object.keys(value)) {
    const field = (value as Record<string, unknown>)[key]
    // Left out, as JSON writes it: the field reads back undefined all the same.
    if (field === undefined) continue
    const reason = notJson(field, depth + 1)
    if (reason !== undefined) return reason
  }
  return undefined
}

/** A copy for the handler, so what it changes never reaches the journal. */
export function copyOf (value: unknown): unknown {
  return typeof value === 'object' && value !== null ? JSON.parse(JSON.stringify(value)) : value
}
