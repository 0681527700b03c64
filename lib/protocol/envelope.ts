// The JSON-RPC envelope of a POSTed message, and the 2026-07-28 one: version, `Mcp-Method` and `Mcp-Name`, `_meta`.
import type { IncomingHttpHeaders } from 'node:http'
import { headerMismatch, invalidParams, invalidRequest, type McpError } from '../errors.js'
import {
  META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION, LOGGING_LEVELS, MAX_DEPTH,
  describe, isPlainObject, nestsDeeper, type JsonObject, type RequestId, type RequestMeta,
} from './wire.js'

export type Message =
  | { kind: 'request', id: RequestId, method: string, params: JsonObject }
  | { kind: 'notification', method: string, params: JsonObject }
  | { kind: 'response', id: RequestId, result: unknown, error: unknown }

export function idOf (body: unknown): RequestId | null {
  if (!isPlainObject(body)) return null
  const id = body.id
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null
}

/** The answer to a batch where there are none: every revision but 2025-03-26 (see LegacyTransport.batch). */
export function batchRefused (): McpError {
  return invalidRequest('Batch requests are not supported: send one JSON-RPC message per POST')
}

function checkDepth (fields: JsonObject, where: string): void {
  for (const key of Object.keys(fields)) {
    if (nestsDeeper(fields[key], MAX_DEPTH - 1)) {
      const name = /^[A-Za-z_$][\w$]*$/.test(key) ? `${where}.${key}` : `${where}[${JSON.stringify(key.slice(0, 40))}]`
      throw invalidParams(`${name} nests objects or arrays more than ${MAX_DEPTH} levels deep`, 400)
    }
  }
}

export function readMessage (body: unknown): Message {
  if (Array.isArray(body)) throw batchRefused()
  if (!isPlainObject(body)) throw invalidRequest('The body must be a JSON-RPC request object')
  if (body.jsonrpc !== '2.0') throw invalidRequest('jsonrpc must be "2.0"')
  if (body.method === undefined && ('result' in body || 'error' in body)) {
    const id = idOf(body)
    if (id === null) throw invalidRequest('id must be a string or a number')
    if ('result' in body === 'error' in body) throw invalidRequest('A response carries either result or error')
    checkDepth(body, 'the response')
    return { kind: 'response', id, result: body.result, error: body.error }
  }
  if (typeof body.method !== 'string' || body.method === '') throw invalidRequest('method must be a non-empty string')
  if (body.params !== undefined && !isPlainObject(body.params)) throw invalidRequest('params must be an object')
  const params = (body.params ?? {}) as JsonObject
  checkDepth(params, 'params')
  if (!('id' in body)) return { kind: 'notification', method: body.method, params }
  const id = idOf(body)
  if (id === null) throw invalidRequest('id must be a string or a number')
  return { kind: 'request', id, method: body.method, params }
}

/** The params field each targeted method's `Mcp-Name` header must match. */
export const NAME_FIELDS: Readonly<Record<string, 'name' | 'uri' | 'taskId'>> = {
  'tools/call': 'name',
  'prompts/get': 'name',
  'resources/read': 'uri',
  'tasks/get': 'taskId',
  'tasks/update': 'taskId',
  'tasks/cancel': 'taskId',
}

// Node joins a repeated header into one string, so a repeated MCP header reads `a, b` and fails the body comparison.
export function header (headers: IncomingHttpHeaders, name: string): string | undefined {
  return headers[name] as string | undefined
}

const SENTINEL_PREFIX = '=?base64?'
const SENTINEL_SUFFIX = '?='
// Whole 4-character groups, the last one padded: the only spelling of base64 accepted.
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/
// Printable ASCII and tab, else the sentinel: Node reads header bytes as latin1, so others came as raw bytes.
const PLAIN = /^[\t\x20-\x7e]*$/
const utf8 = new TextDecoder('utf-8', { fatal: true })

// RFC 9110 OWS around a field value is not part of it. The HTTP parser drops it; inject does not.
function trimOws (value: string): string {
  let start = 0
  let end = value.length
  while (start < end && (value[start] === ' ' || value[start] === '\t')) start++
  while (end > start && (value[end - 1] === ' ' || value[end - 1] === '\t')) end--
  return value.slice(start, end)
}

