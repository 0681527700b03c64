import type { OutgoingHttpHeaders } from 'node:http'
import type { FastifyBaseLogger, FastifyReply } from 'fastify'
import type { Socket } from 'node:net'
import type { NotificationStream } from '../call.js'
import { ErrorCode, internalError } from '../errors.js'
import type { RequestId } from '../protocol/wire.js'

const SSE_HEADERS = {
  'content-type': 'text/event-stream',
  'cache-control': 'no-cache, no-transform',
  'x-accel-buffering': 'no',
}

function event (json: string): string {
  return `event: message\ndata: ${json}\n\n`
}

const JSON_TYPE = 'application/json; charset=utf-8'

/** An SSE comment: every parser skips it, and every proxy sees bytes. */
const HEARTBEAT = ': keep-alive\n\n'

/** Four ticks a heartbeat: a reply quiet for five has been quiet a heartbeat, and at most a quarter more. */
const TICKS_PER_BEAT = 4
const QUIET_TICKS = TICKS_PER_BEAT + 1

/** On close the open replies' signals abort at once; what is still open after `grace` ms is ended with an error. */
export class Lifecycle {
  #closing = false
  /** A doubly linked list: a Set churned once per request keeps dead requests alive (bench/README.md#churn). */
  #head: OpenReply | undefined
  readonly #grace: number
  readonly #closeIdleConnections: () => void
  #timer: NodeJS.Timeout | undefined
  readonly #ticker: NodeJS.Timeout | undefined
  /** Counts heartbeat ticks: a reply notes it when it writes, which costs it no clock read. */
  tick = 0

  /** `heartbeat`: ms a held reply may stay quiet, or undefined for none. */
  constructor (grace: number, closeIdleConnections: () => void, heartbeat?: number) {
    this.#grace = grace
    this.#closeIdleConnections = closeIdleConnections
    if (heartbeat !== undefined) {
      this.#ticker = setInterval(() => this.#beat(), Math.max(1, Math.floor(heartbeat / TICKS_PER_BEAT)))
      this.#ticker.unref()
    }
  }

  /** Each open reply quiet for a heartbeat says so: a comment on its stream, or a stream opened for it. */
  #beat (): void {
    const tick = ++this.tick
    for (let entry = this.#head; entry !== undefined; entry = entry.next) {
      if (tick - entry.channel.quietSince >= QUIET_TICKS) entry.channel.beat()
    }
  }

  get closing (): boolean {
    return this.#closing
  }

  closeIdleConnections (): void {
    this.#closeIdleConnections()
  }

  track (channel: ReplyChannel): OpenReply {
    const entry: OpenReply = { channel, prev: undefined, next: this.#head, tracked: true }
    if (this.#head !== undefined) this.#head.prev = entry
    this.#head = entry
    return entry
  }

  untrack (entry: OpenReply): void {
    if (!entry.tracked) return
    entry.tracked = false
    if (entry.prev === undefined) this.#head = entry.next
    else entry.prev.next = entry.next
    if (entry.next !== undefined) entry.next.prev = entry.prev
    // A finished entry points at nothing: it must not keep later requests alive (see #head).
    entry.prev = undefined
    entry.next = undefined
  }

  /** The open replies, listed now: ending one while walking the list would cut the walk short. */
  #openReplies (): ReplyChannel[] {
    const list: ReplyChannel[] = []
    for (let entry = this.#head; entry !== undefined; entry = entry.next) list.push(entry.channel)
    return list
  }

  close (): void {
    this.#closing = true
    for (const channel of this.#openReplies()) channel.abort('the server is shutting down')
    if (this.#head === undefined) return
    this.#timer = setTimeout(() => {
      for (const channel of this.#openReplies()) channel.abandon()
    }, this.#grace)
  }

  closed (): void {
    clearTimeout(this.#timer)
    clearInterval(this.#ticker)
  }
}

interface OpenReply {
  readonly channel: ReplyChannel
  prev: OpenReply | undefined
  next: OpenReply | undefined
  tracked: boolean
}

/** While closing, asks the client to close its connection, so keep-alive does not hold `app.close()` open. */
export function sendClosing (reply: FastifyReply, lifecycle: Lifecycle): FastifyReply {
  return lifecycle.closing ? reply.header('connection', 'close') : reply
}

/** Pipelined replies still waiting behind an earlier one, by socket: one 'close' listener tells them all. */
const queued = new WeakMap<Socket, Set<ReplyChannel>>()

function abortOnClose (socket: Socket, channel: ReplyChannel): () => void {
  let waiting = queued.get(socket)
  if (waiting === undefined) {
    const channels = new Set<ReplyChannel>()
    waiting = channels
    queued.set(socket, channels)
    socket.once('close', () => {
      queued.delete(socket)
      for (const each of channels) each.abort('the client went away')
    })
  }
  const set = waiting
  set.add(channel)
  return () => { set.delete(channel) }
}

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
    const unqueue = raw.socket === null ? abortOnClose(reply.request.raw.socket, this) : undefined
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
    if (this.#streaming || (this.#handling && String(this.#reply.request.headers.accept).toLowerCase().includes('text/event-stream'))) {
      this.#write(HEARTBEAT)
    }
  }

  /** The call reached its handler: from now a slow reply may become an event stream. */
  handlerStarted (): void {
    this.#handling = true
  }

  #write (text: string): boolean {
    if (!this.#writable()) return false
    this.#reply.raw.write(text)
    this.quietSince = this.#lifecycle.tick
    return true
  }

  /** Whether a write may go out now, the stream opened for it if need be: not once finished, gone or cut off. */
  #writable (): boolean {
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
    const [json, status] = Array.isArray(message)
      ? [message.map((each: object) => this.#serialized(each, 200)[0]), statusCode] as const
      : this.#serialized(message, statusCode)
    this.#finished = true
    this.#lifecycle.untrack(this.#entry)
    if (!this.#streaming) {
      const text = typeof json === 'string' ? json : `[${json.join(',')}]`
      return sendClosing(this.#reply, this.#lifecycle).code(status).type(JSON_TYPE).send(text)
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
