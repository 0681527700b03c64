// Registration errors are TypeErrors coded `FST_MOCAPI_*` (Fastify's convention); protocol errors are McpErrors.
import createError from '@fastify/error'

/** A plugin option is invalid. */
export const InvalidOptionError = createError('FST_MOCAPI_INVALID_OPTION', 'mocapi: %s', 500, TypeError)
/** A tool, prompt, resource or resource template definition is invalid. */
export const InvalidDefinitionError = createError('FST_MOCAPI_INVALID_DEFINITION', 'mocapi: %s', 500, TypeError)
/** A tool, prompt, resource or resource template is registered under a key already taken. */
export const DuplicateDefinitionError = createError('FST_MOCAPI_DUPLICATE_DEFINITION', 'mocapi: %s is already registered', 500, TypeError)
/** A requestState key is malformed, of the wrong length, or plainly not random. The message never shows the key. */
export const InvalidKeyError = createError('FST_MOCAPI_INVALID_KEY', 'mocapi: %s', 500, TypeError)
/** A JSON Schema of a definition does not compile. */
export const InvalidSchemaError = createError('FST_MOCAPI_INVALID_SCHEMA', 'mocapi: %s is not a valid JSON Schema: %s', 500, TypeError)
/** A `requestedSchema()` field is invalid. */
export const InvalidRequestedSchemaError = createError('FST_MOCAPI_INVALID_REQUESTED_SCHEMA', '%s', 500, TypeError)
/** A handler called a `ctx` method with arguments it does not take: a TypeError coded `FST_MOCAPI_INVALID_ARGUMENT`. */
export class InvalidArgumentError extends createError('FST_MOCAPI_INVALID_ARGUMENT', '%s', 500, TypeError) {
  // The handler sees the name it always saw, where a registration error is a FastifyError.
  override name = 'TypeError'
}

export type RegistrationErrorConstructor = new (message: string) => Error & { code: string }

export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** 2025-era servers answer a read of an unknown resource with it. */
  ResourceNotFound: -32002,
  /** 2025-era: a server-to-client request that got no answer in time. */
  RequestTimeout: -32001,
  HeaderMismatch: -32020,
  MissingRequiredClientCapability: -32021,
  UnsupportedProtocolVersion: -32022,
} as const

/** A JSON-RPC error with the HTTP status mocapi replies with. */
export class McpError extends Error {
  /** JSON-RPC error code. */
  readonly code: number
  /** HTTP status of the reply carrying this error. */
  readonly statusCode: number
  /** Optional JSON-RPC `error.data`. */
  readonly data: unknown

  constructor (code: number, message: string, options: { statusCode?: number, data?: unknown, cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause })
    this.name = 'McpError'
    this.code = code
    this.statusCode = options.statusCode ?? 200
    this.data = options.data
  }

  /** The JSON-RPC `error` member. */
  toJSON (): { code: number, message: string, data?: unknown } {
    return this.data === undefined
      ? { code: this.code, message: this.message }
      : { code: this.code, message: this.message, data: this.data }
  }
}

export function parseError (message = 'Parse error: the body is not valid JSON'): McpError {
  return new McpError(ErrorCode.ParseError, message, { statusCode: 400 })
}

export function invalidRequest (message: string, statusCode = 400, data?: unknown): McpError {
  return new McpError(ErrorCode.InvalidRequest, message, { statusCode, data })
}

export function methodNotFound (method: string): McpError {
  return new McpError(ErrorCode.MethodNotFound, `Method not found: ${method}`, { statusCode: 404 })
}

export function invalidParams (message: string, statusCode = 200, data?: unknown): McpError {
  return new McpError(ErrorCode.InvalidParams, message, { statusCode, data })
}

/** An unexpected failure: -32603. In-band (HTTP 200) when a handler failed, 500 when mocapi itself did. */
export function internalError (message = 'Internal error', statusCode = 500): McpError {
  return new McpError(ErrorCode.InternalError, message, { statusCode })
}

