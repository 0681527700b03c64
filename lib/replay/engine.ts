import type { Asked, CallState, Delivery } from '../call.js'
import { ErrorCode, McpError, invalidParams, unboundPrincipal } from '../errors.js'
import type { InputRequiredResult } from '../protocol/wire.js'
import { ReplayPass, type RoundBudget } from './pass.js'

/** How a call's passes ended, and the round the last one ran as (1 for a first call). */
export type Outcome<T> =
  | { kind: 'complete', value: T, round: number }
  | { kind: 'input_required', result: InputRequiredResult, round: number }
  /** A task stored the questions: nothing to reply. */
  | { kind: 'parked', asked: Asked, round: number }

/** Replays a handler from the top on each pass (docs/decisions/0001-elicitation-by-replay.md). */
export class ReplayEngine {
  readonly #maxRounds: number
  /** Characters the requests of one round may take as sent (bodyLimit), whatever the delivery. */
  readonly #size: number
  /** UTF-8 bytes one value of `ctx.once` may take (`once.maxBytes`). */
  readonly #onceBytes: number

  constructor (maxRounds: number, size: number, onceBytes: number) {
    this.#maxRounds = maxRounds
    this.#size = size
    this.#onceBytes = onceBytes
  }

  /** Runs passes until the handler completes or a round goes out. */
  async run<T> (call: CallState, label: string, fn: () => T | PromiseLike<T>): Promise<Outcome<T>> {
    const started = call.delivery.start(call)
    let { journal, responses, round } = started instanceof Promise ? await started : started
    // The call's id is minted when first read (`ctx.callId`), then carried in the journal: most calls never read it.
    if (journal.callId !== undefined) call.callId = journal.callId
    // Read at each ask, not kept: a call that detaches mid-pass carries its questions in its task from then on.
    const budget: RoundBudget = {
      size: this.#size,
      delivery: (): Delivery['budget'] => call.delivery.budget,
      onceBytes: this.#onceBytes,
      recorded: (kept) => call.delivery.recorded?.(call, kept),
    }
    for (;;) {
      // A client gone before the handler began aborted before anyone listened: a handler awaiting the abort would hang.
      if (call.stream.aborted) throw new McpError(ErrorCode.InternalError, `${label} did not run: ${(call.stream.signal.reason as Error).message}`)
      call.begin()
      const pass = new ReplayPass(journal, responses, budget)
      call.enter(pass, round + 1)
      const outcome = await pass.run(fn)
      const log = call.request.log
      if (log.level === 'debug' || log.level === 'trace') {
        const answered = journal.answers.filter((slot) => 'answer' in slot).length
        log.debug({ mcp: { handler: label, round: round + 1, answered, pending: journal.answers.length - answered } }, 'mocapi replay pass')
      }
      journal.callId ??= call.callId
      if (outcome.kind === 'complete') return { kind: 'complete', value: outcome.value, round: round + 1 }
      if (call.principal.state === 'unbound') throw unboundPrincipal()
      if (round >= this.#maxRounds) {
        throw invalidParams(`${label} still needs input after ${this.#maxRounds} rounds, the limit (requestState.maxRounds)`)
      }
      // Read now: a call that became a task delivers its questions through the task.
      const delivered = await call.delivery.deliver(call, label, outcome, round + 1)
      if (delivered.kind === 'reply') return { kind: 'input_required', result: delivered.result, round: round + 1 }
      if (delivered.kind === 'parked') return { kind: 'parked', asked: outcome, round: round + 1 }
      journal = outcome.journal
      responses = delivered.responses
      round++
    }
  }
}
