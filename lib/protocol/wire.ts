/** The revision mocapi speaks natively: stateless, with `server/discover` and per-request `_meta`. */
export const PROTOCOL_VERSION = '2026-07-28'
/** The 2025 revisions, which open a session with `initialize`; newest first. */
export const LEGACY_VERSIONS: readonly string[] = ['2025-11-25', '2025-06-18', '2025-03-26']

export const META_PROTOCOL_VERSION = 'io.modelcontextprotocol/protocolVersion'
export const META_CLIENT_CAPABILITIES = 'io.modelcontextprotocol/clientCapabilities'
export const META_CLIENT_INFO = 'io.modelcontextprotocol/clientInfo'
export const META_LOG_LEVEL = 'io.modelcontextprotocol/logLevel'
export const META_SERVER_INFO = 'io.modelcontextprotocol/serverInfo'
export const META_SUBSCRIPTION_ID = 'io.modelcontextprotocol/subscriptionId'

export type JsonObject = Record<string, unknown>
/** Any value JSON can carry. */
export type JsonValue = string | number | boolean | null | JsonValue[] | { [key: string]: JsonValue }
export type RequestId = string | number

/** Capabilities a client declares in `_meta` of each request. */
export interface ClientCapabilities {
  elicitation?: { form?: object, url?: object }
  sampling?: { tools?: object, context?: object }
  roots?: { listChanged?: boolean }
  experimental?: Record<string, object>
  extensions?: Record<string, object>
  [key: string]: unknown
}

/** `{ name, version }` of the client, from `_meta`. */
export interface Implementation {
  name: string
  version: string
  title?: string
  [key: string]: unknown
}

/** The per-request `_meta` of MCP 2026-07-28. */
export interface RequestMeta {
  [META_PROTOCOL_VERSION]: string
  [META_CLIENT_CAPABILITIES]: ClientCapabilities
  [META_CLIENT_INFO]?: Implementation
  [META_LOG_LEVEL]?: LoggingLevel
  progressToken?: string | number
  [key: string]: unknown
}

export type LoggingLevel = 'debug' | 'info' | 'notice' | 'warning' | 'error' | 'critical' | 'alert' | 'emergency'
export const LOGGING_LEVELS: readonly LoggingLevel[] = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency']

/** One input request inside an InputRequiredResult: `{ method, params }`, no id. */
export interface InputRequest {
  method: 'elicitation/create' | 'sampling/createMessage' | 'roots/list'
  params: JsonObject
}

/** The wire shape of an `input_required` result. */
export interface InputRequiredResult {
  resultType: 'input_required'
  inputRequests: Record<string, InputRequest>
  requestState: string
}

/** What a client declared: in `_meta` of each request (2026-07-28), or when its 2025-era session began. */
export interface ClientState {
  readonly protocolVersion: string
  readonly capabilities: ClientCapabilities
  readonly info: Implementation | undefined
  readonly logLevel: LoggingLevel | undefined
  readonly session?: string
  readonly sessionExpiresAt?: number
  /** The operator's `elicitation.disable` took the client's elicitation capability away. */
  readonly elicitationOff?: boolean
}

/** Content blocks a tool result or prompt message may carry. */
export type ContentBlock =
  | { type: 'text', text: string, annotations?: JsonObject, _meta?: JsonObject }
  | { type: 'image', data: string, mimeType: string, annotations?: JsonObject, _meta?: JsonObject }
  | { type: 'audio', data: string, mimeType: string, annotations?: JsonObject, _meta?: JsonObject }
  | { type: 'resource_link', uri: string, name: string, [key: string]: unknown }
  | { type: 'resource', resource: { uri: string, mimeType?: string, text: string } | { uri: string, mimeType?: string, blob: string }, [key: string]: unknown }

/** A message of a sampling request or result. */
export interface SamplingMessage {
  role: 'user' | 'assistant'
  content: JsonObject | JsonObject[]
  _meta?: JsonObject
}

/** The params of `sampling/createMessage`. */
export interface CreateMessageParams {
  messages: SamplingMessage[]
  /** An integer. */
  maxTokens: number
  systemPrompt?: string | undefined
  modelPreferences?: JsonObject | undefined
  includeContext?: 'none' | 'thisServer' | 'allServers' | undefined
  temperature?: number | undefined
  stopSequences?: string[] | undefined
  metadata?: JsonObject | undefined
  tools?: JsonObject[] | undefined
  toolChoice?: JsonObject | undefined
  [key: string]: unknown
}

/** What the client's model answered. */
export interface CreateMessageResult {
  role: 'user' | 'assistant'
  content: JsonObject | JsonObject[]
  model: string
  stopReason?: string
  [key: string]: unknown
}

/** One root the client exposes. */
export interface Root {
  uri: string
  name?: string
  [key: string]: unknown
}

/** The result of `tools/call`. */
export interface CallToolResult {
  content: ContentBlock[]
  structuredContent?: unknown
  isError?: boolean
  _meta?: JsonObject
}

export function isPlainObject (value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** How deep a client's JSON may nest: JSON.stringify and any recursive walk overflow the stack a few thousand deep. */
export const MAX_DEPTH = 1000

export function nestsDeeper (value: unknown, max: number): boolean {
  if (typeof value !== 'object' || value === null) return false
  const stack: unknown[] = [value]
  const depths: number[] = [1]
  while (stack.length > 0) {
    const item = stack.pop() as object
    const depth = depths.pop() as number
    if (depth > max) return true
    for (const inner of Object.values(item)) {
      if (typeof inner === 'object' && inner !== null) {
        stack.push(inner)
        depths.push(depth + 1)
      }
    }
  }
  return false
}

/** Freezes a value and everything in it; a part already frozen is taken as frozen all the way down. */
export function deepFreeze<T> (value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    for (const inner of Object.values(value)) deepFreeze(inner)
    Object.freeze(value)
  }
  return value
}

export function jsonObject (text: string): JsonObject | undefined {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch {
    return undefined
  }
  return isPlainObject(value) ? value : undefined
}

/** Sets an own enumerable property of any name, `__proto__` included, which assignment would take for the prototype. */
export function setOwn (target: JsonObject, key: string, value: unknown): void {
  Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true })
}

/** A value as an error message shows it: a string quoted, an object or array by its kind only. */
export function describe (value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value)
  if (value === null || typeof value !== 'object') return typeof value === 'function' ? 'a function' : String(value)
  if (Array.isArray(value)) return 'an array'
  return 'an object'
}
