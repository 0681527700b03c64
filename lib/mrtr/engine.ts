import { kCallState, type McpContext } from '../context.js'
import type { FormAnswers } from '../elicitation/answers.js'
import { ErrorCode, McpError, invalidParams, invalidRequest } from '../errors.js'
import type { InputRequest, JsonObject } from '../protocol/wire.js'
import type { LedgerEntry } from './codec.js'
import { ReplayPass, type RoundBudget } from './pass.js'

/** The wire shape of an `input_required` result. */
export interface InputRequiredResult {
  resultType: 'input_required'
  inputRequests: Record<string, InputRequest>
  requestState: string
}

/** Where a request's replay starts: the ledger so far, the answers the request brings, the rounds already run. */
export interface ReplayStart {
  ledger: LedgerEntry[]
  responses: JsonObject | undefined
  round: number
}

/** The questions a pass asked, and the ledger that holds them. */
export interface Asked {
  inputRequests: Record<string, InputRequest>
  ledger: LedgerEntry[]
}

/** What a delivery made of a pass that asked: a reply for the client now, or its answers to run the next pass with. */
export type Delivered =
  | { kind: 'reply', result: InputRequiredResult }
  | { kind: 'replay', responses: JsonObject }

/**
 * How the questions of a request's passes reach its client and how the answers come back: one
 * way per era (a sealed requestState in 2026-07-28, the call's stream in a 2025-era session).
 */
export interface Delivery {
  /** Where the replay of this request starts; throws when what it carries is refused. */
  start (ctx: McpContext): ReplayStart
  /** Takes the questions of the `round`-th pass to the client. */
  deliver (ctx: McpContext, label: string, asked: Asked, round: number): Delivered | Promise<Delivered>
}

/** The refusal of an interactive round for a caller who is authenticated but has no principal to bind. */
export function unboundPrincipal (): Error {
  return invalidRequest('This request is authenticated, but mocapi found no principal to bind its requestState to ' +
    '(request.user has no string or numeric sub): the server must set the principal option', 403)
}

/**
 * Runs handlers under the replay pattern (docs/decisions/0001-elicitation-by-replay.md): each
 * pass runs the handler from the top with the context bound to it, the Nth input request reading
 * ledger slot N. A pass that completes is the result; a pass that asks goes to the request's
 * delivery, which either answers the client now or brings the answers for the next pass.
 */
export class ReplayEngine {
  readonly #maxRounds: number
  readonly #forms: FormAnswers
  readonly #budget: RoundBudget

  constructor (maxRounds: number, forms: FormAnswers, budget: RoundBudget) {
    this.#maxRounds = maxRounds
    this.#forms = forms
    this.#budget = budget
  }

  /**
   * Runs a handler under the replay pattern: its value, or the `input_required` result that asks
   * for what it still needs.
   */
  async run<T> (
    ctx: McpContext,
    label: string,
    fn: () => T | PromiseLike<T>
  ): Promise<{ complete: T } | InputRequiredResult> {
    const state = ctx[kCallState]
    const delivery = state.delivery
    let { ledger, responses, round } = delivery.start(ctx)
    for (;;) {
      // A client that left before the handler began (while the app's hooks ran, or between rounds) aborted the signal
      // before anyone could listen: a handler that waits for the abort would never hear it. It does not run.
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
      const delivered = await delivery.deliver(ctx, label, outcome, round + 1)
      if (delivered.kind === 'reply') return delivered.result
      ledger = outcome.ledger
      responses = delivered.responses
      round++
    }
  }
}
