import type { FastifyBaseLogger } from 'fastify'
import type { Scopes } from '../features/scopes.js'
import type { Subscriptions } from '../features/subscriptions.js'
import type { SchemaCompiler } from '../json-schema.js'
import type { KeyRing } from '../seal/seal.js'
import { EventCursors } from './cursor.js'
import { Events } from './events.js'
import { EventFeed } from './feed.js'
import { CallbackGuard } from './guard.js'
import { MemoryEventLog, type EventLog } from './log.js'
import { EventStreams } from './stream.js'
import { EventTypes } from './types.js'
import { Webhooks } from './webhooks.js'
import { DeliveryWorker } from './worker.js'

/** The `events` options as resolved at registration. */
export interface EventSettings {
  log: EventLog | undefined
  heartbeat: number
  pollInterval: number
  maxEvents: number
  maxPollEvents: number
  maxPayloadBytes: number
  subscriptionsPerPrincipal: number
  allow: string[]
  retryDelays: number[]
  timeout: number
  verificationsPerMinute: number
}

/** The TTL a webhook subscription is granted: an hour unless asked, from 5 minutes to a day. */
const WEBHOOK_TTL = { fallback: 3_600_000, least: 300_000, most: 86_400_000 }

/** The extension's parts, wired: types, the log (memory unless given), poll and push, webhooks and their worker. */
export function assembleEvents (parts: {
  settings: EventSettings
  ring: KeyRing
  compiler: SchemaCompiler
  scopes: Scopes
  subscriptions: Subscriptions
  /** Tells every node that an occurrence of a type was appended. */
  publish: (name: string) => void
  logger: FastifyBaseLogger
}) {
  const { settings, ring, scopes, logger } = parts
  const eventTypes = new EventTypes(parts.compiler)
  const eventLog: EventLog = settings.log ?? new MemoryEventLog()
  const cursors = new EventCursors(ring)
  const maxEvents = { fallback: settings.maxEvents, most: settings.maxPollEvents }
  const feed = new EventFeed({ types: eventTypes, log: eventLog, cursors, scopes, settings: { maxEvents } })
  const streams = new EventStreams(feed, parts.subscriptions, settings.heartbeat)
  eventTypes.observe((type, added) => { if (!added) streams.removed(type.name) })
  const events = new Events({
    types: eventTypes,
    log: eventLog,
    feed,
    streams,
    settings: { interval: settings.pollInterval, maxPayloadBytes: settings.maxPayloadBytes },
    announce: parts.publish,
  })
  const guard = new CallbackGuard(settings.allow)
  const webhookSettings = { ...settings, ttl: WEBHOOK_TTL }
  const webhooks = new Webhooks({ log: eventLog, feed, guard, ring, settings: webhookSettings, logger })
  // The worker looks at the queue at least as often as the shortest retry asks, and at least once a second.
  const tick = Math.min(1000, ...settings.retryDelays)
  const worker = new DeliveryWorker({
    log: eventLog,
    types: eventTypes,
    webhooks,
    cursors,
    logger,
    settings: { retryDelays: settings.retryDelays, tick },
  })
  return { eventTypes, events, eventLog, worker, webhooks }
}