// Buffer.from skips stray characters and forgives padding: the text must be the canonical spelling of its bytes.
function decodeBase64 (text: string): string | undefined {
  if (!BASE64.test(text)) return undefined
  const bytes = Buffer.from(text, 'base64')
  if (bytes.toString('base64') !== text) return undefined
  try {
    return utf8.decode(bytes)
  } catch {
    return undefined
  }
}

/** An `Mcp-Name`/`Mcp-Param-*` value: `=?base64?…?=` is strict base64 of UTF-8, else plain ASCII; undefined if bad. */
export function decodeHeaderValue (raw: string): string | undefined {
  const value = trimOws(raw)
  if (value.length >= SENTINEL_PREFIX.length + SENTINEL_SUFFIX.length && value.startsWith(SENTINEL_PREFIX) &&
    value.endsWith(SENTINEL_SUFFIX)) {
    return decodeBase64(value.slice(SENTINEL_PREFIX.length, -SENTINEL_SUFFIX.length))
  }
  return PLAIN.test(value) ? value : undefined
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
  checkClientInfo(meta[META_CLIENT_INFO], `params._meta["${META_CLIENT_INFO}"]`)
  const level = meta[META_LOG_LEVEL]
  if (level !== undefined && !LOGGING_LEVELS.includes(level as never)) {
    throw invalidParams(`params._meta["${META_LOG_LEVEL}"] must be one of ${LOGGING_LEVELS.join(', ')}`, 400)
  }
  checkProgressToken(meta, 400)
  return meta as RequestMeta
}

export function checkClientInfo (info: unknown, where: string): void {
  if (info === undefined) return
  if (!isPlainObject(info)) throw invalidParams(`${where} must be an object`, 400)
  for (const field of ['name', 'version', 'title'] as const) {
    const value = info[field]
    if (typeof value !== 'string' && (field !== 'title' || value !== undefined)) {
      throw invalidParams(`${where}.${field} must be a string, got ${describe(value)}`, 400)
    }
  }
}

/** Checks `_meta` of a 2025-era request, which may omit it: an object, whose progress token is a string or a number. */
export function checkLegacyMeta (params: JsonObject): void {
  const meta = params._meta
  if (meta === undefined) return
  if (!isPlainObject(meta)) throw invalidParams('params._meta must be an object')
  checkProgressToken(meta, 200)
}

/** A 2025-era `_meta` naming another version (a 2026 client's) is 400 -32020, as the official SDK answers it. */
export function checkLegacyVersion (params: JsonObject, version: string, from: string): void {
  const named = (params._meta as JsonObject | undefined)?.[META_PROTOCOL_VERSION]
  if (named === undefined || named === version) return
  const shown = describe(typeof named === 'string' ? named.slice(0, 40) : named)
  throw headerMismatch(`The request headers and body disagree: ${from} is ${version}, params._meta["${META_PROTOCOL_VERSION}"] is ${shown}`)
}

function checkProgressToken (meta: JsonObject, statusCode: number): void {
  const token = meta.progressToken
  if (token !== undefined && typeof token !== 'string' && typeof token !== 'number') {
    throw invalidParams('params._meta.progressToken must be a string or a number', statusCode)
  }
}

/** The 2026-07-28 envelope: `_meta` and its version (the caller found the header present), `Mcp-Method`, `Mcp-Name`. */
export function checkModernRequest (
  message: { method: string, params: JsonObject },
  headers: IncomingHttpHeaders,
  headerVersion: string
): RequestMeta {
  const { method, params } = message
  const meta = checkMeta(params)
  if (headerVersion !== meta[META_PROTOCOL_VERSION]) throw headerMismatch('The MCP-Protocol-Version header does not match params._meta')
  const headerMethod = header(headers, 'mcp-method')
  if (headerMethod === undefined) throw headerMismatch('The Mcp-Method header is required')
  if (headerMethod !== method) throw headerMismatch('The Mcp-Method header does not match the body\'s method')
  const nameField = Object.hasOwn(NAME_FIELDS, method) ? NAME_FIELDS[method] : undefined
  if (nameField !== undefined && typeof params[nameField] === 'string') {
    const raw = header(headers, 'mcp-name')
    if (raw === undefined) throw headerMismatch(`The Mcp-Name header is required for ${method}`)
    const name = decodeHeaderValue(raw)
    if (name === undefined) throw headerMismatch('The Mcp-Name header is malformed')
    if (name !== params[nameField]) throw headerMismatch(`The Mcp-Name header does not match params.${nameField}`)
  }
  return meta
}
