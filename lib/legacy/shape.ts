import { ErrorCode, McpError, ResourceNotFoundError } from '../errors.js'
import { META_SERVER_INFO, isPlainObject, type JsonObject } from '../protocol/wire.js'

const MODERN_ONLY = new Set(['resultType', 'ttlMs', 'cacheScope'])

/** A 2025-era tool has an output schema only when its root is an object, as that revision requires. */
function legacyTool (tool: JsonObject): JsonObject {
  const schema = tool.outputSchema
  if (schema === undefined || (isPlainObject(schema) && schema.type === 'object')) return tool
  const { outputSchema, ...rest } = tool
  return rest
}

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

/** Errors of a request that reached its method go in-band (HTTP 200): a 404 would say the session is gone. */
export function legacyError (error: McpError): McpError {
  let code = error.code
  if (code === ErrorCode.HeaderMismatch ||
    code === ErrorCode.UnsupportedProtocolVersion) code = ErrorCode.InvalidRequest
  if (code === ErrorCode.MissingRequiredClientCapability) code = ErrorCode.InvalidParams
  if (error instanceof ResourceNotFoundError) code = ErrorCode.ResourceNotFound
  const statusCode = error.statusCode === 404 || error.statusCode === 400 ? 200 : error.statusCode
  if (code === error.code && statusCode === error.statusCode) return error
  return new McpError(code, error.message, { statusCode, data: error.data })
}
