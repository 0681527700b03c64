import { kCallState, type McpContext } from '../context.js'
import type { FormAnswers } from '../elicitation/answers.js'
import { ErrorCode, McpError, invalidParams, invalidRequest } from '../errors.js'
import type { InputRequest, JsonObject } from '../protocol/wire.js'
import type { LedgerEntry } from '../modern/codec.js'
import { ReplayPass, type RoundBudget } from './pass.js'

/** The wire shape of an `input_required` result. */
export interface InputRequiredResult {
  resultType: 'input_required'
  inputRequests: Record<string, InputRequest>
  requestState: string
}

/** Where a request's replay starts: the ledger so far, the answers it brings, the rounds already run. */
export interface ReplayStart {
  ledger: LedgerEntry[]
  responses: JsonObject | undefined
  round: number
}

export interface Asked {
  inputRequests: Record<string, InputRequest>
  ledger: LedgerEntry[]
}

/** A reply for the client now, or the answers to run the next pass with. */
export type Delivered =
  | { kind: 'reply', result: InputRequiredResult }
  | { kind: 'replay', responses: JsonObject }

/** How questions reach the client and answers come back: a sealed requestState (2026-07-28), or the 2025 stream. */
export interface Delivery {
  /** Throws when what the request carries is refused. */
  start (ctx: McpContext): ReplayStart
  deliver (ctx: McpContext, label: string, asked: Asked, round: number): Delivered | Promise<Delivered>
}

/** Refuses an authenticated caller with no principal to bind what it starts to: a round's requestState, a task. */
export function unboundPrincipal (what = 'its requestState'): Error {
  return invalidRequest(`This request is authenticated, but mocapi found no principal to bind ${what} to ` +
    '(request.user has no string or numeric sub): the server must set the principal option', 403)
}

/** Replays a handler from the top on each pass (docs/decisions/0001-elicitation-by-replay.md). */
export class ReplayEngine {
  readonly #maxRounds: number
  readonly #forms: FormAnswers
  readonly #budget: RoundBudget

  constructor (maxRounds: number, forms: FormAnswers, budget: RoundBudget) {
    this.#maxRounds = maxRounds
    this.#forms = forms
    this.#budget = budget
  }

  async run<T> (
    ctx: McpContext,
    label: string,
    fn: () => T | PromiseLike<T>
  ): Promise<{ complete: T } | InputRequiredResult> {
    const state = ctx[kCallState]
    let { ledger, responses, round } = state.delivery.start(ctx)
    for (;;) {
      // A client gone before the handler began aborted before anyone listened: a handler awaiting the abort would hang.
      if (state.stream.aborted) throw new McpError(ErrorCode.InternalError, `${label} did not run: ${(state.stream.signal.reason as Error).message}`)
      const pass = new ReplayPass(ledger, responses, this.#forms, this.#budget)
      state.enter(pass, round + 1)
      const outcome = await pass.run(fn)
      const log = ctx.logger
      if (log.level === 'debug' || log.level === 'trace') {
        log.debug({ mcp: { handler: label, round: round + 1, ...pass.counts } }, 'mocapi replay pass')
      }
      if (outcome.kind === 'complete') return { complete: outcome.value }
      if (state.principal.state === 'unbound') throw unboundPrincipal()
      if (round >= this.#maxRounds) {
        throw invalidParams(`${label} still needs input after ${this.#maxRounds} rounds, the limit (requestState.maxRounds)`)
      }
      // Read now: a call that became a task delivers its questions through the task.
      const delivered = await state.delivery.deliver(ctx, label, outcome, round + 1)
      if (delivered.kind === 'reply') return delivered.result
      ledger = outcome.ledger
      responses = delivered.responses
      round++
    }
  }
}
