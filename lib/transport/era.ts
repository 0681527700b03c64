import type { FastifyReply, FastifyRequest } from 'fastify'
import type { McpContext } from '../context.js'
import type { McpError } from '../errors.js'
import type { Dispatcher } from '../protocol/dispatch.js'
import type { Message } from '../protocol/envelope.js'
import type { JsonObject } from '../protocol/wire.js'
import type { CallWatch } from './observers.js'
import type { ReplyChannel } from './channel.js'

export interface Prepared {
  readonly ctx: McpContext
  readonly channel: ReplyChannel
  readonly era: Era
  readonly sessionId: string | undefined
  readonly untrack: () => void
  watch: CallWatch
}

/** Runs a batch's call as the route runs one, but returns its response for the batch's reply instead of sending it. */
export type Respond = (call: Prepared) => Promise<object>

/** One era's transport: once the route picks it, the route has no era branch. */
export interface Era {
  readonly dispatcher: Dispatcher<McpContext>
  /** A request becomes a call; anything else is answered here (a promise while an answer awaits delivery). */
  prepare (request: FastifyRequest, reply: FastifyReply, message: Message): Prepared | undefined | Promise<void>
  result (call: Prepared, result: JsonObject, reply: FastifyReply): JsonObject
  error (call: Prepared, error: McpError): McpError
}

export interface LegacyEra extends Era {
  batch (request: FastifyRequest, reply: FastifyReply, body: unknown[], respond: Respond): Promise<void>
  stream (request: FastifyRequest, reply: FastifyReply): void
}
