import { randomUUID } from 'node:crypto'
import type { McpContext } from '../context.js'
import { InvalidArgumentError } from '../errors.js'
import { describeErrors } from '../json-schema.js'
import { isPlainObject, type JsonObject } from '../protocol/wire.js'
import type { EventFeed } from './feed.js'
import type { EventLog } from './log.js'
import type { EventStreams } from './stream.js'
import type { EventTypes } from './types.js'

/** Options of `app.mcp.emit`. */
export interface EmitOptions {
  /** The occurrence's stable id (best the upstream's own, as `evt_…`); the same id emitted twice is kept once. */
  eventId?: string | undefined
}

export interface PollSettings {
  /** ms a client is told to wait before its next poll (`nextPollMs`) when nothing more is waiting. */
  interval: number
  /** UTF-8 bytes an occurrence's payload JSON may take. */
  maxPayloadBytes: number
}

const MAX_EVENT_ID_LENGTH = 256

/** What the events extension serves: emitting, poll and push; webhooks sit beside it. */
export class Events {
  readonly #types: EventTypes
  readonly #log: EventLog
  readonly #feed: EventFeed
  readonly #streams: EventStreams
  readonly #settings: PollSettings
  readonly #announce: (name: string) => void

  constructor (parts: {
    types: EventTypes
    log: EventLog
    feed: EventFeed
    streams: EventStreams
    settings: PollSettings
    announce: (name: string) => void
  }) {
    this.#types = parts.types
    this.#log = parts.log
    this.#feed = parts.feed
    this.#streams = parts.streams
    this.#settings = parts.settings
    this.#announce = parts.announce
  }

  /** Checks the payload, appends it to the log and tells every node; resolves with its `eventId`. */
  async emit (name: unknown, data: unknown, options: EmitOptions = {}): Promise<string> {
    const type = typeof name === 'string' ? this.#types.entry(name) : undefined
    if (type === undefined) throw new InvalidArgumentError(`mocapi: emit: no event type ${JSON.stringify(name)} is registered (app.mcp.event)`)
    if (type.check !== undefined) throw new InvalidArgumentError(`mocapi: emit: event type ${type.name} has check, so its upstream keeps its occurrences`)
    if (!isPlainObject(options)) throw new InvalidArgumentError('mocapi: emit: options must be an object')
    const eventId = options.eventId ?? randomUUID()
    if (typeof eventId !== 'string' || eventId.length === 0 || eventId.length > MAX_EVENT_ID_LENGTH) {
      throw new InvalidArgumentError(`mocapi: emit: eventId must be a string of 1 to ${MAX_EVENT_ID_LENGTH} characters, got ${JSON.stringify(eventId)?.slice(0, 100)}`)
    }
    let text
    try {
      text = JSON.stringify(data)
    } catch (error) {
      throw new InvalidArgumentError(`mocapi: emit: the data of ${type.name} cannot be written as JSON: ${(error as Error).message}`)
    }
    if (!isPlainObject(data) || !type.validatePayload(JSON.parse(text))) {
      const why = isPlainObject(data) ? describeErrors('data', type.validatePayload.errors) : 'data must be an object'
      throw new InvalidArgumentError(`mocapi: emit: the data of ${type.name} does not match its payloadSchema: ${why}`)
    }
    const bytes = Buffer.byteLength(text)
    if (bytes > this.#settings.maxPayloadBytes) {
      throw new InvalidArgumentError(`mocapi: emit: the data of ${type.name} is ${bytes} bytes of JSON, more than the ${this.#settings.maxPayloadBytes} ` +
        'an occurrence may take (events.maxPayloadBytes): send the triage fields and let a tool fetch the rest')
    }
    const { stored } = await this.#log.append(type.name, { eventId, timestamp: Date.now(), data: text })
    if (stored) this.#announce(type.name)
    return eventId
  }

  async poll (ctx: McpContext): Promise<JsonObject> {
    const subscribed = await this.#feed.subscribed(ctx, 'poll')
    const max = this.#feed.maxEvents(ctx.params.maxEvents)
    const start = await this.#feed.start(subscribed, ctx.params.cursor, ctx.params.maxAgeMs)
    const cursors = this.#feed.cursors
    // A log type's first poll starts now and returns nothing; an upstream type's asks its check where now is.
    if (start.place !== null && ctx.params.cursor == null) {
      const cursor = cursors.seal(start.place, subscribed.binding)
      return { events: [], cursor, hasMore: false, truncated: false, nextPollMs: this.#settings.interval }
    }
    const batch = await this.#feed.read(ctx, subscribed, start.place, max)
    return {
      events: batch.events.map((event) => event.occurrence),
      cursor: cursors.seal(batch.place, subscribed.binding),
      hasMore: batch.hasMore,
      truncated: start.truncated || batch.truncated,
      nextPollMs: batch.hasMore ? 0 : this.#settings.interval,
    }
  }

  stream (ctx: McpContext): Promise<JsonObject> {
    return this.#streams.stream(ctx)
  }

  /** An occurrence of `name` was appended on some node. */
  woken (name: string): void {
    this.#streams.wake(name)
  }

  close (): void {
    this.#streams.close()
  }
}
