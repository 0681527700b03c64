/** The method tables mocapi serves, over the features of one registration. */
import type { McpContext } from '../context.js'
import { complete } from '../features/completions.js'
import { discover, type Registered } from '../features/discover.js'
import type { Failures } from '../features/failures.js'
import { paginate } from '../features/pagination.js'
import type { Prompts } from '../features/prompts.js'
import type { Resources } from '../features/resources.js'
import type { Subscriptions } from '../features/subscriptions.js'
import type { Tools } from '../features/tools.js'
import type { Views } from '../features/views.js'
import type { Tasks } from '../tasks/tasks.js'
import { McpError, internalError, invalidParams } from '../errors.js'
import type { ResolvedOptions } from '../options.js'
import { Dispatcher } from '../protocol/dispatch.js'
import { isPlainObject, type JsonObject } from '../protocol/wire.js'

export interface Features {
  tools: Tools
  prompts: Prompts
  resources: Resources
  subscriptions: Subscriptions
  failures: Failures
  tasks: Tasks
  views: Views
}

/** Getters, so the one object stays current as items come and go. */
export function registered (features: Features): Registered {
  const { tools, prompts, resources, views } = features
  return {
    get tools () { return tools.size },
    get prompts () { return prompts.size },
    get resources () { return resources.size },
    get templates () { return resources.templateCount },
    get taskTools () { return tools.taskCapable },
    get views () { return views.size },
  }
}

/** `completion/complete`: the completer of a prompt argument or a template variable, run on the value typed so far. */
async function completion (ctx: McpContext, features: Features): Promise<JsonObject> {
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
  if (ref.type === 'ref/prompt' && typeof ref.name === 'string') completer = await features.prompts.completer(ref.name, argument.name, ctx)
  else if (ref.type === 'ref/resource' && typeof ref.uri === 'string') completer = await features.resources.completer(ref.uri, argument.name, ctx)
  else throw invalidParams('params.ref must be { type: "ref/prompt", name } or { type: "ref/resource", uri }')
  try {
    return await complete(completer, argument.value, { arguments: (resolved ?? {}) as Record<string, string> })
  } catch (error) {
    if (error instanceof McpError) throw error
    throw internalError(features.failures.handlerFailed(ctx, `completer of ${argument.name}`, error), 200)
  }
}

/** The methods both eras share: tools, prompts, resources, completions. */
export function defineShared (dispatcher: Dispatcher, options: ResolvedOptions, features: Features): void {
  const { tools, prompts, resources } = features
  const counts = registered(features)
  const lists = options.cache.lists
  // A list that varies by caller (some item has canAccess; for tools, some is app-only) is never cached as public.
  const page = async (
    key: string,
    items: Promise<readonly unknown[]>,
    cursor: unknown,
    varies: boolean
  ): Promise<JsonObject> => {
    const { page, nextCursor } = paginate(await items, cursor, options.pageSize)
    const result: JsonObject = { [key]: page, ttlMs: lists.ttlMs, cacheScope: varies ? 'private' : lists.cacheScope }
    if (nextCursor !== undefined) result.nextCursor = nextCursor
    return result
  }
  const hasTools = () => tools.size > 0
  const hasPrompts = () => prompts.size > 0
  const hasResources = () => resources.size > 0

  dispatcher.define('tools/list', {
    params: { cursor: 'string?' },
    enabled: hasTools,
    run: (ctx) => page('tools', tools.visible(ctx), ctx.params.cursor, tools.varies),
  })
  dispatcher.define('tools/call', {
    // `task` is the 2025-11-25 tasks hint: ignored, as the server alone decides what becomes a task.
    params: { name: 'string', arguments: 'object?', task: 'object?' },
    interactive: true,
    enabled: hasTools,
    run: (ctx) => tools.call(ctx),
  })

  dispatcher.define('prompts/list', {
    params: { cursor: 'string?' },
    enabled: hasPrompts,
    run: (ctx) => page('prompts', prompts.visible(ctx), ctx.params.cursor, prompts.varies),
  })
  dispatcher.define('prompts/get', {
    params: { name: 'string', arguments: 'object?' },
    interactive: true,
    enabled: hasPrompts,
    run: (ctx) => prompts.get(ctx),
  })

  dispatcher.define('resources/list', {
    params: { cursor: 'string?' },
    enabled: hasResources,
    run: (ctx) => page('resources', resources.visible(ctx), ctx.params.cursor, resources.varies),
  })
  dispatcher.define('resources/templates/list', {
    params: { cursor: 'string?' },
    enabled: hasResources,
    run: (ctx) => page('resourceTemplates', resources.visibleTemplates(ctx), ctx.params.cursor, resources.varies),
  })
  dispatcher.define('resources/read', {
    params: { uri: 'string' },
    interactive: true,
    enabled: hasResources,
    run: (ctx) => resources.read(ctx),
  })

  dispatcher.define('completion/complete', {
    params: { ref: 'object', argument: 'object', context: 'object?' },
    enabled: () => counts.prompts > 0 || counts.templates > 0,
    run: (ctx) => completion(ctx, features),
  })
}

/** The method table of MCP 2026-07-28. */
export function modernMethods (options: ResolvedOptions, features: Features): Dispatcher {
  const dispatcher = new Dispatcher()
  const counts = registered(features)
  dispatcher.define('server/discover', { params: {}, run: async () => discover(options, counts) })
  defineShared(dispatcher, options, features)
  dispatcher.define('subscriptions/listen', { params: { notifications: 'object' }, run: (ctx) => features.subscriptions.listen(ctx) })
  const { tasks, tools } = features
  const hasTasks = () => tools.servesTasks
  dispatcher.define('tasks/get', { params: { taskId: 'string' }, enabled: hasTasks, run: (ctx) => tasks.get(ctx) })
  dispatcher.define('tasks/update', {
    params: { taskId: 'string', inputResponses: 'object' },
    enabled: hasTasks,
    run: (ctx) => tasks.update(ctx),
  })
  dispatcher.define('tasks/cancel', { params: { taskId: 'string' }, enabled: hasTasks, run: (ctx) => tasks.cancel(ctx) })
  return dispatcher
}
