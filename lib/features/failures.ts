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

/** The operator sees a handler's throw in full; the client sees its message, or a generic one (`errors: 'generic'`). */
export class Failures {
  readonly #expose: boolean

  constructor (expose: boolean) {
    this.#expose = expose
  }

  /** Returns the client's text. Giving up on an aborted call (client left, server closing) is routine: info level. */
  handlerFailed (ctx: McpContext, label: string, error: unknown): string {
    if (error instanceof Error && error.name === 'AbortError' && ctx.signal.aborted) {
      ctx.logger.info({ mcp: { method: ctx.method, handler: label, reason: error.message } }, `mocapi: ${label} stopped, its call aborted`)
    } else ctx.logger.error({ err: error instanceof Error ? error : { message: messageOf(error) }, mcp: { method: ctx.method, handler: label } }, `mocapi: ${label} threw`)
    return this.#expose ? messageOf(error) : `${label} failed; the server logged the details`
  }
}
