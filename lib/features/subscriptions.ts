import type { NotificationStream } from '../call.js'
import { noop } from '../check.js'
import type { McpContext } from '../context.js'
import { kCallState } from '../symbols.js'
import { invalidRequest } from '../errors.js'
import { callerOf } from '../caller.js'
import type { JsonObject } from '../protocol/wire.js'
import { LIST_KINDS, type ChangeEvent, type ListKind } from '../bus/events.js'

export const LIST_CHANGED: Readonly<Record<ListKind, string>> = {
  tools: 'notifications/tools/list_changed',
  prompts: 'notifications/prompts/list_changed',
  resources: 'notifications/resources/list_changed',
}

export interface StreamSettings {
  streams: number
  streamsPerCaller: number
  subscriptionUris: number
  uriLength: number
}

/** What a stream hears of: list changes, updates of resources, and (2026-07-28 only) tasks' news. */
export interface Filter { lists: Set<ListKind>, uris: Set<string>, tasks?: Set<string> }

/** Whether a caller may see a URI, exactly when a read would serve it: a boolean unless some item checks access. */
type ResourceVisibility = (uri: string) => boolean | ((ctx: McpContext) => Promise<boolean>)

export interface Listener {
  readonly ctx: McpContext
  readonly lists: ReadonlySet<ListKind>
  readonly uris: Set<string>
  /** The tasks it hears of (`notifications/tasks`); none on 2025-era streams. */
  readonly tasks?: ReadonlySet<string>
  notify (event: ChangeEvent): void
  notifyTask? (task: JsonObject): void
  end (): void
}

/** A task as its owner may see it (`tasks/get`'s view), or undefined for anyone else. */
export interface TaskViews {
  view (id: string, principal: string | null): Promise<JsonObject | undefined>
}

/** Indexed by list kind and URI, so a change scans no filter; an update reaches only callers that may read it. */
export class Subscriptions {
  readonly #limits: StreamSettings
  readonly #visibility: ResourceVisibility
  readonly #listeners = new Set<Listener>()
  readonly #perCaller = new Map<string, number>()
  readonly #byList: Record<ListKind, Set<Listener>> = { tools: new Set(), prompts: new Set(), resources: new Set() }
  readonly #byUri = new Map<string, Set<Listener>>()
  readonly #byTask = new Map<string, Set<Listener>>()
  readonly #tasks: TaskViews

  constructor (limits: StreamSettings, visibility: ResourceVisibility, tasks: TaskViews) {
    this.#limits = limits
    this.#visibility = visibility
    this.#tasks = tasks
  }

  get limits (): StreamSettings {
    return this.#limits
  }

