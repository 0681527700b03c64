import type { NotificationStream } from '../call.js'
import type { McpContext } from '../context.js'
import type { Subscriptions } from '../features/subscriptions.js'
import { META_SUBSCRIPTION_ID, type JsonObject } from '../protocol/wire.js'
import { kCallState } from '../symbols.js'
import type { CursorPlace } from './cursor.js'
import { EventsErrorCode } from './errors.js'
import type { EventFeed, Subscribed } from './feed.js'

/** Why a stream ends when its server closes: the subscription lives on, so the client reconnects with its cursor. */
const SHUTDOWN = { code: -32603, message: 'The server is shutting down; reconnect (another node serves you) with the last cursor', data: { reason: 'shutdown' } }

/** Occurrences one wake sends a stream before it lets other work run. */
const PUMP_BATCH = 100

/** One held `events/stream`: it reads the log after its place whenever it is woken, one read at a time. */
class Pump {
  readonly ctx: McpContext
  readonly subscribed: Subscribed
  readonly #feed: EventFeed
  readonly #stream: NotificationStream
  readonly #meta: JsonObject
  place: CursorPlace | null
  /** Ends the stream from the server's side: the request then answers its result. */
  readonly finish: () => void
  #running = false
  #again = false
  #ended = false

  constructor (ctx: McpContext, subscribed: Subscribed, place: CursorPlace | null, feed: EventFeed, end: () => void) {
    this.finish = end
    this.ctx = ctx
    this.subscribed = subscribed
    this.place = place
    this.#feed = feed
    this.#stream = ctx[kCallState].stream
    this.#meta = { [META_SUBSCRIPTION_ID]: ctx.id }
  }

  get meta (): JsonObject {
    return this.#meta
  }

  /** False once the client cannot take it (it left, or let its buffer fill): the stream is ending. */
  send (method: string, params: JsonObject): boolean {
    return this.#stream.notify({ jsonrpc: '2.0', method: `notifications/events/${method}`, params: { ...params, _meta: this.#meta } })
  }

  cursor (): string | null {
    return this.place === null ? null : this.#feed.cursors.seal(this.place, this.subscribed.binding)
  }

  end (): void {
    this.#ended = true
  }

  /** Reads and sends what came since its place; a wake while it runs makes it run once more after. */
  wake (): void {
    if (this.#running) {
      this.#again = true
      return
    }
    this.#running = true
    this.#pump().catch((error: unknown) => {
      // A read that failed (the log is down): the client hears of it and the next wake or heartbeat tries again.
      this.ctx.request.log.error({ err: error, mcp: { event: this.subscribed.type.name } }, 'mocapi: an event stream could not read its events')
      this.send('error', { error: { code: -32603, message: 'UpstreamError: the events could not be read; the server tries again' } })
    }).finally(() => {
      this.#running = false
      if (this.#again && !this.#ended) {
        this.#again = false
        this.wake()
      }
    })
  }

  async #pump (): Promise<void> {
    for (;;) {
      const batch = await this.#feed.read(this.ctx, this.subscribed, this.place, PUMP_BATCH)
      if (this.#ended) return
      if (batch.truncated) {
        this.place = batch.place
        this.send('active', { cursor: this.cursor(), truncated: true })
      }
      for (const { occurrence, place } of batch.events) {
        if (!this.send('event', { ...occurrence, cursor: this.#feed.cursors.seal(place, this.subscribed.binding) })) return
      }
      this.place = batch.place
      if (!batch.hasMore) return
      await new Promise((resolve) => setImmediate(resolve))
    }
  }
}

/** The `events/stream` subscriptions this node holds, by type; woken when an occurrence is appended on any node. */
export class EventStreams {
  readonly #feed: EventFeed
  readonly #subscriptions: Subscriptions
  readonly #heartbeat: number
  readonly #byType = new Map<string, Set<Pump>>()
  #timer: NodeJS.Timeout | undefined
  #count = 0

  constructor (feed: EventFeed, subscriptions: Subscriptions, heartbeat: number) {
    this.#feed = feed
    this.#subscriptions = subscriptions
    this.#heartbeat = heartbeat
  }

  /** Holds the stream until the client leaves or the server closes: `active`, then each occurrence, and heartbeats. */
  async stream (ctx: McpContext): Promise<JsonObject> {
    const subscribed = await this.#feed.subscribed(ctx, 'push')
    const { place, truncated } = await this.#feed.start(subscribed, ctx.params.cursor, ctx.params.maxAgeMs)
    // Counted with the change streams, and bounded per caller the same way (429, 503).
    const { listener, ended } = this.#subscriptions.stream(ctx, { lists: new Set(), uris: new Set() }, () => ({}))
    const pump = new Pump(ctx, subscribed, place, this.#feed, () => { listener.end() })
    const name = subscribed.type.name
    let pumps = this.#byType.get(name)
    if (pumps === undefined) {
      pumps = new Set()
      this.#byType.set(name, pumps)
    }
    pumps.add(pump)
    this.#started()
    pump.send('active', { cursor: pump.cursor(), truncated })
    // An upstream type has no wake: it is read at each heartbeat, and now.
    pump.wake()
    await ended
    pump.end()
    pumps.delete(pump)
    if (pumps.size === 0) this.#byType.delete(name)
    this.#stopped()
    return { _meta: pump.meta }
  }

  /** An occurrence of `name` was appended somewhere. */
  wake (name: string): void {
    for (const pump of this.#byType.get(name) ?? []) pump.wake()
  }

  /** Before the server closes its streams: each hears why, so it reconnects elsewhere with its last cursor. */
  close (): void {
    for (const pumps of this.#byType.values()) {
      for (const pump of pumps) {
        pump.send('terminated', { error: SHUTDOWN })
      }
    }
  }

  /** A type removed ends its streams: each hears `terminated` with NotFound, as the extension asks. */
  removed (name: string): void {
    for (const pump of this.#byType.get(name) ?? []) {
      pump.send('terminated', { error: { code: EventsErrorCode.NotFound, message: `Event type ${name} was removed`, data: { kind: 'event' } } })
      pump.finish()
    }
  }

  #started (): void {
    this.#count++
    if (this.#timer !== undefined) return
    this.#timer = setInterval(() => { this.#beat() }, this.#heartbeat)
    this.#timer.unref()
  }

  #stopped (): void {
    this.#count--
    if (this.#count > 0) return
    clearInterval(this.#timer)
    this.#timer = undefined
  }

  /** The spec's heartbeat carries the cursor checked up to; the read after it catches what a lost wake missed. */
  #beat (): void {
    for (const pumps of this.#byType.values()) {
      for (const pump of pumps) {
        pump.send('heartbeat', { cursor: pump.cursor() })
        pump.wake()
      }
    }
  }
}
