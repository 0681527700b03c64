import { randomUUID } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import type { McpContext } from '../context.js'
import { internalError, invalidParams, messageOf } from '../errors.js'
import { describeErrors } from '../json-schema.js'
import { isPlainObject, type JsonObject } from '../protocol/wire.js'
import type { Scopes } from '../features/scopes.js'
import { bindingOf, type CursorPlace, type EventCursors } from './cursor.js'
import { eventNotFound, unsupported } from './errors.js'
import { comparePositions, type EventLog, type Position, type StoredOccurrence } from './log.js'
import type { DeliveryMode, EventType, EventTypes } from './types.js'

/** An occurrence as the wire carries it. */
export interface Occurrence extends JsonObject {
  eventId: string
  name: string
  timestamp: string
  data: JsonObject
}

/** A subscription as one request names it: its type, checked arguments, and what its cursors are bound to. */
export interface Subscribed {
  /** The request's logger. */
  readonly log: FastifyBaseLogger
  readonly type: EventType
  readonly args: JsonObject
  readonly binding: string
}

/** What one read found: the occurrences that match, the place after them, and whether more are waiting. */
export interface Batch {
  readonly events: Array<{ occurrence: Occurrence, place: CursorPlace }>
  readonly place: CursorPlace
  readonly hasMore: boolean
  readonly truncated: boolean
}

export interface FeedSettings {
  /** Occurrences a read returns when the client names no `maxEvents`, and the most it may name. */
  maxEvents: { fallback: number, most: number }
}

/** Occurrences of the log a read looks at, matching or not, before it answers with what it found: a bounded loop. */
const SCAN_LIMIT = 5000
const SCAN_BATCH = 500

export function toWire (name: string, stored: StoredOccurrence): Occurrence {
  const timestamp = new Date(stored.timestamp).toISOString()
  return { eventId: stored.eventId, name, timestamp, data: JSON.parse(stored.data) }
}

function timestampOf (value: unknown, name: string): string {
  if (value === undefined) return new Date().toISOString()
  const date = value instanceof Date ? value : new Date(value as number | string)
  if (Number.isNaN(date.getTime())) throw internalError(`The check of event ${name} returned a timestamp that is no date`, 200)
  return date.toISOString()
}

/** The occurrences a subscription may see: from the log, through `match`; or from the upstream, through `check`. */
export class EventFeed {
  readonly #types: EventTypes
  readonly #log: EventLog
  readonly #cursors: EventCursors
  readonly #scopes: Scopes
  readonly #settings: FeedSettings

  constructor (parts: {
    types: EventTypes, log: EventLog, cursors: EventCursors, scopes: Scopes, settings: FeedSettings
  }) {
    this.#types = parts.types
    this.#log = parts.log
    this.#cursors = parts.cursors
    this.#scopes = parts.scopes
    this.#settings = parts.settings
  }

  get cursors (): EventCursors {
    return this.#cursors
  }

  /** The type named, visible to the caller and serving `mode`, with the arguments checked against its schema. */
  async subscribed (ctx: McpContext, mode: DeliveryMode, principal = ctx.principal): Promise<Subscribed> {
    const name = ctx.params.name as string
    let type = this.#types.find(name, ctx)
    if (type instanceof Promise) type = await type
    if (type === undefined) throw eventNotFound(name)
    this.#scopes.check(type.scopes, ctx, 'The event type', name)
    if (!type.delivery.has(mode)) {
      throw unsupported(`Event type ${name} is not delivered by ${mode}; it serves ${[...type.delivery].join(', ')}`, { feature: 'delivery', value: mode })
    }
    // The dispatcher checked that arguments, when given, is an object.
    const args = (ctx.params.arguments ?? {}) as JsonObject
    if (!type.validateArguments(args)) throw invalidParams(`Invalid arguments: ${describeErrors('arguments', type.validateArguments.errors)}`)
    return { log: ctx.request.log, type, args, binding: bindingOf(principal, name, args) }
  }

  /** `maxEvents` as asked, bounded; the default when absent. */
  maxEvents (value: unknown): number {
    const { fallback, most } = this.#settings.maxEvents
    if (value === undefined) return fallback
    if (!Number.isInteger(value) || (value as number) < 1) throw invalidParams(`params.maxEvents must be a positive integer, got ${JSON.stringify(value)}`)
    return Math.min(value as number, most)
  }

