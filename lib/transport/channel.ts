import type { OutgoingHttpHeaders } from 'node:http'
import type { FastifyBaseLogger, FastifyReply } from 'fastify'
import type { NotificationStream } from '../call.js'
import { ErrorCode, internalError } from '../errors.js'
import type { RequestId } from '../protocol/wire.js'
import { HEARTBEAT, sendClosing, type Lifecycle, type OpenReply } from './lifecycle.js'

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
}

function event (json: string): string {
  return `event: message\ndata: ${json}\n\n`
}

const JSON_TYPE = 'application/json; charset=utf-8'

export interface ChannelSettings {
  /** Bytes an event stream may hold unsent (a client that does not read) before it is ended. */
  maxBufferedBytes: number
}

/** Plain JSON until the handler emits a notification, which makes it an event stream ending with the response. */
export class ReplyChannel implements NotificationStream {
  readonly #reply: FastifyReply
  readonly #lifecycle: Lifecycle
  readonly #limits: ChannelSettings
  readonly #log: FastifyBaseLogger
  readonly #id: RequestId | null
  #streaming = false
  #handling = false
  /** Whether the client takes `text/event-stream`, so a slow reply may become one: read at its first beat. */
  #takesStream: boolean | undefined
  #finished = false
  #controller: AbortController | undefined
  #abortedFor: string | undefined
  readonly #entry: OpenReply
  /** The heartbeat tick of its last write (or of its making). */
  quietSince: number

