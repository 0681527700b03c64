/**
 * One table of the protocol errors mocapi answers with, and the ADR-0021 error family.
 * Every McpError carries its JSON-RPC code and the HTTP status of the reply that carries it.
 */

export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  HeaderMismatch: -32020,
  MissingRequiredClientCapability: -32021,
  UnsupportedProtocolVersion: -32022,
} as const

export type ErrorCodeValue = typeof ErrorCode[keyof typeof ErrorCode]

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

export function invalidRequest (message: string, statusCode = 400): McpError {
  return new McpError(ErrorCode.InvalidRequest, message, { statusCode })
}

export function methodNotFound (method: string): McpError {
  return new McpError(ErrorCode.MethodNotFound, `Method not found: ${method}`, { statusCode: 404 })
}

export function invalidParams (message: string, statusCode = 200, data?: unknown): McpError {
  return new McpError(ErrorCode.InvalidParams, message, { statusCode, data })
}

export function internalError (message = 'Internal error'): McpError {
  return new McpError(ErrorCode.InternalError, message, { statusCode: 500 })
}

export function headerMismatch (message: string): McpError {
  return new McpError(ErrorCode.HeaderMismatch, message, { statusCode: 400 })
}

export function missingCapability (requiredCapabilities: Record<string, unknown>): McpError {
  const names = Object.keys(requiredCapabilities).join(', ')
  return new McpError(ErrorCode.MissingRequiredClientCapability,
    `Server requires the ${names} client capability for this request`,
    { statusCode: 400, data: { requiredCapabilities } })
}

export function unsupportedVersion (requested: unknown, supported: readonly string[]): McpError {
  return new McpError(ErrorCode.UnsupportedProtocolVersion, 'Unsupported protocol version',
    { statusCode: 400, data: { supported: [...supported], requested } })
}

/** The one message every requestState failure answers with: it never says which check failed. */
export const INVALID_REQUEST_STATE_MESSAGE = 'Invalid or expired requestState'

/**
 * A requestState that failed verification: tampered, unreadable, or bound to another
 * method, target, arguments or principal. `reason` is for debug logs only.
 */
export class InvalidRequestStateError extends McpError {
  /** Why verification failed; logged at debug level, never sent to the client. */
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
 * A replayed handler asked for different input at an ordinal the ledger already holds:
 * the handler broke the idempotency contract of `ctx.elicit`.
 */
export class ElicitationLedgerMismatchError extends McpError {
  /** The 1-based ordinal of the input request that differs. */
  readonly ordinal: number

  constructor (ordinal: number) {
    super(ErrorCode.InvalidParams,
      `Input request #${ordinal} differs from the one answered in an earlier round: ` +
      'a handler must make the same ctx.elicit() calls, in the same order, on every replay ' +
      '(handlers must be idempotent up to their last elicit())',
      { data: { reason: 'ledger_mismatch', ordinal } })
    this.name = 'ElicitationLedgerMismatchError'
    this.ordinal = ordinal
  }
}
