import type { CacheHint } from '../check.js'
import type { McpContext } from '../context.js'
import { invalidParams } from '../errors.js'
import type { Dispatcher } from '../protocol/dispatch.js'
import { isPlainObject, type JsonObject } from '../protocol/wire.js'
import { complete } from './completions.js'
import type { Registered } from './discover.js'
import { paginate } from './pagination.js'
import type { Prompts } from './prompts.js'
import type { Resources } from './resources.js'
import type { Handlers } from './handlers.js'
import type { Tools } from './tools.js'
import type { Skills } from './skills.js'
import type { Views } from './views.js'

export interface SharedFeatures {
  /** What both eras' `tools/call` runs: the tasks layer, which serves a client without the extension plainly. */
  tasks: { call (ctx: McpContext): Promise<object>, readonly capable: number }
  tools: Tools
  prompts: Prompts
  resources: Resources
  views: Views
  skills: Skills
  handlers: Handlers
  /** The registered event types (the events extension serves its own methods). */
  eventTypes: { readonly size: number }
}

export interface ListSettings {
  cache: Required<CacheHint>
  pageSize: number
}

/** What is registered now, read through: made once per registration for discovery and every method table. */
export function registered (features: SharedFeatures): Registered {
  const { tools, prompts, resources, views, skills, tasks, eventTypes } = features
  return {
    get tools () { return tools.size },
    get prompts () { return prompts.size },
    get resources () { return resources.size },
    get templates () { return resources.templateCount },
    get taskTools () { return tasks.capable },
    get views () { return views.size },
    get skills () { return skills.size },
    get events () { return eventTypes.size },
  }
}

async function completion (ctx: McpContext, features: SharedFeatures): Promise<JsonObject> {
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
  const value = argument.value
  return await features.handlers.direct(ctx, `completer of ${argument.name}`,
    () => complete(completer, value, { arguments: (resolved ?? {}) as Record<string, string> }))
}

/** The methods both eras share. */
export function defineShared (
  dispatcher: Dispatcher<McpContext>,
  lists: ListSettings,
  features: SharedFeatures,
  counts: Registered
): void {
  const { tools, prompts, resources, skills, tasks } = features
  // A list that varies by caller (some item has canAccess) is never cached as public.
  const page = async (key: string, items: Promise<readonly unknown[]>, cursor: unknown, varies: boolean) => {
    const { page, nextCursor } = paginate(await items, cursor, lists.pageSize)
    const result: JsonObject = { [key]: page, ttlMs: lists.cache.ttlMs, cacheScope: varies ? 'private' : lists.cache.cacheScope }
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
    run: (ctx) => tasks.call(ctx),
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

  const hasSkills = () => skills.size > 0
  dispatcher.define('skills/list', {
    params: { cursor: 'string?' },
    enabled: hasSkills,
    run: (ctx) => page('skills', skills.visible(ctx), ctx.params.cursor, skills.varies),
  })
  dispatcher.define('skills/get', {
    params: { uri: 'string' },
    enabled: hasSkills,
    run: (ctx) => skills.get(ctx),
  })
  dispatcher.define('resources/directory/read', {
    params: { uri: 'string', cursor: 'string?' },
    enabled: hasSkills,
    run: (ctx) => skills.directory(ctx),
  })

  dispatcher.define('completion/complete', {
    params: { ref: 'object', argument: 'object', context: 'object?' },
    enabled: () => counts.prompts > 0 || counts.templates > 0,
    run: (ctx) => completion(ctx, features),
  })
}
