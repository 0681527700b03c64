// The replies a registration holds open: their shutdown, the heartbeat that keeps them talking, and pipelined ones.
import type { FastifyReply } from 'fastify'
import type { Socket } from 'node:net'

/** An SSE comment: every parser skips it, and every proxy sees bytes. */
export const HEARTBEAT = ': keep-alive\n\n'

/** Four ticks a heartbeat: a reply quiet for five has been quiet a heartbeat, and at most a quarter more. */
const TICKS_PER_BEAT = 4
const QUIET_TICKS = TICKS_PER_BEAT + 1

/** What the lifecycle asks of an open reply. */
export interface HeldReply {
  /** The heartbeat tick of its last write. */
  readonly quietSince: number
  beat (): void
  abort (reason: string): void
  abandon (): void
}

export interface OpenReply {
  readonly channel: HeldReply
  prev: OpenReply | undefined
  next: OpenReply | undefined
  tracked: boolean
}

/**
 * One unref'd ticker for every reply of the registration, where a timer per stream would be thousands: each reply
 * notes the tick of its last write (no clock read per write), and a tick beats the replies quiet for a heartbeat.
 */
class Heartbeat {
  readonly #ticker: NodeJS.Timeout
  /** Counts ticks since the registration. */
  tick = 0

  constructor (ms: number, beat: (tick: number) => void) {
    this.#ticker = setInterval(() => beat(++this.tick), Math.max(1, Math.floor(ms / TICKS_PER_BEAT)))
    this.#ticker.unref()
  }

  stop (): void {
    clearInterval(this.#ticker)
  }
}

/** On close the open replies' signals abort at once; what is still open after `grace` ms is ended with an error. */
export class Lifecycle {
  #closing = false
  /** A doubly linked list: a Set churned once per request keeps dead requests alive (bench/README.md#churn). */
  #head: OpenReply | undefined
  readonly #grace: number
  readonly #closeIdleConnections: () => void
  #timer: NodeJS.Timeout | undefined
  readonly #heartbeat: Heartbeat | undefined
  /** Pipelined replies still waiting behind an earlier one, by socket: one 'close' listener tells them all. */
  readonly #queued = new WeakMap<Socket, Set<HeldReply>>()

  /** `heartbeat`: ms a held reply may stay quiet, or undefined for none. */
  constructor (grace: number, closeIdleConnections: () => void, heartbeat?: number) {
    this.#grace = grace
    this.#closeIdleConnections = closeIdleConnections
    if (heartbeat !== undefined) this.#heartbeat = new Heartbeat(heartbeat, (tick) => this.#beat(tick))
  }

  /** The heartbeat's tick now (0 without one): a reply notes it when it writes. */
  get tick (): number {
    return this.#heartbeat?.tick ?? 0
  }

  /** Each open reply quiet for a heartbeat says so: a comment on its stream, or a stream opened for it. */
  #beat (tick: number): void {
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

  track (channel: HeldReply): OpenReply {
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

  /** A queued pipelined reply has no socket, and Node closes only the reply that has it: the socket must tell it. */
  abortOnClose (socket: Socket, channel: HeldReply): () => void {
    let waiting = this.#queued.get(socket)
    if (waiting === undefined) {
      const channels = new Set<HeldReply>()
      waiting = channels
      this.#queued.set(socket, channels)
      socket.once('close', () => {
        this.#queued.delete(socket)
        for (const each of channels) each.abort('the client went away')
      })
    }
    const set = waiting
    set.add(channel)
    return () => { set.delete(channel) }
  }

  /** The open replies, listed now: ending one while walking the list would cut the walk short. */
  #openReplies (): HeldReply[] {
    const list: HeldReply[] = []
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
    this.#heartbeat?.stop()
  }
}

/** While closing, asks the client to close its connection, so keep-alive does not hold `app.close()` open. */
export function sendClosing (reply: FastifyReply, lifecycle: Lifecycle): FastifyReply {
  return lifecycle.closing ? reply.header('connection', 'close') : reply
}
