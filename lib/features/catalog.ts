import { knownFields, optionalFunction } from '../check.js'
import type { McpContext } from '../context.js'
import { DuplicateDefinitionError, InvalidDefinitionError } from '../errors.js'

/**
 * Decides whether the caller may see and use a tool, prompt or resource. Hidden means absent:
 * it is left out of lists and answered exactly like one that does not exist. A check that
 * throws hides the item (fail closed).
 */
export type AccessCheck = (ctx: McpContext) => boolean | Promise<boolean>

/** What every catalogued item has: its listed form and an optional access check. */
export interface Entry<L> {
  listed: L
  canAccess: AccessCheck | undefined
}

/** Whether `ctx`'s caller may see the entry. */
export async function allowed (entry: Entry<unknown>, ctx: McpContext): Promise<boolean> {
  if (entry.canAccess === undefined) return true
  try {
    return (await entry.canAccess(ctx)) === true
  } catch (error) {
    ctx.request.log.warn({ err: error }, 'mocapi canAccess threw; the item stays hidden')
    return false
  }
}

/**
 * Registered items of one kind, keyed by name or URI, in registration order. Lists are
 * computed once per change, unless an item has an access check: then per caller. Tools and
 * prompts extend it; resources keep two, one for resources and one for templates.
 */
export class Catalog<L, E extends Entry<L>> {
  readonly #entries = new Map<string, E>()
  #listed: L[] | undefined
  #guarded = 0

  get size (): number {
    return this.#entries.size
  }

  /** True when some item has an access check, so lists vary by caller. */
  get varies (): boolean {
    return this.#guarded > 0
  }

  /** Checks what every new item needs: a key not taken, only known fields, a handler function. */
  checkNew (key: string, where: string, definition: Record<string, unknown>, known: ReadonlySet<string>, handler: unknown): void {
    if (this.#entries.has(key)) throw new DuplicateDefinitionError(where)
    knownFields(definition, known, where, InvalidDefinitionError)
    if (typeof handler !== 'function') throw new InvalidDefinitionError(`${where} needs a handler function`)
  }

  /** The item under `key`, whoever asks. */
  entry (key: string): E | undefined {
    return this.#entries.get(key)
  }

  values (): IterableIterator<E> {
    return this.#entries.values()
  }

  /** Stores a checked item; a kind's own `add` checks the definition first. */
  put (key: string, entry: E): void {
    this.#entries.set(key, entry)
    if (entry.canAccess !== undefined) this.#guarded++
    this.#listed = undefined
  }

  /** Removes an item; returns it, so its kind can release what it holds. */
  remove (key: string): E | undefined {
    const entry = this.#entries.get(key)
    if (entry === undefined) return undefined
    this.#entries.delete(key)
    if (entry.canAccess !== undefined) this.#guarded--
    this.#listed = undefined
    return entry
  }

  /** Every item's listed form, whoever asks. */
  list (): L[] {
    this.#listed ??= [...this.#entries.values()].map((entry) => entry.listed)
    return this.#listed
  }

  /** The listed forms `ctx`'s caller may see. */
  async visible (ctx: McpContext): Promise<L[]> {
    if (this.#guarded === 0) return this.list()
    const shown: L[] = []
    for (const entry of this.#entries.values()) {
      if (await allowed(entry, ctx)) shown.push(entry.listed)
    }
    return shown
  }

  /**
   * The item, when it exists and `ctx`'s caller may see it. Synchronous for an item without an
   * access check, so the common call pays no extra promise tick.
   */
  find (key: string, ctx: McpContext): E | undefined | Promise<E | undefined> {
    const entry = this.#entries.get(key)
    if (entry?.canAccess === undefined) return entry
    return allowed(entry, ctx).then((ok) => ok ? entry : undefined)
  }
}

/** A definition's listed form: without the fields that only mocapi reads. */
export function listedForm<T extends object> (definition: T): T {
  const { canAccess, cache, complete, ...listed } = definition as T & { canAccess?: unknown, cache?: unknown, complete?: unknown }
  return listed as T
}

/** Checks an optional `canAccess` field. */
export function accessCheck (value: unknown, where: string): AccessCheck | undefined {
  return optionalFunction<AccessCheck>(value, `${where} canAccess`, InvalidDefinitionError)
}
