import { knownFields, optionalFunction } from '../check.js'
import type { McpContext } from '../context.js'
import { DuplicateDefinitionError, InvalidDefinitionError } from '../errors.js'

/**
 * Decides whether the caller may see and use a tool, prompt or resource. Hidden means absent: left out of lists and
 * answered exactly like one that does not exist. A check that throws hides the item (fail closed). Lists run every
 * check, so a check also runs for items the request does not name: keep it free of side effects.
 *
 * Time: so that a request naming nothing is not told apart by being faster, while some item of the kind has a check
 * it runs the first such check (registration order, `ctx` unchanged) and drops its answer (a throw is not logged).
 * That evens them out only when a kind's checks cost alike; mocapi cannot know what a check costs. Where it matters,
 * load the caller's grants once per request in an `onRequest` or `preHandler` hook, and keep checks synchronous reads.
 */
export type AccessCheck = (ctx: McpContext) => boolean | Promise<boolean>

export interface Entry<L> {
  listed: L
  canAccess: AccessCheck | undefined
  scopes?: readonly string[]
}

export async function allowed (entry: Entry<unknown>, ctx: McpContext): Promise<boolean> {
  if (entry.canAccess === undefined) return true
  try {
    return (await entry.canAccess(ctx)) === true
  } catch (error) {
    ctx.request.log.warn({ err: error }, 'mocapi canAccess threw; the item stays hidden')
    return false
  }
}

/** Items of one kind by name or URI; the list is cached per change unless some item has a check, then per caller. */
export class Catalog<L, E extends Entry<L>> {
  readonly #entries = new Map<string, E>()
  #listed: L[] | undefined
  /** In registration order: {@link absent} runs the first. */
  readonly #guarded = new Set<E>()
  readonly #observers: Array<(entry: E, added: boolean) => void> = []

  get size (): number {
    return this.#entries.size
  }

  get varies (): boolean {
    return this.#guarded.size > 0
  }

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

  /** Told of every entry put or removed (what sits over a catalog counts its own kind of entry so). */
  observe (observer: (entry: E, added: boolean) => void): void {
    this.#observers.push(observer)
  }

  entry (key: string): E | undefined {
    return this.#entries.get(key)
  }

  scopesInto (into: Set<string>): void {
    for (const entry of this.#entries.values()) for (const scope of entry.scopes ?? []) into.add(scope)
  }

  values (): IterableIterator<E> {
    return this.#entries.values()
  }

  put (key: string, entry: E): void {
    this.#entries.set(key, entry)
    if (entry.canAccess !== undefined) this.#guarded.add(entry)
    this.#listed = undefined
    for (const observer of this.#observers) observer(entry, true)
  }

  remove (key: string): E | undefined {
    const entry = this.#entries.get(key)
    if (entry === undefined) return undefined
    this.#entries.delete(key)
    this.#guarded.delete(entry)
    this.#listed = undefined
    for (const observer of this.#observers) observer(entry, false)
    return entry
  }

  list (): L[] {
    this.#listed ??= [...this.#entries.values()].map((entry) => entry.listed)
    return this.#listed
  }

  async visible (ctx: McpContext): Promise<L[]> {
    if (this.#guarded.size === 0) return this.list()
    const shown: L[] = []
    for (const entry of this.#entries.values()) {
      if (await allowed(entry, ctx)) shown.push(entry.listed)
    }
    return shown
  }

  /** Synchronous without a check (no promise tick); `evenly: false` skips {@link absent} where no one can time it. */
  find (key: string, ctx: McpContext, evenly = true): E | undefined | Promise<E | undefined> {
    const entry = this.#entries.get(key)
    if (entry === undefined) return evenly && this.#guarded.size > 0 ? this.absent(ctx) : undefined
    if (entry.canAccess === undefined) return entry
    return allowed(entry, ctx).then((ok) => ok ? entry : undefined)
  }

  /** Runs the kind's first check and drops its answer, so a missing item costs what a hidden one does. */
  async absent (ctx: McpContext): Promise<undefined> {
    const stand = this.#guarded.values().next().value
    if (stand === undefined) return undefined
    try {
      await (stand.canAccess as AccessCheck)(ctx)
    } catch {}
    return undefined
  }
}

export function listedForm<T extends object> (definition: T): T {
  const { canAccess, cache, complete, task, scopes, ...listed } =
    definition as T & { canAccess?: unknown, cache?: unknown, complete?: unknown, task?: unknown, scopes?: unknown }
  return listed as T
}

export function accessCheck (value: unknown, where: string): AccessCheck | undefined {
  return optionalFunction<AccessCheck>(value, `${where} canAccess`, InvalidDefinitionError)
}
