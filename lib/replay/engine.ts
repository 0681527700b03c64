import type { Asked, CallState, Delivery } from '../call.js'
import { ErrorCode, McpError, invalidParams, unboundPrincipal } from '../errors.js'
import type { InputRequiredResult } from '../protocol/wire.js'
import { ReplayPass } from './pass.js'

export type Outcome<T> = { complete: T } | InputRequiredResult | { parked: Asked }

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

  #budgetOf (call: CallState): () => Delivery['budget'] {
    return () => call.delivery.budget
  }

  /** Runs passes until the handler completes or a round goes out; the call keeps the round it ran (`call.round`). */
  async run<T> (call: CallState, label: string, fn: () => T | PromiseLike<T>): Promise<Outcome<T>> {
    const started = call.delivery.start(call)
    let { ledger, responses, round, effects = [] } = started instanceof Promise ? await started : started
    call.stream.handlerStarted?.()
    for (;;) {
      // A client gone before the handler began aborted before anyone listened: a handler awaiting the abort would hang.
      if (call.stream.aborted) throw new McpError(ErrorCode.InternalError, `${label} did not run: ${(call.stream.signal.reason as Error).message}`)
      const budget = { size: this.#size, delivery: this.#budgetOf(call), onceBytes: this.#onceBytes }
      const pass = new ReplayPass(ledger, responses, budget, effects)
      call.enter(pass, round + 1)
      const outcome = await pass.run(fn)
      const log = call.request.log
      if (log.level === 'debug' || log.level === 'trace') {
        log.debug({ mcp: { handler: label, round: round + 1, ...pass.counts } }, 'mocapi replay pass')
      }
      if (outcome.kind === 'complete') return { complete: outcome.value }
      if (call.principal.state === 'unbound') throw unboundPrincipal()
      if (round >= this.#maxRounds) {
        throw invalidParams(`${label} still needs input after ${this.#maxRounds} rounds, the limit (requestState.maxRounds)`)
      }
      // Read now: a call that became a task delivers its questions through the task.
      const delivered = await call.delivery.deliver(call, label, outcome, round + 1)
      if (delivered.kind === 'reply') return delivered.result
      if (delivered.kind === 'parked') return { parked: outcome }
      ledger = outcome.ledger
      effects = outcome.effects
      responses = delivered.responses
      round++
    }
  }
}
