import type { McpContext } from '../context.js'
import { invalidParams } from '../errors.js'
import { capabilities, type Registered } from '../features/discover.js'
import { defineShared, type ListSettings, type SharedFeatures } from '../features/methods.js'
import { checkUriLength } from '../features/resources.js'
import { Dispatcher } from '../protocol/dispatch.js'
import { defineEvents, type EventsFeatures } from '../events/methods.js'
import { LOGGING_LEVELS, type Implementation, type JsonObject, type LoggingLevel } from '../protocol/wire.js'
import { kCallState } from '../symbols.js'
import type { SessionHub } from './hub.js'

interface LegacySettings {
  lists: ListSettings
  serverInfo: Implementation
  instructions: string | undefined
  uriLength: number
  subscriptionUris: number
}

/** What a session sets after `initialize` goes to the hub, since its sealed id cannot change. */
export function legacyMethods (
  settings: LegacySettings,
  features: SharedFeatures & EventsFeatures,
  counts: Registered,
  hub: SessionHub
): Dispatcher<McpContext> {
  const dispatcher = new Dispatcher<McpContext>()
  const session = (ctx: McpContext) => ctx[kCallState].client.session
  dispatcher.define('initialize', {
    params: { protocolVersion: 'string', capabilities: 'object', clientInfo: 'object' },
    run: async (ctx) => {
      const result: JsonObject = {
        protocolVersion: ctx.protocolVersion,
        capabilities: capabilities(counts, 'legacy'),
        serverInfo: settings.serverInfo
      }
      if (settings.instructions !== undefined) result.instructions = settings.instructions
      return result
    },
  })
  dispatcher.define('ping', { params: {}, run: async () => ({}) })
  dispatcher.define('logging/setLevel', {
    params: { level: 'string' },
    run: async (ctx) => {
      const level = ctx.params.level as LoggingLevel
      if (!LOGGING_LEVELS.includes(level)) throw invalidParams(`params.level must be one of ${LOGGING_LEVELS.join(', ')}`)
      const id = session(ctx)
      if (id !== undefined) hub.setLevel(id, level)
      return {}
    },
  })
  for (const [method, on] of [['resources/subscribe', true], ['resources/unsubscribe', false]] as const) {
    dispatcher.define(method, {
      params: { uri: 'string' },
      enabled: () => features.resources.size > 0,
      run: async (ctx) => {
        const uri = ctx.params.uri as string
        // Bounded as resources/read is: each URI is kept per open stream and sent to every node.
        checkUriLength(uri, settings.uriLength)
        const id = session(ctx)
        if (id !== undefined && !hub.subscribe(id, uri, on)) {
          throw invalidParams(`This session's stream holds ${settings.subscriptionUris} subscriptions, the most it takes (limits.subscriptionUris); ` +
            'unsubscribe from one first')
        }
        return {}
      },
    })
  }
  defineShared(dispatcher, settings.lists, features, counts)
  defineEvents(dispatcher, features, settings.lists)
  return dispatcher
}
