import type { McpContext } from '../context.js'

/** Text for any thrown value, whatever it is: `null`, a string, an object without a prototype. */
export function messageOf (error: unknown): string {
  if (error instanceof Error) return error.message
  if (typeof error === 'string') return error
  try {
    return String(error)
  } catch {
    return 'a value that does not print'
  }
}

/**
 * What becomes of a handler that throws: the operator sees it at error level, with the handler
 * named; the client sees the error's message, or a generic one when the server keeps its errors
 * to itself (`errors: 'generic'`).
 */
export class Failures {
  readonly #expose: boolean

  constructor (expose: boolean) {
    this.#expose = expose
  }

  /**
   * Logs a handler's failure and returns the text the client is told. A handler that gave up
   * because its call was aborted (the client left, the server is closing) is routine: info level.
   */
  handlerFailed (ctx: McpContext, label: string, error: unknown): string {
    if (error instanceof Error && error.name === 'AbortError' && ctx.signal.aborted) {
      ctx.logger.info({ mcp: { method: ctx.method, handler: label, reason: error.message } }, `mocapi: ${label} stopped, its call aborted`)
    } else ctx.logger.error({ err: error instanceof Error ? error : { message: messageOf(error) }, mcp: { method: ctx.method, handler: label } }, `mocapi: ${label} threw`)
    return this.#expose ? messageOf(error) : `${label} failed; the server logged the details`
  }
}
