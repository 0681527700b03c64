import { LruMap } from 'toad-cache'
import type { Listener, Subscriptions } from '../features/subscriptions.js'
import type { LoggingLevel } from '../protocol/wire.js'
import type { SessionEvent } from '../bus/events.js'

/** Sessions whose log level a node remembers; past it, the least recently used are forgotten. */
export const MAX_REMEMBERED_LEVELS = 10_000

export class SessionHub {
  /** Names this hub in the subscriptions it publishes, which it applied to its own streams already. */
  /** This node's id on the bus: a change this hub published is applied here already. */
  readonly #origin: string
  readonly #subscriptions: Subscriptions
  readonly #publish: (event: SessionEvent) => void
  readonly #levels = new LruMap<LoggingLevel>(MAX_REMEMBERED_LEVELS)
  readonly #streams = new Map<string, Set<Listener>>()
  // A dictionary object, not a Map, which one add and delete per request churns (bench/README.md#churn).
  readonly #running: Record<string, () => void> = Object.create(null)

  constructor (subscriptions: Subscriptions, publish: (event: SessionEvent) => void, node: string) {
    this.#origin = node
    this.#subscriptions = subscriptions
    this.#publish = publish
  }

  levelOf (session: string): LoggingLevel | undefined {
    return this.#levels.get(session)
  }

  setLevel (session: string, level: LoggingLevel): void {
    this.#remember(session, level)
    this.#publish({ kind: 'session', session, op: 'level', level })
  }

  /** A full stream here refuses at once (false: nothing changes anywhere); one on another node can only log it. */
  subscribe (session: string, uri: string, on: boolean): boolean {
    const streams = this.#streams.get(session)
    if (streams !== undefined) {
      if (on) {
        for (const listener of streams) if (this.#subscriptions.refuses(listener, uri)) return false
      }
      this.#apply(streams, on, uri)
    }
    this.#publish({ kind: 'session', session, op: on ? 'subscribe' : 'unsubscribe', uri, from: this.#origin })
    return true
  }

  cancel (session: string, requestId: string | number): void {
    this.#publish({ kind: 'session', session, op: 'cancel', requestId })
  }

  addStream (session: string, listener: Listener): () => void {
    let set = this.#streams.get(session)
    if (set === undefined) {
      set = new Set()
      this.#streams.set(session, set)
    }
    set.add(listener)
    return () => {
      set.delete(listener)
      if (set.size === 0) this.#streams.delete(session)
    }
  }

  addRequest (session: string, requestId: string | number, cancel: () => void): () => void {
    const key = `${session}\u0000${typeof requestId}:${requestId}`
    const running = this.#running
    running[key] = cancel
    return () => { delete running[key] }
  }

  receive (event: SessionEvent): void {
    switch (event.op) {
      case 'level':
        this.#remember(event.session, event.level)
        return
      case 'cancel':
        this.#running[`${event.session}\u0000${typeof event.requestId}:${event.requestId}`]?.()
        return
      default: {
        const streams = this.#streams.get(event.session)
        if (streams !== undefined && event.from !== this.#origin) this.#apply(streams, event.op === 'subscribe', event.uri, true)
      }
    }
  }

  /** A change from another node that a full stream refuses is logged: its request has already been answered. */
  #apply (streams: Set<Listener>, on: boolean, uri: string, remote = false): void {
    for (const listener of streams) {
      if (!on) this.#subscriptions.unsubscribe(listener, uri)
      else if (!this.#subscriptions.subscribe(listener, uri) && remote) {
        listener.ctx.logger.warn({ mcp: { uri: uri.slice(0, 200) } },
          'mocapi refused a resources/subscribe that reached another node: the session\'s stream here holds limits.subscriptionUris URIs')
      }
    }
  }

  #remember (session: string, level: LoggingLevel): void {
    this.#levels.set(session, level)
  }
}