  /** Where a subscription starts: after the client's cursor, or now; later when `maxAgeMs` says so. */
  async start (
    subscribed: Subscribed, cursor: unknown, maxAgeMs: unknown
  ): Promise<{ place: CursorPlace | null, truncated: boolean }> {
    if (cursor !== undefined && cursor !== null && typeof cursor !== 'string') throw invalidParams('params.cursor must be a string or null')
    if (maxAgeMs !== undefined && (!Number.isInteger(maxAgeMs) || (maxAgeMs as number) < 0)) {
      throw invalidParams(`params.maxAgeMs must be a non-negative integer, got ${JSON.stringify(maxAgeMs)}`)
    }
    if (subscribed.type.check !== undefined) {
      return { place: typeof cursor === 'string' ? this.#open(subscribed, cursor) : null, truncated: false }
    }
    if (typeof cursor !== 'string') return { place: { position: (await this.#log.read(subscribed.type.name, '0-0', 0)).head }, truncated: false }
    const place = this.#open(subscribed, cursor) as { position: Position }
    if (maxAgeMs === undefined) return { place, truncated: false }
    const floor = `${Math.max(0, Date.now() - (maxAgeMs as number))}-0`
    if (comparePositions(floor, place.position) <= 0) return { place, truncated: false }
    // Truncated only when the floor passes over an occurrence the cursor had not seen.
    const next = (await this.#log.read(subscribed.type.name, place.position, 1)).occurrences[0]
    const skipped = next !== undefined && comparePositions(next.position, floor) <= 0
    return { place: { position: floor }, truncated: skipped }
  }

  /** Opens a client's cursor; one refused is logged at warn with why, as a refused requestState is. */
  #open (subscribed: Subscribed, cursor: string): CursorPlace {
    try {
      return this.#cursors.open(cursor, subscribed.binding)
    } catch (error) {
      subscribed.log.warn({ mcp: { event: subscribed.type.name, reason: (error as Error).cause } }, 'mocapi refused an events cursor')
      throw error
    }
  }

  /** At most `max` occurrences after `place`; `null` (an upstream type's first read) asks the upstream to start. */
  async read (ctx: McpContext, subscribed: Subscribed, place: CursorPlace | null, max: number): Promise<Batch> {
    if (subscribed.type.check !== undefined) return await this.#checkUpstream(ctx, subscribed, place, max)
    let after = (place as { position: Position }).position
    const { type, args } = subscribed
    const events: Batch['events'] = []
    let truncated = false
    let scanned = 0
    let reachedHead = false
    let matchFailed = false
    while (events.length < max && scanned < SCAN_LIMIT) {
      const read = await this.#log.read(type.name, after, Math.min(SCAN_BATCH, SCAN_LIMIT - scanned))
      if (comparePositions(read.floor, after) > 0) {
        truncated = true
        after = read.floor
        continue
      }
      // What the log hides (past its age, not yet dropped) is behind its floor: nothing to read means the head.
      if (read.occurrences.length === 0) {
        reachedHead = true
        break
      }
      for (const stored of read.occurrences) {
        if (events.length >= max) break
        scanned++
        after = stored.position
        const occurrence = toWire(type.name, stored)
        let matched = true
        if (type.match !== undefined) {
          try {
            matched = type.match(args, occurrence.data) === true
          } catch (error) {
            matched = false
            if (!matchFailed) ctx.request.log.warn({ err: error, mcp: { event: type.name } }, 'mocapi: an event type\'s match threw; the occurrence is left out')
            matchFailed = true
          }
        }
        if (matched) events.push({ occurrence, place: { position: after } })
      }
      if (comparePositions(after, read.head) >= 0) {
        reachedHead = true
        break
      }
    }
    return { events, place: { position: after }, hasMore: !reachedHead, truncated }
  }

  async #checkUpstream (
    ctx: McpContext, subscribed: Subscribed, place: CursorPlace | null, max: number
  ): Promise<Batch> {
    const { type, args } = subscribed
    const upstream = place === null ? null : (place as { upstream: string }).upstream
    let answer
    try {
      answer = await (type.check as NonNullable<EventType['check']>)(args, upstream, ctx)
    } catch (error) {
      ctx.request.log.error({ err: error, mcp: { event: type.name } }, 'mocapi: an event type\'s check threw')
      throw internalError(`UpstreamError: ${messageOf(error)}`, 200)
    }
    if (!isPlainObject(answer) || !Array.isArray(answer.events) || typeof answer.cursor !== 'string') {
      throw internalError(`The check of event ${type.name} must return { events: [], cursor: string }`, 200)
    }
    if (answer.events.length > Math.max(max, this.#settings.maxEvents.most)) {
      throw internalError(`The check of event ${type.name} returned ${answer.events.length} events, more than ${this.#settings.maxEvents.most}`, 200)
    }
    if (!this.#cursors.fits(answer.cursor)) throw internalError(`The check of event ${type.name} returned a cursor too long to seal`, 200)
    const next: CursorPlace = { upstream: answer.cursor }
    const events = answer.events.map((event): Batch['events'][number] => {
      if (!isPlainObject(event)) throw internalError(`The check of event ${type.name} returned an event that is not an object`, 200)
      if (!type.validatePayload(event.data)) {
        throw internalError(`The check of event ${type.name} returned data that does not match its payloadSchema: ` +
          describeErrors('data', type.validatePayload.errors), 200)
      }
      const eventId = typeof event.eventId === 'string' ? event.eventId : randomUUID()
      const timestamp = timestampOf(event.timestamp, type.name)
      return { occurrence: { eventId, name: type.name, timestamp, data: event.data as JsonObject }, place: next }
    })
    return { events, place: next, hasMore: false, truncated: false }
  }
}
