// Ids are `<node>.<call>.<n>`, so an answer POSTed to any node reaches the node whose call waits for it.
import { randomBytes } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import { isPlainObject, setOwn, type InputRequest, type JsonObject } from '../protocol/wire.js'

/** How long a node that forwarded an answer waits for the waiting node to take it, in ms. */
export const ACK_TIMEOUT_MS = 5_000

/** Who may answer: the session and the caller of the call. */
interface Asker {
  session: string
  principal: string | null
  /** When the session expires (epoch ms): its client can no longer answer after that. */
  expiresAt?: number
  /** Counted against `limits.waitingCallsPerCaller`: a principal, or an address when anonymous; default the session. */
  caller?: string
}

interface WaitingSettings {
  waitingCalls: number
  waitingCallsPerCaller: number
}

interface ClientResponse {
  id: string | number
  result: unknown
  error: unknown
}

type RoundOutcome =
  | { kind: 'answered', responses: JsonObject, errors: Array<{ key: string, method: string, error: unknown }> }
  | { kind: 'timeout' }
  | { kind: 'expired' }
  | { kind: 'aborted', reason: unknown }
  /** Nothing was asked: as many calls wait as `limit` allows (`bound`). */
  | { kind: 'full', limit: keyof WaitingSettings, bound: number }

/** Refused: no such call, or not the client's to answer. */
type Receipt = 'accepted' | 'refused'

interface Waiting {
  asker: Asker
  pending: Map<string, { key: string, method: string }>
  responses: JsonObject
  errors: Array<{ key: string, method: string, error: unknown }>
  done: (outcome: RoundOutcome) => void
}

interface Forwarded {
  t: 'answer'
  id: string
  from: string
  ticket: string
  asker: Asker
  result: unknown
  error: unknown
}

function isForwarded (message: unknown): message is Forwarded {
  if (!isPlainObject(message) || message.t !== 'answer') return false
  const { id, from, ticket, asker } = message
  return typeof id === 'string' && typeof from === 'string' && typeof ticket === 'string' && isPlainObject(asker) &&
    typeof asker.session === 'string' && (asker.principal === null || typeof asker.principal === 'string')
}

interface Link {
  /** This node's id on the bus: what answers are addressed to. */
  readonly node: string
  readonly routed: boolean
  send (node: string, message: object): Promise<boolean>
}

export class Exchange {
  readonly node: string
  readonly #link: Link
  readonly #log: FastifyBaseLogger
  readonly #timeout: number
  readonly #ackTimeout: number
  readonly #limits: WaitingSettings
  readonly #calls = new Map<string, Waiting>()
  readonly #perCaller = new Map<string, number>()
  readonly #tickets = new Map<string, (receipt: Receipt) => void>()

  /** `timeout`: a call's wait for its client's answers; `ackTimeout`: a forwarded answer's wait to be taken (ms). */
  constructor (link: Link, log: FastifyBaseLogger, timeout: number, ackTimeout = ACK_TIMEOUT_MS,
    limits: WaitingSettings = { waitingCalls: Infinity, waitingCallsPerCaller: Infinity }) {
    this.node = link.node
    this.#link = link
    this.#log = log
    this.#timeout = timeout
    this.#ackTimeout = ackTimeout
    this.#limits = limits
  }