export function headerMismatch (message: string): McpError {
  return new McpError(ErrorCode.HeaderMismatch, message, { statusCode: 400 })
}

export function missingCapability (requiredCapabilities: Record<string, unknown>, statusCode = 400): McpError {
  const names = Object.keys(requiredCapabilities).join(', ')
  return new McpError(ErrorCode.MissingRequiredClientCapability,
    `Server requires the ${names} client capability for this request`,
    { statusCode, data: { requiredCapabilities } })
}

export function unsupportedVersion (requested: unknown, supported: readonly string[], message = 'Unsupported protocol version'): McpError {
  return new McpError(ErrorCode.UnsupportedProtocolVersion, message,
    { statusCode: 400, data: { supported: [...supported], requested } })
}

/** The one message every requestState failure answers with: it never says which check failed. */
const INVALID_REQUEST_STATE_MESSAGE = 'Invalid or expired requestState'

/**
 * A requestState that failed verification: tampered, unreadable, or bound to another
 * method, target, arguments or principal. `reason` is for the server's log only.
 */
export class InvalidRequestStateError extends McpError {
  /** Why verification failed; logged, never sent to the client. */
  readonly reason: string

  constructor (reason: string) {
    super(ErrorCode.InvalidParams, INVALID_REQUEST_STATE_MESSAGE, { data: { reason: 'invalid_request_state' } })
    this.name = 'InvalidRequestStateError'
    this.reason = reason
  }
}

/** A requestState presented after its TTL lapsed. */
export class ExpiredRequestStateError extends InvalidRequestStateError {
  constructor (reason = 'expired') {
    super(reason)
    this.name = 'ExpiredRequestStateError'
  }
}

/**
 * Which part of an input request differed from the one answered before: its input key, its kind
 * (form, URL, sampling, roots), its requested schema, its URL, its sampling params, or its message.
 */
export type LedgerMismatchPart = 'key' | 'kind' | 'schema' | 'url' | 'params' | 'message'

const PART_NAMES: Record<LedgerMismatchPart, string> = {
  key: 'input key', kind: 'kind of request', schema: 'requested schema', url: 'URL', params: 'sampling params', message: 'message',
}

/**
 * A replayed handler asked for different input at an ordinal the ledger already holds, breaking the idempotency
 * contract of `ctx.elicit`. The message says which part differed, never the answers.
 */
export class ElicitationLedgerMismatchError extends McpError {
  /** The 1-based ordinal of the input request that differs. */
  readonly ordinal: number
  /** What differed. */
  readonly part: LedgerMismatchPart

  constructor (ordinal: number, part: LedgerMismatchPart) {
    super(ErrorCode.InvalidParams,
      `Input request #${ordinal} has a different ${PART_NAMES[part]} from the one answered in an earlier round: ` +
      'a handler must make the same ctx.elicit() calls, in the same order, on every replay ' +
      '(handlers must be idempotent up to their last elicit(); keep live data out of the question text)',
      { data: { reason: 'ledger_mismatch', ordinal, part } })
    this.name = 'ElicitationLedgerMismatchError'
    this.ordinal = ordinal
    this.part = part
  }
}

export function unboundPrincipal (what = 'its requestState'): McpError {
  return invalidRequest(`This request is authenticated, but mocapi found no principal to bind ${what} to ` +
    '(request.user has no string or numeric sub): the server must set the principal option', 403)
}

export function messageOf (error: unknown): string {
  if (error instanceof Error) return error.message
  if (typeof error === 'string') return error
  try {
    return String(error)
  } catch {
    return 'a value that does not print'
  }
}

/** `resources/read` of a URI nothing serves: -32602 in 2026-07-28, which the 2025 revisions answered as -32002. */
export class ResourceNotFoundError extends McpError {
  constructor (uri: string) {
    super(ErrorCode.InvalidParams, 'Resource not found', { statusCode: 200, data: { uri } })
  }
}
