import type { McpContext } from '../context.js'
import type { ListSettings } from '../features/methods.js'
import { paginate } from '../features/pagination.js'
import type { Dispatcher } from '../protocol/dispatch.js'
import type { JsonObject } from '../protocol/wire.js'
import type { Events } from './events.js'
import type { EventTypes } from './types.js'
import type { Webhooks } from './webhooks.js'

export interface EventsFeatures {
  events: Events
  eventTypes: EventTypes
  webhooks: Webhooks
}

/**
 * The events extension's methods, the same in both eras (deployed clients call them over 2025-11-25 sessions too),
 * served whether or not the client declares the extension, and without an `Mcp-Name` header (none sends one).
 */
export function defineEvents (dispatcher: Dispatcher<McpContext>, features: EventsFeatures, lists: ListSettings): void {
  const { events, eventTypes, webhooks } = features
  const served = () => eventTypes.size > 0
  dispatcher.define('events/list', {
    params: { cursor: 'string?' },
    enabled: served,
    run: async (ctx) => {
      const { page, nextCursor } = paginate(await eventTypes.visible(ctx), ctx.params.cursor, lists.pageSize)
      const result: JsonObject = { events: page, ttlMs: lists.cache.ttlMs, cacheScope: eventTypes.varies ? 'private' : lists.cache.cacheScope }
      if (nextCursor !== undefined) result.nextCursor = nextCursor
      return result
    },
  })
  const subscription = { name: 'string', arguments: 'object?', cursor: 'any?', maxAgeMs: 'integer?' } as const
  dispatcher.define('events/poll', { params: { ...subscription, maxEvents: 'integer?' }, enabled: served, run: (ctx) => events.poll(ctx) })
  dispatcher.define('events/stream', { params: subscription, enabled: served, run: (ctx) => events.stream(ctx) })
  dispatcher.define('events/subscribe', {
    params: { ...subscription, delivery: 'object', ttlMs: 'any?' },
    enabled: served,
    run: (ctx) => webhooks.subscribe(ctx),
  })
  dispatcher.define('events/unsubscribe', {
    params: { name: 'string', arguments: 'object?', delivery: 'object' },
    enabled: served,
    run: (ctx) => webhooks.unsubscribe(ctx),
  })
}