  /** A wait holds its whole call, so past the waiting limits nothing is sent and the outcome is `full`. */
  ask (
    asker: Asker,
    inputRequests: Record<string, InputRequest>,
    send: (request: object) => boolean,
    signal: AbortSignal,
    params: (request: InputRequest, id: string) => JsonObject
  ): Promise<RoundOutcome> {
    if (signal.aborted) return Promise.resolve({ kind: 'aborted', reason: signal.reason })
    const caller = asker.caller ?? asker.session
    const count = this.#perCaller.get(caller) ?? 0
    const limits = this.#limits
    if (count >= limits.waitingCallsPerCaller) return Promise.resolve({ kind: 'full', limit: 'waitingCallsPerCaller', bound: limits.waitingCallsPerCaller })
    if (this.#calls.size >= limits.waitingCalls) return Promise.resolve({ kind: 'full', limit: 'waitingCalls', bound: limits.waitingCalls })
    this.#perCaller.set(caller, count + 1)
    const call = randomBytes(12).toString('base64url')
    return new Promise<RoundOutcome>((resolve) => {
      const finish = (outcome: RoundOutcome): void => {
        if (!this.#calls.delete(call)) return
        const left = (this.#perCaller.get(caller) as number) - 1
        if (left === 0) this.#perCaller.delete(caller)
        else this.#perCaller.set(caller, left)
        clearTimeout(timer)
        signal.removeEventListener('abort', onAbort)
        resolve(outcome)
      }
      const onAbort = (): void => finish({ kind: 'aborted', reason: signal.reason })
      this.#calls.set(call, {
        asker,
        pending: new Map(),
        responses: Object.create(null) as JsonObject,
        errors: [],
        done: finish
      })
      // An answer can only come on the session: once it expires, the client's POST is refused, so stop waiting then.
      const untilExpiry = asker.expiresAt === undefined ? Infinity : Math.max(0, asker.expiresAt - Date.now())
      const timer = untilExpiry < this.#timeout
        ? setTimeout(() => finish({ kind: 'expired' }), untilExpiry)
        : setTimeout(() => finish({ kind: 'timeout' }), this.#timeout)
      signal.addEventListener('abort', onAbort)
      const waiting = this.#calls.get(call) as Waiting
      let n = 0
      for (const key of Object.keys(inputRequests)) {
        const request = inputRequests[key]
        const id = `${this.node}.${call}.${n}`
        waiting.pending.set(String(n++), { key, method: request.method })
        if (!send({ jsonrpc: '2.0', id, method: request.method, params: params(request, id) })) return finish({ kind: 'aborted', reason: new Error('the client went away') })
      }
    })
  }

  async answer (response: ClientResponse, asker: Asker): Promise<Receipt> {
    const parts = typeof response.id === 'string' ? response.id.split('.') : []
    if (parts.length !== 3) return 'refused'
    const [node, call, n] = parts
    if (node === this.node) return this.#take(call, n, asker, response)
    if (!this.#link.routed) return 'refused'
    const ticket = randomBytes(12).toString('base64url')
    return new Promise<Receipt>((resolve) => {
      const timer = setTimeout(() => settle('refused'), this.#ackTimeout)
      const settle = (receipt: Receipt): void => {
        clearTimeout(timer)
        this.#tickets.delete(ticket)
        resolve(receipt)
      }
      this.#tickets.set(ticket, settle)
      const message: Forwarded = { t: 'answer', id: response.id as string, from: this.node, ticket, asker, result: response.result, error: response.error }
      this.#link.send(node, message).then((received) => {
        // No node listens as `node`: it is gone, and its calls with it.
        if (!received) settle('refused')
      }, (error: unknown) => {
        this.#log.error({ err: error }, 'mocapi could not forward a client\'s answer over the bus')
        settle('refused')
      })
    })
  }

  #take (call: string, n: string, asker: Asker, response: { result: unknown, error: unknown }): Receipt {
    const waiting = this.#calls.get(call)
    if (waiting === undefined || waiting.asker.session !== asker.session || waiting.asker.principal !== asker.principal) return 'refused'
    const request = waiting.pending.get(n)
    if (request === undefined) return 'refused'
    waiting.pending.delete(n)
    if (response.error !== undefined) {
      waiting.errors.push({ key: request.key, method: request.method, error: response.error })
    } else {
      setOwn(waiting.responses, request.key, response.result)
    }
    if (waiting.pending.size === 0) waiting.done({ kind: 'answered', responses: waiting.responses, errors: waiting.errors })
    return 'accepted'
  }

  received (message: object): void {
    if (isForwarded(message)) {
      const [, call, n] = message.id.split('.')
      const receipt = this.#take(call, n ?? '', message.asker, message)
      // `delivery` is the ack's field on the bus, which nodes of other releases read.
      this.#link.send(message.from, { t: 'ack', ticket: message.ticket, delivery: receipt })
        .catch((error: unknown) => this.#log.error({ err: error }, 'mocapi could not acknowledge a forwarded answer over the bus'))
      return
    }
    const ack = message as { t?: unknown, ticket?: unknown, delivery?: unknown }
    if (ack.t === 'ack' && typeof ack.ticket === 'string' && (ack.delivery === 'accepted' || ack.delivery === 'refused')) {
      this.#tickets.get(ack.ticket)?.(ack.delivery)
    }
  }
}