  notifyTask (id: string): void {
    const listeners = this.#byTask.get(id)
    if (listeners === undefined) return
    for (const listener of listeners) {
      this.#tasks.view(id, listener.ctx.principal).then((view) => {
        if (view !== undefined && this.#listeners.has(listener)) listener.notifyTask?.(view)
      }, noop)
    }
  }

  notify (event: ChangeEvent): void {
    if (event.kind !== 'resource') {
      for (const listener of this.#byList[event.kind]) listener.notify(event)
      return
    }
    const listeners = this.#byUri.get(event.uri)
    if (listeners === undefined) return
    const visible = this.#visibility(event.uri)
    if (visible === false) return
    for (const listener of listeners) {
      if (visible === true) listener.notify(event)
      // A listener whose stream ended meanwhile is left out of the index, so the check is its own.
      else {
        visible(listener.ctx).then((ok) => {
          if (ok && this.#listeners.has(listener)) listener.notify(event)
        }, noop)
      }
    }
  }

  /** After a bus outage, whose changes reached no stream: tells every stream of all its filter covers, to re-read. */
  catchUp (): void {
    for (const kind of LIST_KINDS) this.notify({ kind })
    for (const uri of this.#byUri.keys()) this.notify({ kind: 'resource', uri })
  }

  /** Refuses a stream past the limits (429, 503); the function returned closes it, once. */
  open (listener: Listener): () => void {
    const caller = callerOf(listener.ctx.principal, listener.ctx.request.ip)
    const count = this.#perCaller.get(caller) ?? 0
    if (count >= this.#limits.streamsPerCaller) {
      throw invalidRequest(`Too many open streams for this caller: at most ${this.#limits.streamsPerCaller} (limits.streamsPerCaller)`, 429)
    }
    if (this.#listeners.size >= this.#limits.streams) {
      throw invalidRequest(`The server holds as many open streams as it accepts (${this.#limits.streams}, limits.streams); try again later`, 503)
    }
    this.#perCaller.set(caller, count + 1)
    this.#listeners.add(listener)
    for (const kind of listener.lists) this.#byList[kind].add(listener)
    for (const uri of listener.uris) this.#index(uri, listener)
    for (const id of listener.tasks ?? []) this.#index(id, listener, this.#byTask)
    let open = true
    return () => {
      if (!open) return
      open = false
      this.#listeners.delete(listener)
      const left = (this.#perCaller.get(caller) as number) - 1
      if (left === 0) this.#perCaller.delete(caller)
      else this.#perCaller.set(caller, left)
      for (const kind of listener.lists) this.#byList[kind].delete(listener)
      for (const uri of listener.uris) this.#unindex(uri, listener)
      for (const id of listener.tasks ?? []) this.#unindex(id, listener, this.#byTask)
    }
  }

  #index (uri: string, listener: Listener, index = this.#byUri): void {
    let set = index.get(uri)
    if (set === undefined) {
      set = new Set()
      index.set(uri, set)
    }
    set.add(listener)
  }

  #unindex (uri: string, listener: Listener, index = this.#byUri): void {
    const set = index.get(uri) as Set<Listener>
    set.delete(listener)
    if (set.size === 0) index.delete(uri)
  }

  refuses (listener: Listener, uri: string): boolean {
    return this.#listeners.has(listener) && !listener.uris.has(uri) &&
      listener.uris.size >= this.#limits.subscriptionUris
  }

  /** A 2025-era `resources/subscribe`: false when refused; a stream that has the URI, or ended, takes it as done. */
  subscribe (listener: Listener, uri: string): boolean {
    if (this.refuses(listener, uri)) return false
    if (this.#listeners.has(listener) && !listener.uris.has(uri)) {
      listener.uris.add(uri)
      this.#index(uri, listener)
    }
    return true
  }

  unsubscribe (listener: Listener, uri: string): void {
    if (!this.#listeners.has(listener) || !listener.uris.delete(uri)) return
    this.#unindex(uri, listener)
  }

  /** `ended` resolves once the client leaves, the stream is cut off or the server closes; 429/503 past the limits. */
  stream (ctx: McpContext, filter: Filter,
    format: (event: ChangeEvent) => object, stream: NotificationStream = ctx[kCallState].stream,
    formatTask?: (task: JsonObject) => object): { listener: Listener, ended: Promise<void> } {
    let settle!: () => void
    const ended = new Promise<void>((resolve) => { settle = resolve })
    const listener: Listener = {
      ctx,
      lists: filter.lists,
      uris: filter.uris,
      tasks: filter.tasks,
      notify: (event) => { if (!stream.notify(format(event))) listener.end() },
      // A stream that can take no more ends with its signal, which ends the listener.
      notifyTask: formatTask === undefined ? undefined : (task) => { stream.notify(formatTask(task)) },
      // Called only once `open` returned: opening runs no listener code.
      end: () => {
        close()
        settle()
      },
    }
    const close = this.open(listener)
    // A client may have left before its request got here: its stream must not stay open.
    if (stream.signal.aborted) listener.end()
    else stream.signal.addEventListener('abort', listener.end)
    return { listener, ended }
  }
}
