import { complete } from './features/completions.js'
import { discover, type Registered } from './features/discover.js'
import { paginate } from './features/pagination.js'
import type { Prompts } from './features/prompts.js'
import type { Resources } from './features/resources.js'
import type { Subscriptions } from './features/subscriptions.js'
import type { Tools } from './features/tools.js'
import { invalidParams } from './errors.js'
import type { ReplayEngine } from './mrtr/replay.js'
import type { ResolvedOptions } from './options.js'
import { Dispatcher } from './protocol/dispatch.js'
import { isPlainObject, type JsonObject } from './protocol/wire.js'

export interface Features {
  tools: Tools
  prompts: Prompts
  resources: Resources
  subscriptions: Subscriptions
  engine: ReplayEngine
}

/** The method table of MCP 2026-07-28 as mocapi serves it. */
export function methods (options: ResolvedOptions, features: Features): Dispatcher {
  const { tools, prompts, resources, subscriptions, engine } = features
  const registered: Registered = {
    get tools () { return tools.size },
    get prompts () { return prompts.size },
    get resources () { return resources.size },
    get templates () { return resources.templateCount },
  }
  const lists = options.cache.lists
  // A list that varies by caller (some item has canAccess) is never cached as public.
  const page = async (key: string, items: Promise<readonly unknown[]>, cursor: unknown, varies: boolean): Promise<JsonObject> => {
    const { page, nextCursor } = paginate(await items, cursor, options.pageSize)
    const result: JsonObject = { [key]: page, ttlMs: lists.ttlMs, cacheScope: varies ? 'private' : lists.cacheScope }
    if (nextCursor !== undefined) result.nextCursor = nextCursor
    return result
  }
  const hasTools = () => tools.size > 0
  const hasPrompts = () => prompts.size > 0
  const hasResources = () => resources.size > 0

  const dispatcher = new Dispatcher()
  dispatcher.define('server/discover', { params: {}, run: async () => discover(options, registered) })

  dispatcher.define('tools/list', { params: { cursor: 'string?' }, enabled: hasTools, run: (ctx) => page('tools', tools.visible(ctx), ctx.params.cursor, tools.varies) })
  dispatcher.define('tools/call', {
    params: { name: 'string', arguments: 'object?' }, nameField: 'name', interactive: true, enabled: hasTools, run: (ctx) => tools.call(ctx, engine),
  })

  dispatcher.define('prompts/list', { params: { cursor: 'string?' }, enabled: hasPrompts, run: (ctx) => page('prompts', prompts.visible(ctx), ctx.params.cursor, prompts.varies) })
  dispatcher.define('prompts/get', {
    params: { name: 'string', arguments: 'object?' }, nameField: 'name', interactive: true, enabled: hasPrompts, run: (ctx) => prompts.get(ctx, engine),
  })

  dispatcher.define('resources/list', { params: { cursor: 'string?' }, enabled: hasResources, run: (ctx) => page('resources', resources.visible(ctx), ctx.params.cursor, resources.varies) })
  dispatcher.define('resources/templates/list', {
    params: { cursor: 'string?' }, enabled: hasResources, run: (ctx) => page('resourceTemplates', resources.visibleTemplates(ctx), ctx.params.cursor, resources.varies),
  })
  dispatcher.define('resources/read', {
    params: { uri: 'string' }, nameField: 'uri', interactive: true, enabled: hasResources, run: (ctx) => resources.read(ctx, engine, options.cache.resources),
  })

  dispatcher.define('completion/complete', {
    params: { ref: 'object', argument: 'object', context: 'object?' },
    enabled: () => registered.prompts > 0 || registered.templates > 0,
    run: async (ctx) => {
      const ref = ctx.params.ref as JsonObject
      const argument = ctx.params.argument as JsonObject
      if (typeof argument.name !== 'string' || typeof argument.value !== 'string') {
        throw invalidParams('params.argument must be { name: string, value: string }')
      }
      const context = ctx.params.context as JsonObject | undefined
      const resolved = context?.arguments
      if (resolved !== undefined && (!isPlainObject(resolved) || !Object.values(resolved).every((v) => typeof v === 'string'))) {
        throw invalidParams('params.context.arguments must be an object of strings')
      }
      let completer
      if (ref.type === 'ref/prompt' && typeof ref.name === 'string') completer = await prompts.completer(ref.name, argument.name, ctx)
      else if (ref.type === 'ref/resource' && typeof ref.uri === 'string') completer = await resources.completer(ref.uri, argument.name, ctx)
      else throw invalidParams('params.ref must be { type: "ref/prompt", name } or { type: "ref/resource", uri }')
      return complete(completer, argument.value, { arguments: (resolved ?? {}) as Record<string, string> })
    },
  })

  dispatcher.define('subscriptions/listen', { params: { notifications: 'object' }, run: (ctx) => subscriptions.listen(ctx) })
  return dispatcher
}
