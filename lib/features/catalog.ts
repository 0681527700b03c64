import { knownFields, optionalFunction } from '../check.js'
import type { McpContext } from '../context.js'
import { DuplicateDefinitionError, InvalidDefinitionError } from '../errors.js'

/**
 * Decides whether the caller may see and use a tool, prompt or resource. Hidden means absent:
 * it is left out of lists and answered exactly like one that does not exist. A check that
 * throws hides the item (fail closed).
 *
 * Time: a request that names an item runs that item's check. So that one naming nothing is not
 * told apart by being faster, while some item of the kind has a check, it runs the first such
 * check (in registration order), `ctx` unchanged, and drops its answer (a throw is not logged).
 * That evens the two out when the checks of a kind cost alike, as one shared lookup does; checks
 * that cost differently per item still tell them apart, and mocapi cannot know what a check
 * costs. Where it matters, do the slow part once per request before mocapi runs (an `onRequest`
 * or `preHandler` hook that loads the caller's grants onto the request, which every request
 * pays, whatever it names), and keep checks synchronous reads of it. A check can also be called
 * for an item the request does not name (lists run every check), so keep it free of side effects.
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
  /** The items with an access check, in registration order. */
  readonly #guarded = new Set<E>()

  get size (): number {
    return this.#entries.size
  }

  /** True when some item has an access check, so lists vary by caller. */
  get varies (): boolean {
    return this.#guarded.size > 0
  }

  /** Checks what every new item needs: a key not taken, only known fields, a handler function. */
  checkNew (
    key: string,
    where: string,
    definition: Record<string, unknown>,
    known: ReadonlySet<string>,
    handler: unknown
  ): void {
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
    if (entry.canAccess !== undefined) this.#guarded.add(entry)
    this.#listed = undefined
  }

  /** Removes an item; returns it, so its kind can release what it holds. */
  remove (key: string): E | undefined {
    const entry = this.#entries.get(key)
    if (entry === undefined) return undefined
    this.#entries.delete(key)
    this.#guarded.delete(entry)
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
    if (this.#guarded.size === 0) return this.list()
    const shown: L[] = []
    for (const entry of this.#entries.values()) {
      if (await allowed(entry, ctx)) shown.push(entry.listed)
    }
    return shown
  }

  /**
   * The item, when it exists and `ctx`'s caller may see it. Synchronous for an item without an
   * access check, so the common call pays no extra promise tick. A key that names nothing waits
   * for {@link absent}, so it costs what a hidden item does; `evenly: false` skips that, for a
   * check whose time no caller measures (whether a listen stream hears of a change).
   */
  find (key: string, ctx: McpContext, evenly = true): E | undefined | Promise<E | undefined> {
    const entry = this.#entries.get(key)
    if (entry === undefined) return evenly && this.#guarded.size > 0 ? this.absent(ctx) : undefined
    if (entry.canAccess === undefined) return entry
    return allowed(entry, ctx).then((ok) => ok ? entry : undefined)
  }

  /**
   * What a request that names no item of this kind waits for, so that it takes as long as one
   * naming a hidden item: the first access check of the kind, its answer dropped and a throw
   * unlogged (see {@link AccessCheck}). Nothing when no item has a check.
   */
  async absent (ctx: McpContext): Promise<undefined> {
    const stand = this.#guarded.values().next().value
    if (stand === undefined) return undefined
    try {
      await (stand.canAccess as AccessCheck)(ctx)
    } catch {}
    return undefined
  }
}

/** A definition's listed form: without the fields that only mocapi reads. */
export function listedForm<T extends object> (definition: T): T {
  const { canAccess, cache, complete, ...listed } =
    definition as T & { canAccess?: unknown, cache?: unknown, complete?: unknown }
  return listed as T
}

/** Checks an optional `canAccess` field. */
export function accessCheck (value: unknown, where: string): AccessCheck | undefined {
  return optionalFunction<AccessCheck>(value, `${where} canAccess`, InvalidDefinitionError)
}
