import type { FastifyReply } from 'fastify'

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
}

/** Whether the server is shutting down, shared by every reply of one mocapi instance. */
export interface Lifecycle {
  closing: boolean
  closeIdleConnections: () => void
}

/**
 * While the server closes, a reply asks the client to close its connection, so a keep-alive
 * connection does not hold `app.close()` open until it times out.
 */
export function sendClosing (reply: FastifyReply, lifecycle: Lifecycle): FastifyReply {
  return lifecycle.closing ? reply.header('connection', 'close') : reply
}

/**
 * The reply of one MCP request. It stays a plain JSON reply unless the handler emits a
 * notification, which turns it into a `text/event-stream` whose last event is the response.
 * Once the client goes away, nothing more is written and `signal` is aborted.
 */
export class ReplyChannel {
  readonly #reply: FastifyReply
  #streaming = false
  #finished = false
  #controller: AbortController | undefined

  readonly #lifecycle: Lifecycle

  constructor (reply: FastifyReply, lifecycle: Lifecycle) {
    this.#reply = reply
    this.#lifecycle = lifecycle
  }

  /** True once the reply became an event stream. */
  get streaming (): boolean {
    return this.#streaming
  }

  /** True when the client closed the connection before the response was complete. */
  get closed (): boolean {
    const raw = this.#reply.raw
    return raw.destroyed && !raw.writableFinished
  }

  /** Aborted when the client goes away before the response is complete. */
  get signal (): AbortSignal {
    if (this.#controller === undefined) {
      const controller = new AbortController()
      this.#controller = controller
      const raw = this.#reply.raw
      if (this.closed) controller.abort()
      else raw.once('close', () => { if (!raw.writableFinished) controller.abort() })
    }
    return this.#controller.signal
  }

  /**
   * Sends one notification on the event stream, opening it if needed. False when the client
   * is gone or the response is complete (a handler's background work may outlive its reply).
   */
  notify (message: object): boolean {
    if (this.#finished || this.closed) return false
    const raw = this.#reply.raw
    if (!this.#streaming) {
      this.#streaming = true
      this.#reply.hijack()
      raw.writeHead(200, SSE_HEADERS)
    }
    raw.write(`event: message\ndata: ${JSON.stringify(message)}\n\n`)
    return true
  }

  /** Sends the final message: as the body of a JSON reply, or as the last event of the stream. */
  finish (message: object, statusCode: number): FastifyReply | undefined {
    this.#finished = true
    if (!this.#streaming) return sendClosing(this.#reply, this.#lifecycle).code(statusCode).send(message)
    const raw = this.#reply.raw
    if (this.#lifecycle.closing) raw.once('finish', () => setImmediate(this.#lifecycle.closeIdleConnections))
    // A client that left may have left its socket half-open: release it rather than wait for a timeout.
    if (this.closed) raw.destroy()
    else raw.end(`event: message\ndata: ${JSON.stringify(message)}\n\n`)
    return undefined
  }
}
