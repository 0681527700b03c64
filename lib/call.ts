// The call record, and the two ports a handler's pass talks to: its delivery, and the pass that answers its asks.
import type { FastifyRequest } from 'fastify'
import type { FormAnswers } from './elicitation/answers.js'
import type { Question } from './elicitation/questions.js'
import type { ClientCapabilities, ClientState, InputRequest, InputRequiredResult, JsonObject, RequestId } from './protocol/wire.js'
import type { Journal } from './journal.js'

export interface NotificationStream {
  /** False when the message could not be sent (the client left, the reply is done). */
  notify (message: object): boolean
  readonly signal: AbortSignal
  /** Read without making the signal, which most replies never need. */
  readonly aborted: boolean
  /** The call reached its handler: the reply may now wait long (a request's reply channel opens a stream then). */
  handlerStarted? (): void
  /** Takes progress itself: a task's stream makes it the task's status message. */
  progress? (progress: number, total: number | undefined, message: string | undefined): void
}

/** `unbound`: authenticated, but no principal could be derived, so interactive rounds and tasks are refused. */
type PrincipalState = 'anonymous' | 'bound' | 'unbound'

export interface Principal {
  value: string | null
  state: PrincipalState
}

export interface AskTarget {
  ask (question: Question, key: string | undefined, capabilities: ClientCapabilities, unavailable?: string):
  Promise<unknown>
  once (key: string, fn: () => unknown): Promise<unknown>
  readonly signal: AbortSignal
  readonly asking: boolean
  readonly journal: Journal
}

export interface ReplayStart {
  journal: Journal
  responses: JsonObject | undefined
  round: number
}

export interface Asked {
  inputRequests: Record<string, InputRequest>
  journal: Journal
}

/** `replay`: the 2025 stream's answers, for the next pass; `parked`: a task stored the questions, nothing to reply. */
export type Delivered =
  | { kind: 'reply', result: InputRequiredResult }
  | { kind: 'replay', responses: JsonObject }
  | { kind: 'parked' }

/** A sealed requestState (2026-07-28), the call's stream (2025) or a task's record; see {@link CallState.detachTo}. */
export interface Delivery {
  /** Throws (or rejects) when what the request carries is refused. */
  start (call: CallState): ReplayStart | Promise<ReplayStart>
  deliver (call: CallState, label: string, asked: Asked, round: number): Delivered | Promise<Delivered>
  /** Bytes a round's new ledger slots may take where the ledger travels, and the refusal in the delivery's words. */
  readonly budget?: { readonly bytes: number, tooLarge (requests: number): string }
  /** Keeps the journal as soon as an effect is recorded, where a node's death would lose it (a task's record). */
  recorded? (call: CallState, journal: Journal): Promise<void>
}

function follow (controller: AbortController, signal: AbortSignal): () => void {
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

/** What mocapi keeps of a request beyond the context's public fields (not part of the public API). */
export class CallState {
  readonly request: FastifyRequest
  readonly id: RequestId
  readonly method: string
  readonly params: JsonObject
  readonly client: ClientState
  readonly principal: Principal
  /** The registration's forms, which a question finds its schema's form in. */
  readonly forms: FormAnswers
  stream: NotificationStream
  delivery: Delivery
  /** What `ctx.detach()` calls: set on a task-capable call from a client with the tasks extension. */
  detacher: (() => Promise<void>) | undefined
  target: AskTarget | undefined
  /** 1 for a first call, 0 for a method that takes no rounds. */
  round = 0
  /** `ctx.callId`: set from the journal when a pass begins, or from an idempotency key before. */
  callId: string | undefined
  /** Whether the call reached its handler: a request refused before keeps no receipt. */
  ran = false
  /** Until when some node may take the requestState token this round retried (epoch ms): its receipt lives as long. */
  tokenTakenUntil: number | undefined
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
    delivery: Delivery,
    forms: FormAnswers
  ) {
    this.forms = forms
    this.request = request
    this.id = message.id
    this.method = message.method
    this.params = message.params
    this.client = client
    this.principal = principal
    this.stream = stream
    this.delivery = delivery
  }

  /** The call reaches its handler: it takes effect from now (a receipt keeps it), and a slow reply may stream. */
  begin (): void {
    this.ran = true
    this.stream.handlerStarted?.()
  }

  enter (target: AskTarget, round: number): void {
    this.target = target
    this.round = round
    this.#controller = undefined
    this.#unfollow = undefined
    this.lastProgress = -Infinity
    this.passLogs = 0
  }

  passSignal (target: AskTarget): AbortSignal {
    if (this.#controller === undefined) {
      this.#controller = new AbortController()
      this.#unfollow = follow(this.#controller, this.stream.signal)
      follow(this.#controller, target.signal)
    }
    return this.#controller.signal
  }

  detachTo (stream: NotificationStream, delivery: Delivery): void {
    this.stream = stream
    this.delivery = delivery
    this.detacher = undefined
    // The call's reply is done: its client leaving no longer concerns the task.
    this.#unfollow?.()
    if (this.#controller !== undefined) this.#unfollow = follow(this.#controller, stream.signal)
  }
}
