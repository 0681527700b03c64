import type { McpContext } from '../context.js'
import { ErrorCode, McpError, messageOf } from '../errors.js'
import type { InputRequiredResult } from '../protocol/wire.js'
import type { Outcome, ReplayEngine } from '../replay/engine.js'
import { kCallState } from '../symbols.js'

/** A handler threw something that is not an McpError: -32603 in-band, with the text the client is told. */
export class HandlerFailed extends McpError {
  constructor (text: string) {
    super(ErrorCode.InternalError, text, { statusCode: 200 })
  }
}

/** The operator sees a handler's throw in full; the client sees its message, or a generic one (`errors: 'generic'`). */
export class Handlers {
  readonly #engine: ReplayEngine
  readonly #expose: boolean

  constructor (engine: ReplayEngine, expose: boolean) {
    this.#engine = engine
    this.#expose = expose
  }

  /** Through the replay engine: a handler that may ask (tools, prompts, resources). */
  async replay<T> (ctx: McpContext, label: string, fn: () => T | PromiseLike<T>): Promise<Outcome<T>> {
    try {
      return await this.#engine.run(ctx[kCallState], label, fn)
    } catch (error) {
      throw this.#failed(ctx, label, error)
    }
  }

  /** Straight through: a handler that never asks (completers). */
  async direct<T> (ctx: McpContext, label: string, fn: () => T | PromiseLike<T>): Promise<T> {
    const call = ctx[kCallState]
    call.begin()
    try {
      return await fn()
    } catch (error) {
      throw this.#failed(ctx, label, error)
    }
  }

  /** Giving up on an aborted call (client left, server closing) is routine: info level. */
  #failed (ctx: McpContext, label: string, error: unknown): McpError {
    if (error instanceof McpError) return error
    if (error instanceof Error && error.name === 'AbortError' && ctx.signal.aborted) {
      ctx.logger.info({ mcp: { method: ctx.method, handler: label, reason: error.message } }, `mocapi: ${label} stopped, its call aborted`)
    } else {
      const err = error instanceof Error ? error : { message: messageOf(error) }
      ctx.logger.error({ err, mcp: { method: ctx.method, handler: label } }, `mocapi: ${label} threw`)
    }
    return new HandlerFailed(this.#expose ? messageOf(error) : `${label} failed; the server logged the details`)
  }
}

/** A prompt's or resource's outcome as its reply: only a task's pass parks, and only tools run as tasks. */
export function replyOf<T> (outcome: Outcome<T>): T | InputRequiredResult {
  return outcome.kind === 'complete' ? outcome.value : (outcome as { result: InputRequiredResult }).result
}
