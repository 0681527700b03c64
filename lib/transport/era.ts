/**
 * What each era's transport gives the route: a request read into a call the route dispatches, and
 * the result and error of that call in the shapes the era's clients read. The route itself has no
 * era branch after it picks the transport.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { McpContext } from '../context.js'
import type { McpError } from '../errors.js'
import type { Dispatcher } from '../protocol/dispatch.js'
import type { Message } from '../protocol/envelope.js'
import type { JsonObject } from '../protocol/wire.js'
import type { CallWatch } from './calls.js'
import type { ReplyChannel } from './channel.js'

/** A request ready to dispatch, and what the route keeps of it until its reply is written. */
export interface Call {
  readonly ctx: McpContext
  readonly channel: ReplyChannel
  readonly era: Era
  /** The id of the session an `initialize` opened, sent back in its `Mcp-Session-Id`. */
  readonly sessionId: string | undefined
  /** Called once the call is over, whichever way it ended. */
  readonly untrack: () => void
  /** What the observers do with the call; set by the route. */
  watch: CallWatch
}

/**
 * Runs a call of a batch as the route runs a single one (its observers, its dispatch, its result or
 * error in the era's shape), and gives its JSON-RPC response for the batch's reply rather than send it.
 */
export type Respond = (call: Call) => Promise<object>

/** One era's side of the endpoint. */
export interface Era {
  readonly dispatcher: Dispatcher
  /**
   * Reads a POSTed message: a request becomes a call; anything else is answered here, and then
   * undefined, or a promise that settles once the reply is sent (an answer waiting for its delivery).
   */
  prepare (request: FastifyRequest, reply: FastifyReply, message: Message): Call | undefined | Promise<void>
  /** The result of a call as its client reads it (setting the reply headers it needs). */
  result (call: Call, result: JsonObject, reply: FastifyReply): JsonObject
  /** An error of a call as its client reads it. */
  error (call: Call, error: McpError): McpError
}
