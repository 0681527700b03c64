// JSON that reads back as it was written: what a token, a task's record, a receipt or a skill's frontmatter may carry.
import serialize from 'canonicalize'

// RFC 8785 canonical JSON: its CommonJS default export is the function its types describe as a module.
const canonicalJson = serialize as unknown as (input: unknown) => string | undefined

/** RFC 8785's one text per meaning; undefined for what it cannot write (`1e400` parses as Infinity). */
export function canonicalize (value: unknown): string | undefined {
  try {
    return canonicalJson(value)
  } catch {
    return undefined
  }
}

/** Why `value` would not read back the same from JSON, or undefined when it would; so does nesting past `maxDepth`. */
export function notJson (value: unknown, maxDepth = 64, depth = 0): string | undefined {
  if (value === null || typeof value === 'string' || typeof value === 'boolean') return undefined
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : `the number ${value}`
  if (typeof value !== 'object') return value === undefined ? 'undefined in an array' : `a ${typeof value}`
  if (depth === maxDepth) return `nesting deeper than ${maxDepth} levels`
  if (Array.isArray(value)) {
    for (const item of value) {
      const reason = notJson(item, maxDepth, depth + 1)
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
    const reason = notJson(field, maxDepth, depth + 1)
    if (reason !== undefined) return reason
  }
  return undefined
}

/** A copy that shares nothing with `value`, so what one side changes never reaches the other. */
export function jsonCopy<T> (value: T): T {
  return typeof value === 'object' && value !== null ? JSON.parse(JSON.stringify(value)) : value
}
