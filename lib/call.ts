/**
 * The call record: what mocapi keeps of one request beyond the context's public fields, and the two ports a pass of
 * its handler talks to (the delivery its questions go through, the pass that answers its asks).
 */
import type { FastifyRequest } from 'fastify'
import type { Question } from './elicitation/questions.js'
import type { ClientCapabilities, ClientState, InputRequest, InputRequiredResult, JsonObject, RequestId } from './protocol/wire.js'

export interface NotificationStream {
  /** False when the message could not be sent (the client left, the reply is done). */
  notify (message: object): boolean
  readonly signal: AbortSignal
  /** Read without making the signal, which most replies never need. */
  readonly aborted: boolean
  /** Takes progress itself: a task's stream makes it the task's status message. */
  progress? (progress: number, total: number | undefined, message: string | undefined): void
}

/** `unbound`: authenticated, but no principal could be derived, so interactive rounds and tasks are refused. */
type PrincipalState = 'anonymous' | 'bound' | 'unbound'

export interface Principal {
  value: string | null
  state: PrincipalState
}

/** One ledger slot: the input key `k`, the request's fingerprint `f`, the answer `r` (absent while pending). */
export interface LedgerEntry {
  k: string
  f: string
  r?: unknown
}

/** The pass a handler runs in. */
export interface AskTarget {
  ask (question: Question, key: string | undefined, capabilities: ClientCapabilities, unavailable?: string):
  Promise<unknown>
  /** Aborted when the pass is over. */
  readonly signal: AbortSignal
  /** Whether the pass has asked questions it waits to send. */
  readonly asking: boolean
  /** Its input requests so far, with their answers. */
  readonly ledger: readonly LedgerEntry[]
}

/** Where a call's replay starts: the ledger so far, the answers it brings, the rounds already run. */
export interface ReplayStart {
  ledger: LedgerEntry[]
  responses: JsonObject | undefined
  round: number
}

/** What a pass that yielded asked, and the ledger it leaves. */
export interface Asked {
  inputRequests: Record<string, InputRequest>
  ledger: LedgerEntry[]
}

/**
 * How a round ended for the delivery: a reply for the client now (a requestState), the answers to run the next pass
 * with (the 2025 stream), or parked (a task stored the questions; nothing to reply, the next pass runs elsewhere).
 */
export type Delivered =
  | { kind: 'reply', result: InputRequiredResult }
  | { kind: 'replay', responses: JsonObject }
  | { kind: 'parked' }

/**
 * How questions reach the client and answers come back: a sealed requestState (2026-07-28), the call's stream (2025),
 * a task's record. A call that becomes a task mid-pass gets the task's delivery ({@link CallState.detachTo}).
 */
export interface Delivery {
  /** Throws when what the request carries is refused. */
  start (call: CallState): ReplayStart
  deliver (call: CallState, label: string, asked: Asked, round: number): Delivered | Promise<Delivered>
  /**
   * What one round's new ledger slots may take when the ledger travels (in a token, a task's record), and why a round
   * past it is refused, in the delivery's own words. A ledger that stays in memory has none.
   */
  readonly budget?: { readonly bytes: number, tooLarge (requests: number): string }
}

/** Aborts `controller` when `signal` aborts; returns the function that stops it. */
export function follow (controller: AbortController, signal: AbortSignal): () => void {
  const abort = (): void => { controller.abort(signal.reason) }
  if (signal.aborted) abort()
  else signal.addEventListener('abort', abort, { once: true })
  return () => { signal.removeEventListener('abort', abort) }
}

/** Not `AbortSignal.any`: Node 20 keeps a signal it makes for good once it has a listener (nodejs/node#54614). */
export function eitherAborts (a: AbortSignal, b: AbortSignal): AbortSignal {
  const controller = new AbortController()
  const stops = [follow(controller, a), follow(controller, b)]
  controller.signal.addEventListener('abort', () => { for (const stop of stops) stop() }, { once: true })
  return controller.signal
}

/** @internal What mocapi keeps of a request beyond the context's public fields. */
export class CallState {
  readonly request: FastifyRequest
  readonly id: RequestId
  readonly method: string
  readonly params: JsonObject
  readonly client: ClientState
  readonly principal: Principal
  stream: NotificationStream
  delivery: Delivery
  /** What `ctx.detach()` calls: set on a task-capable call from a client with the tasks extension. */
  detacher: (() => Promise<void>) | undefined
  /** Undefined outside an interactive handler. */
  target: AskTarget | undefined
  /** 1 for a first call, 0 for a method that takes no rounds. */
  round = 0
  #controller: AbortController | undefined
  #unfollow: (() => void) | undefined
  lastProgress = -Infinity
  /** A 2025-era call replays on one stream, and its client must hear progress increase. */
  sentProgress = -Infinity
  /** `log()` calls in this pass, and the most any pass made: a replayed pass's calls are not sent again. */
  passLogs = 0
  madeLogs = 0

  constructor (
    request: FastifyRequest,
    message: { id: RequestId, method: string, params: JsonObject },
    client: ClientState,
    principal: Principal,
    stream: NotificationStream,
    delivery: Delivery
  ) {
    this.request = request
    this.id = message.id
    this.method = message.method
    this.params = message.params
    this.client = client
    this.principal = principal
    this.stream = stream
    this.delivery = delivery
  }

  enter (target: AskTarget, round: number): void {
    this.target = target
    this.round = round
    this.#controller = undefined
    this.#unfollow = undefined
    this.lastProgress = -Infinity
    this.passLogs = 0
  }

  /** The context's signal in a pass: aborted by its stream, by the pass ending, and by what the call detached to. */
  passSignal (target: AskTarget): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      this.#unfollow = follow(this.#controller, this.stream.signal)
      follow(this.#controller, target.signal)
    }
    return this.#controller.signal
  }

  /** The call goes on as a task: its notifications go to `stream`, its questions through `delivery`. */
  detachTo (stream: NotificationStream, delivery: Delivery): void {
    this.stream = stream
    this.delivery = delivery
    this.detacher = undefined
    // The call's reply is done: its client leaving no longer concerns the task.
    this.#unfollow?.()
    if (this.#controller !== undefined) this.#unfollow = follow(this.#controller, stream.signal)
  }
}
