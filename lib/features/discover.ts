import type { ResolvedOptions } from '../options.js'
import { SUPPORTED_VERSIONS, type JsonObject } from '../protocol/wire.js'

/** What the server advertises, derived from what is registered now. */
export function capabilities (registered: { tools: number }): JsonObject {
  const caps: JsonObject = {}
  if (registered.tools > 0) caps.tools = {}
  return caps
}

/** The `server/discover` result. */
export function discover (options: ResolvedOptions, registered: { tools: number }): JsonObject {
  const result: JsonObject = {
    supportedVersions: SUPPORTED_VERSIONS,
    capabilities: capabilities(registered),
    ttlMs: options.cache.discover.ttlMs,
    cacheScope: options.cache.discover.cacheScope,
  }
  if (options.instructions !== undefined) result.instructions = options.instructions
  return result
}
