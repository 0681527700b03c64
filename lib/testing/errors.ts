import type { JsonObject } from '../protocol/wire.js'
import type { Round } from './types.js'
import type { ReadReply } from './transport.js'

export function isObject (value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

/** A JSON-RPC error the server answered with, or a reply that was not JSON-RPC at all. */
export class McpClientError extends Error {
  /** The JSON-RPC error code; undefined when the reply was not JSON-RPC (say, a 401 from an auth hook). */
  readonly code: number | undefined
  /** The JSON-RPC `error.data`, or the body of a reply that was not JSON-RPC. */
  readonly data: unknown
  /** The HTTP status of the reply. */
  readonly status: number
  /** The rounds completed before the error. */
  readonly rounds: Round[]

  constructor (message: string, fields: { code?: number, data?: unknown, status: number, rounds: Round[] }) {
    super(message)
    this.name = 'McpClientError'
    this.code = fields.code
    this.data = fields.data
    this.status = fields.status
    this.rounds = fields.rounds
  }
}

export function resultOf (reply: ReadReply, rounds: Round[]): JsonObject {
  const message = reply.message
  if (isObject(message) && isObject(message.error)) {
    const { code, message: text, data } = message.error
    return fail(String(text), { code: code as number, data, status: reply.status, rounds })
  }
  if (isObject(message) && message.jsonrpc === '2.0' && isObject(message.result)) return message.result
  const said = isObject(message) && typeof message.message === 'string' ? message.message : reply.text.slice(0, 200)
  return fail(`HTTP ${reply.status}: ${said === '' ? 'the reply holds no JSON-RPC response' : said}`, { data: message, status: reply.status, rounds })
}

export function fail (message: string, fields: ConstructorParameters<typeof McpClientError>[1]): never {
  throw new McpClientError(message, fields)
}
