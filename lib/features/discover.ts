import type { CacheHint } from '../check.js'
import { EVENTS_EXTENSION, SKILLS_EXTENSION, TASKS_EXTENSION, UI_EXTENSION, VIEW_MIME_TYPE } from '../protocol/extensions.js'
import type { JsonObject } from '../protocol/wire.js'

export interface DiscoverSettings {
  supportedVersions: readonly string[]
  instructions: string | undefined
  cache: Required<CacheHint>
}

export interface Registered {
  readonly tools: number
  readonly prompts: number
  readonly resources: number
  readonly templates: number
  readonly taskTools: number
  readonly views: number
  readonly skills: number
  readonly events: number
}

/** Each extension mocapi serves, whether 2025-era sessions can use it, and its settings while something needs it. */
const EXTENSIONS: ReadonlyArray<[string, boolean, (registered: Registered) => JsonObject | undefined]> = [
  // Tasks ride on 2026-07-28 requests' _meta: a 2025-era session never gets one.
  [TASKS_EXTENSION, false, (registered) => registered.taskTools > 0 ? {} : undefined],
  [UI_EXTENSION, true, (registered) => registered.views > 0 ? { mimeTypes: [VIEW_MIME_TYPE] } : undefined],
  // Skill files are resources, so `resources` is declared with it (their files count as resources).
  [SKILLS_EXTENSION, true, (registered) => registered.skills > 0 ? { directoryRead: true } : undefined],
  // Served to 2025-era sessions too: deployed clients call events/* over them.
  [EVENTS_EXTENSION, true, (registered) => registered.events > 0 ? {} : undefined],
]

export function capabilities (registered: Registered, era: 'modern' | 'legacy'): JsonObject {
  // ctx.log can send notifications/message whatever is registered.
  const caps: JsonObject = { logging: {} }
  if (registered.tools > 0) caps.tools = { listChanged: true }
  if (registered.prompts > 0) caps.prompts = { listChanged: true }
  if (registered.resources > 0) caps.resources = { listChanged: true, subscribe: true }
  if (registered.prompts > 0 || registered.templates > 0) caps.completions = {}
  // The key deployed clients read (ChatGPT, the AI SDK) beside the extension's: they refuse events/* without it.
  if (registered.events > 0) caps.events = {}
  const extensions: JsonObject = {}
  for (const [name, legacy, settings] of EXTENSIONS) {
    if (era === 'legacy' && !legacy) continue
    const declared = settings(registered)
    if (declared !== undefined) extensions[name] = declared
  }
  if (Object.keys(extensions).length > 0) caps.extensions = extensions
  return caps
}

export function discover (settings: DiscoverSettings, registered: Registered): JsonObject {
  const result: JsonObject = {
    supportedVersions: settings.supportedVersions,
    capabilities: capabilities(registered, 'modern'),
    ttlMs: settings.cache.ttlMs,
    cacheScope: settings.cache.cacheScope,
  }
  if (settings.instructions !== undefined) result.instructions = settings.instructions
  return result
}
