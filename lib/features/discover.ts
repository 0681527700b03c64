import type { ResolvedOptions } from '../options.js'
import type { JsonObject } from '../protocol/wire.js'
import { TASKS_EXTENSION } from '../tasks/tasks.js'
import { UI_EXTENSION, VIEW_MIME_TYPE } from './views.js'

export interface Registered {
  readonly tools: number
  readonly prompts: number
  readonly resources: number
  readonly templates: number
  /** Task-capable tools. */
  readonly taskTools: number
  /** Views (the MCP Apps extension). */
  readonly views: number
}

/** Each extension mocapi serves, whether 2025-era sessions can use it, and its settings while something needs it. */
const EXTENSIONS: ReadonlyArray<[string, boolean, (registered: Registered) => JsonObject | undefined]> = [
  // Tasks ride on 2026-07-28 requests' _meta: a 2025-era session never gets one.
  [TASKS_EXTENSION, false, (registered) => registered.taskTools > 0 ? {} : undefined],
  [UI_EXTENSION, true, (registered) => registered.views > 0 ? { mimeTypes: [VIEW_MIME_TYPE] } : undefined],
]

/** What the server advertises to a client of `era`, derived from what is registered now. */
export function capabilities (registered: Registered, era: 'modern' | 'legacy'): JsonObject {
  // ctx.log can send notifications/message whatever is registered.
  const caps: JsonObject = { logging: {} }
  if (registered.tools > 0) caps.tools = { listChanged: true }
  if (registered.prompts > 0) caps.prompts = { listChanged: true }
  if (registered.resources > 0) caps.resources = { listChanged: true, subscribe: true }
  if (registered.prompts > 0 || registered.templates > 0) caps.completions = {}
  const extensions: JsonObject = {}
  for (const [name, legacy, settings] of EXTENSIONS) {
    if (era === 'legacy' && !legacy) continue
    const declared = settings(registered)
    if (declared !== undefined) extensions[name] = declared
  }
  if (Object.keys(extensions).length > 0) caps.extensions = extensions
  return caps
}

export function discover (options: ResolvedOptions, registered: Registered): JsonObject {
  const result: JsonObject = {
    supportedVersions: options.supportedVersions,
    capabilities: capabilities(registered, 'modern'),
    ttlMs: options.cache.discover.ttlMs,
    cacheScope: options.cache.discover.cacheScope,
  }
  if (options.instructions !== undefined) result.instructions = options.instructions
  return result
}
