/**
 * Results and errors in the shapes of the 2025 revisions: no `resultType`, no caching hints, no
 * 2026 `_meta` keys, object-only structured content, and the error codes of that era.
 */
import { ErrorCode, McpError } from '../errors.js'
import { META_SERVER_INFO, isPlainObject, type JsonObject } from '../protocol/wire.js'

const MODERN_ONLY = new Set(['resultType', 'ttlMs', 'cacheScope'])

/**
 * A tool as a 2025-era client reads it: an output schema only when its root is an object, as that
 * revision requires.
 */
function legacyTool (tool: JsonObject): JsonObject {
  const schema = tool.outputSchema
  if (schema === undefined || (isPlainObject(schema) && schema.type === 'object')) return tool
  const { outputSchema, ...rest } = tool
  return rest
}

/** A result of a 2026-07-28 method as the 2025 revisions shape it. */
export function legacyResult (method: string, result: JsonObject): JsonObject {
  const shaped: JsonObject = {}
  for (const key of Object.keys(result)) {
    if (!MODERN_ONLY.has(key)) shaped[key] = result[key]
  }
  const meta = shaped._meta
  if (isPlainObject(meta) && META_SERVER_INFO in meta) {
    const { [META_SERVER_INFO]: serverInfo, ...rest } = meta
    if (Object.keys(rest).length === 0) delete shaped._meta
    else shaped._meta = rest
  }
  if (method === 'tools/call' && 'structuredContent' in shaped && !isPlainObject(shaped.structuredContent)) delete shaped.structuredContent
  if (method === 'tools/list') shaped.tools = (shaped.tools as JsonObject[]).map(legacyTool)
  return shaped
}

/**
 * An error as a 2025-era client takes it: the 2026 codes it does not know become their nearest
 * kin, a resource not found is -32002, and every error of a request that reached its method is
 * answered in-band (HTTP 200): a 404 would tell the client its session is gone.
 */
export function legacyError (method: string | undefined, error: McpError): McpError {
  let code = error.code
  if (code === ErrorCode.HeaderMismatch ||
    code === ErrorCode.UnsupportedProtocolVersion) code = ErrorCode.InvalidRequest
  if (code === ErrorCode.MissingRequiredClientCapability) code = ErrorCode.InvalidParams
  if (method === 'resources/read' && code === ErrorCode.InvalidParams && error.message === 'Resource not found') code = ErrorCode.ResourceNotFound
  const statusCode = error.statusCode === 404 || error.statusCode === 400 ? 200 : error.statusCode
  if (code === error.code && statusCode === error.statusCode) return error
  return new McpError(code, error.message, { statusCode, data: error.data })
}
