import type { McpContext } from '../context.js'
import { ErrorCode, McpError, messageOf } from '../errors.js'
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

  async run<T> (ctx: McpContext, label: string, fn: () => T | PromiseLike<T>): Promise<Outcome<T>> {
    try {
      return await this.#engine.run(ctx[kCallState], label, fn)
    } catch (error) {
      throw this.#failed(ctx, label, error)
    }
  }

  async call<T> (ctx: McpContext, label: string, fn: () => T | PromiseLike<T>): Promise<T> {
    ctx[kCallState].stream.handlerStarted?.()
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
