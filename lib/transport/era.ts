import type { FastifyReply, FastifyRequest } from 'fastify'
import type { McpContext } from '../context.js'
import type { McpError } from '../errors.js'
import type { Dispatcher } from '../protocol/dispatch.js'
import type { Message } from '../protocol/envelope.js'
import type { JsonObject } from '../protocol/wire.js'
import type { CallWatch } from './observers.js'
import type { ReplyChannel } from './channel.js'

export interface Call {
  readonly ctx: McpContext
  readonly channel: ReplyChannel
  readonly era: Era
  /** The session an `initialize` opened, sent back in `Mcp-Session-Id`. */
  readonly sessionId: string | undefined
  readonly untrack: () => void
  watch: CallWatch
}

/** Runs a batch's call as the route runs one, but returns its response for the batch's reply instead of sending it. */
export type Respond = (call: Call) => Promise<object>

/** One era's transport: once the route picks it, the route has no era branch. */
export interface Era {
  readonly dispatcher: Dispatcher
  /** A request becomes a call; anything else is answered here (a promise while an answer awaits delivery). */
  prepare (request: FastifyRequest, reply: FastifyReply, message: Message): Call | undefined | Promise<void>
  result (call: Call, result: JsonObject, reply: FastifyReply): JsonObject
  error (call: Call, error: McpError): McpError
}
