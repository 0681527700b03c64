import type { IncomingHttpHeaders } from 'node:http'
import { headerMismatch, invalidParams, invalidRequest, unsupportedVersion } from '../errors.js'
import {
  META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION, LOGGING_LEVELS,
  SUPPORTED_VERSIONS, isPlainObject, type JsonObject, type RequestId, type RequestMeta,
} from './wire.js'

/** A JSON-RPC request that passed the envelope checks. */
export interface RequestEnvelope {
  id: RequestId
  method: string
  params: JsonObject
  meta: RequestMeta
}

/** The id of a JSON-RPC message, when it has a usable one; errors echo it. */
export function idOf (body: unknown): RequestId | null {
  if (!isPlainObject(body)) return null
  const id = body.id
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null
}

/**
 * Checks the JSON-RPC shape of a POSTed message. Returns `null` for a notification,
 * the method name for a request.
 */
export function readMessage (body: unknown): { method: string, notification: boolean } {
  if (Array.isArray(body)) throw invalidRequest('Batch requests are not supported: send one JSON-RPC message per POST')
  if (!isPlainObject(body)) throw invalidRequest('The body must be a JSON-RPC request object')
  if (body.jsonrpc !== '2.0') throw invalidRequest('jsonrpc must be "2.0"')
  if (typeof body.method !== 'string' || body.method === '') {
    throw invalidRequest('method must be a non-empty string (clients must not POST responses)')
  }
  if (!('id' in body)) return { method: body.method, notification: true }
  if (idOf(body) === null) throw invalidRequest('id must be a string or a number')
  if (body.params !== undefined && !isPlainObject(body.params)) throw invalidRequest('params must be an object')
  return { method: body.method, notification: false }
}

// Node joins a repeated header into one string (only set-cookie stays a list), so a
// repeated MCP header reads as `a, b` and fails the comparison with the body.
function header (headers: IncomingHttpHeaders, name: string): string | undefined {
  return headers[name] as string | undefined
}

const BASE64_WORD = /^=\?base64\?([A-Za-z0-9+/]*={0,2})\?=$/
const PLAIN_ASCII = /^[\x20-\x7e]*$/

/**
 * Decodes an `Mcp-Name` value, including its `=?base64?…?=` form. A value that is not plain
 * ASCII is malformed: it must come base64-encoded (Node reads raw bytes as latin1).
 */
export function decodeNameHeader (value: string): string | undefined {
  const match = BASE64_WORD.exec(value)
  if (match === null) return value.startsWith('=?') || !PLAIN_ASCII.test(value) ? undefined : value
  return Buffer.from(match[1], 'base64').toString('utf8')
}

function checkMeta (params: JsonObject): RequestMeta {
  const meta = params._meta
  if (!isPlainObject(meta)) throw invalidParams('params._meta is required', 400)
  const version = meta[META_PROTOCOL_VERSION]
  if (typeof version !== 'string' || version === '') {
    throw invalidParams(`params._meta["${META_PROTOCOL_VERSION}"] is required and must be a string`, 400)
  }
  if (!isPlainObject(meta[META_CLIENT_CAPABILITIES])) {
    throw invalidParams(`params._meta["${META_CLIENT_CAPABILITIES}"] is required and must be an object`, 400)
  }
  const info = meta[META_CLIENT_INFO]
  if (info !== undefined && !isPlainObject(info)) {
    throw invalidParams(`params._meta["${META_CLIENT_INFO}"] must be an object`, 400)
  }
  const level = meta[META_LOG_LEVEL]
  if (level !== undefined && !LOGGING_LEVELS.includes(level as never)) {
    throw invalidParams(`params._meta["${META_LOG_LEVEL}"] must be one of ${LOGGING_LEVELS.join(', ')}`, 400)
  }
  const token = meta.progressToken
  if (token !== undefined && typeof token !== 'string' && typeof token !== 'number') {
    throw invalidParams('params._meta.progressToken must be a string or a number', 400)
  }
  return meta as RequestMeta
}

/**
 * Checks the MCP envelope of a request whose method is known: `MCP-Protocol-Version`, `_meta`,
 * the version, `Mcp-Method` and (for methods that name a target) `Mcp-Name`.
 */
export function readRequest (body: JsonObject, headers: IncomingHttpHeaders, nameField: string | undefined): RequestEnvelope {
  const method = body.method as string
  const params = (body.params ?? {}) as JsonObject
  const headerVersion = header(headers, 'mcp-protocol-version')
  if (headerVersion === undefined || headerVersion === '') throw headerMismatch('The MCP-Protocol-Version header is required')
  const meta = checkMeta(params)
  const version = meta[META_PROTOCOL_VERSION]
  if (headerVersion !== version) {
    throw headerMismatch('The MCP-Protocol-Version header does not match params._meta')
  }
  if (!SUPPORTED_VERSIONS.includes(version)) throw unsupportedVersion(version, SUPPORTED_VERSIONS)
  const headerMethod = header(headers, 'mcp-method')
  if (headerMethod === undefined) throw headerMismatch('The Mcp-Method header is required')
  if (headerMethod !== method) throw headerMismatch('The Mcp-Method header does not match the body\'s method')
  if (nameField !== undefined && typeof params[nameField] === 'string') {
    const raw = header(headers, 'mcp-name')
    if (raw === undefined) throw headerMismatch(`The Mcp-Name header is required for ${method}`)
    const name = decodeNameHeader(raw)
    if (name === undefined) throw headerMismatch('The Mcp-Name header is malformed')
    if (name !== params[nameField]) throw headerMismatch(`The Mcp-Name header does not match params.${nameField}`)
  }
  return { id: body.id as RequestId, method, params, meta }
}