  constructor (
    reply: FastifyReply,
    id: RequestId | null,
    lifecycle: Lifecycle,
    limits: ChannelSettings,
    log: FastifyBaseLogger
  ) {
    this.#reply = reply
    this.#id = id
    this.#lifecycle = lifecycle
    this.#limits = limits
    this.#log = log
    this.quietSince = lifecycle.tick
    this.#entry = lifecycle.track(this)
    const raw = reply.raw
    // A queued pipelined reply has no socket, and Node closes only the reply that has it: the socket must tell it.
    const unqueue = raw.socket === null ? lifecycle.abortOnClose(reply.request.raw.socket, this) : undefined
    raw.once('close', () => {
      unqueue?.()
      lifecycle.untrack(this.#entry)
      if (!raw.writableFinished) this.abort('the client went away')
    })
  }

  get closed (): boolean {
    const raw = this.#reply.raw
    if (raw.destroyed) return !raw.writableFinished
    return raw.socket === null && this.#reply.request.raw.socket.destroyed
  }

  get signal (): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      const reason = this.#abortedFor ?? (this.closed ? 'the client went away' : undefined)
      if (reason !== undefined) this.#controller.abort(new DOMException(reason, 'AbortError'))
    }
    return this.#controller.signal
  }

  /** Whether the signal is aborted, or would be once read: most replies never make one, and asking must not. */
  get aborted (): boolean {
    return this.#controller === undefined
      ? this.#abortedFor !== undefined || this.closed
      : this.#controller.signal.aborted
  }

  /** Until the signal is read, only the first reason is kept and no controller made (bench/README.md#lazy-abort). */
  abort (reason: string): void {
    if (this.#controller === undefined) this.#abortedFor ??= reason
    else if (!this.#controller.signal.aborted) this.#controller.abort(new DOMException(reason, 'AbortError'))
  }

  /** Sends one message, opening the stream if needed; false once the client is gone, the reply done, or cut off. */
  notify (message: object): boolean {
    return this.#write(event(JSON.stringify(message)))
  }

  /**
   * A comment on the stream; a reply not yet sent becomes one, for a client that takes `text/event-stream`, once its
   * handler runs: what comes before (access and scope checks) may still be a 401 or 403 that must stay HTTP.
   */
  beat (): void {
    if (this.#streaming || (this.#handling && (this.#takesStream ??= this.#acceptsStream()))) this.#write(HEARTBEAT)
  }

  #acceptsStream (): boolean {
    return String(this.#reply.request.headers.accept).toLowerCase().includes('text/event-stream')
  }

  /** The call reached its handler: from now a slow reply may become an event stream. */
  handlerStarted (): void {
    this.#handling = true
  }

  #write (text: string): boolean {
    if (!this.#openForWrite()) return false
    this.#reply.raw.write(text)
    this.quietSince = this.#lifecycle.tick
    return true
  }

  /** Whether a write may go out now, the stream opened for it if need be: not once finished, gone or cut off. */
  #openForWrite (): boolean {
    if (this.#finished || this.closed) return false
    const raw = this.#reply.raw
    if (!this.#streaming) this.open()
    else if (raw.writableLength > this.#limits.maxBufferedBytes) {
      this.#cutOff(raw.writableLength)
      return false
    }
    return true
  }

  open (): void {
    this.#streaming = true
    this.#reply.hijack()
    // Headers go out now, not with the first event: a stream may wait long for one. Those the app's hooks set on the
    // reply (CORS, rate limits, request ids) go with them, as they would on a reply Fastify sends.
    const headers = { ...this.#reply.getHeaders(), ...SSE_HEADERS } as OutgoingHttpHeaders
    this.#reply.raw.writeHead(200, headers).flushHeaders()
    this.quietSince = this.#lifecycle.tick
  }

  end (): void {
    this.#finished = true
    this.#lifecycle.untrack(this.#entry)
    const raw = this.#reply.raw
    if (this.closed) raw.destroy()
    else raw.end()
  }

  #cutOff (buffered: number): void {
    this.#finished = true
    this.#log.warn({ mcp: { bufferedBytes: buffered, limit: this.#limits.maxBufferedBytes } },
      'mocapi ended an event stream: its client does not read, and the unsent messages passed limits.streamBufferBytes')
    this.abort('the client stopped reading')
    this.#reply.raw.destroy()
  }

  /** Sends the response (or a batch's), serialized first: one that cannot be is replaced by -32603, and logged. */
  finish (message: object, statusCode: number): FastifyReply | undefined {
    if (this.#finished) return undefined
    if (!Array.isArray(message)) return this.send(...this.serialize(message, statusCode))
    const each = message.map((member: object) => this.serialize(member, 200)[0])
    return this.send(this.#streaming ? each : `[${each.join(',')}]`, statusCode)
  }

  /** A message's JSON and the status to send it with: -32603 (500), logged, for one JSON cannot write. */
  serialize (message: object, statusCode: number): [string, number] {
    return this.#serialized(message, statusCode)
  }

  /** Sends what {@link serialize} gave (a batch's members, as their events, on a stream). */
  send (json: string | string[], statusCode: number): FastifyReply | undefined {
    if (this.#finished) return undefined
    this.#finished = true
    this.#lifecycle.untrack(this.#entry)
    if (!this.#streaming) {
      return sendClosing(this.#reply, this.#lifecycle).code(statusCode).type(JSON_TYPE).send(json as string)
    }
    const raw = this.#reply.raw
    if (this.#lifecycle.closing) raw.once('finish', () => setImmediate(() => this.#lifecycle.closeIdleConnections()))
    // A client that left may have left its socket half-open: release it rather than wait for a timeout.
    if (this.closed) raw.destroy()
    else raw.end(typeof json === 'string' ? event(json) : json.map(event).join(''))
    return undefined
  }

  #serialized (message: object, statusCode: number): [string, number] {
    try {
      return [JSON.stringify(message), statusCode]
    } catch (error) {
      const { id } = message as { id: RequestId | null }
      this.#log.error({ err: error, mcp: { id } }, 'mocapi could not serialize a reply (a value JSON cannot write, such as a BigInt, or one too large); the client gets -32603')
      const failed = internalError('The server could not serialize its reply: a value in it cannot be written as JSON')
      return [JSON.stringify({ jsonrpc: '2.0', id, error: failed.toJSON() }), failed.statusCode]
    }
  }

  /** Ends a reply whose handler outlived the shutdown grace period (an open one: a finished reply is untracked). */
  abandon (): void {
    this.#log.error('mocapi ended a request still running when the shutdown grace period (shutdownGrace) ran out')
    if (this.#streaming) {
      this.#finished = true
      this.#reply.raw.destroy()
      return
    }
    this.finish({ jsonrpc: '2.0', id: this.#id, error: { code: ErrorCode.InternalError, message: 'The server shut down before the request completed' } }, 503)
  }
}
