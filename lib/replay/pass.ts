import type { AskTarget, Delivery } from '../call.js'
import { defaultKey, type Question } from '../elicitation/questions.js'
import { noop } from '../check.js'
import { ElicitationLedgerMismatchError, InvalidArgumentError, invalidParams, missingCapability } from '../errors.js'
import { jsonCopy, notJson } from '../protocol/json.js'
import { setOwn, type ClientCapabilities, type InputRequest, type JsonObject } from '../protocol/wire.js'
import { differingPart, fingerprint } from './fingerprint.js'
import type { AnswerSlot, Journal } from '../journal.js'

type PassOutcome<T> =
  | { kind: 'complete', value: T }
  | { kind: 'input_required', inputRequests: Record<string, InputRequest>, journal: Journal }

const INPUT_REQUIRED = 'mocapi: this round needs input from the client; the handler runs again when the client answers'

// Unwinds the handler from an unanswered ask (`finally` runs); catching it cannot change the round, so rethrow it.
// Made without Error's constructor, which captures a stack (bench/README.md#stackless-unwind).
function inputRequired (): Error {
  const error = Object.create(Error.prototype) as Error
  error.name = 'InputRequired'
  error.message = INPUT_REQUIRED
  error.stack = `InputRequired: ${INPUT_REQUIRED}`
  return error
}

/** A rejected promise that reports no unhandled rejection: a handler may drop an ask it never awaits. */
function rejected (error: unknown): Promise<never> {
  const promise = Promise.reject(error)
  promise.catch(noop)
  return promise
}

export interface RoundBudget {
  /** Characters of the requests as sent (their text and schemas), so a round's reply stays bounded. */
  readonly size: number
  /** What the call's delivery carries, read at each ask: a call may become a task mid-pass. */
  readonly delivery: () => Delivery['budget']
  /** UTF-8 bytes of one value `ctx.once` records (`once.maxBytes`). */
  readonly onceBytes: number
  /** Where the delivery keeps each effect as it is recorded (a task's record), or undefined. */
  readonly recorded: (journal: Journal) => Promise<void> | undefined
}

/** The questions of the round a pass yields: the first unanswered ask's, and those made in its turn. */
interface PendingRound {
  readonly requests: Record<string, InputRequest>
  readonly yielded: Promise<never>
  /** What the new slots take in the journal, and the requests as sent: each has its budget. */
  slotBytes: number
  size: number
}

/** One run of a handler over the call's journal (replay/journal.ts), its unwind when it yields, and its drain. */
export class ReplayPass implements AskTarget {
  readonly journal: Journal
  readonly #responses: JsonObject | undefined
  readonly #budget: RoundBudget
  /** Keys used in this pass: by asks, and by `ctx.once`. */
  #askKeys: Set<string> | undefined
  #onceKeys: Set<string> | undefined
  #ordinal = 0
  #round: PendingRound | undefined
  /** Effects started and not settled: a pass that yields waits for them, so none that ran goes unrecorded. */
  #running = 0
  #draining = false
  #closed = false
  #controller: AbortController | undefined
  #end: { resolve: (outcome: PassOutcome<unknown>) => void, reject: (error: unknown) => void } | undefined

  constructor (journal: Journal, responses: JsonObject | undefined, budget: RoundBudget) {
    this.journal = journal
    this.#responses = responses
    this.#budget = budget
  }

  get signal (): AbortSignal {
    this.#controller ??= new AbortController()
    if (this.#closed && !this.#controller.signal.aborted) this.#controller.abort(new DOMException('the pass is over', 'AbortError'))
    return this.#controller.signal
  }

  get asking (): boolean {
    return this.#round !== undefined
  }

  run<T> (fn: () => T | PromiseLike<T>): Promise<PassOutcome<T>> {
    return new Promise<PassOutcome<T>>((resolve, reject) => {
      this.#end = { resolve: resolve as (outcome: PassOutcome<unknown>) => void, reject }
      let value
      try {
        value = fn()
      } catch (error) {
        this.#threw(error)
        return
      }
      // A handler that returns a plain value completes without a detour through a promise.
      if (typeof (value as PromiseLike<T> | undefined)?.then !== 'function') this.#settle({ kind: 'complete', value })
      else {
        (value as PromiseLike<T>).then(
          (result) => this.#settle({ kind: 'complete', value: result }),
          (error: unknown) => this.#threw(error))
      }
    })
  }

  /** A client lacking the capabilities gets -32021, or with `unavailable` the answer `{ action: 'unavailable' }`. */
  ask (
    question: Question,
    key: string | undefined,
    capabilities: ClientCapabilities,
    unavailable?: string
  ): Promise<unknown> {
    if (this.#closed) return this.#round?.yielded ?? rejected(new Error('ctx.elicit() and kin were called after the handler\'s pass ended'))
    const ordinal = this.#ordinal++
    const answers = this.journal.answers
    key ??= defaultKey(question.prefix, ordinal)
    const keys = (this.#askKeys ??= new Set())
    if (keys.has(key)) return this.#fail(new InvalidArgumentError(`Input key "${key}" is used twice in one request: keys must be unique`))
    keys.add(key)

    const slot = answers[ordinal] as AnswerSlot | undefined
    const print = fingerprint(question)
    if (slot !== undefined) {
      if (slot.key !== key) return this.#fail(new ElicitationLedgerMismatchError(ordinal + 1, 'key'))
      const part = differingPart(slot.fingerprint, print, question.kind)
      if (part !== undefined) return this.#fail(new ElicitationLedgerMismatchError(ordinal + 1, part))
      if ('answer' in slot) return Promise.resolve(slot.answer)
    }
    const responses = this.#responses
    const incoming = responses !== undefined && Object.hasOwn(responses, key) ? responses[key] : undefined
    if (incoming !== undefined) {
      const checked = question.check(incoming)
      if (!checked.ok) return this.#fail(invalidParams(`inputResponses.${key}: ${checked.message}`))
      answers[ordinal] = { key, fingerprint: print, answer: checked.value }
      return Promise.resolve(checked.value)
    }
    const missing = question.missing(capabilities)
    if (missing !== undefined) {
      if (unavailable === undefined) return this.#fail(missingCapability(missing))
      const answer = { action: 'unavailable', reason: unavailable }
      answers[ordinal] = { key, fingerprint: print, answer }
      return Promise.resolve(answer)
    }
    const round = (this.#round ??= this.#yield())
    round.slotBytes += key.length + print.length + 8
    const carried = this.#budget.delivery()
    if (carried !== undefined && round.slotBytes > carried.bytes) {
      return this.#fail(invalidParams(carried.tooLarge(ordinal + 1)))
    }
    round.size += key.length + question.size
    if (round.size > this.#budget.size) {
      return this.#fail(invalidParams(`The handler asked for more input in one round than one response may carry: its input requests passed ${this.#budget.size} characters (the bodyLimit option)`))
    }
    answers[ordinal] = { key, fingerprint: print }
    // Assignment would take `__proto__` for the prototype.
    if (key === '__proto__') setOwn(round.requests, key, question.build())
    else round.requests[key] = question.build()
    return round.yielded
  }

  /** The first unanswered ask opens the round; it closes once this turn, and the effects it started, are over. */
  #yield (): PendingRound {
    setImmediate(() => { this.#drain() })
    // A plain object, not Object.create(null): bench/README.md#questions.
    return { requests: {}, yielded: rejected(inputRequired()), slotBytes: 0, size: 0 }
  }

  /** Runs `fn` unless this call's journal holds `key`, and records its JSON value; refusals name the key. */
  once (key: string, fn: () => unknown): Promise<unknown> {
    if (this.#closed || this.#draining) {
      return this.#round?.yielded ?? rejected(new Error('ctx.once() was called after the handler\'s pass ended'))
    }
    if (typeof key !== 'string' || key === '' || typeof fn !== 'function') {
      return Promise.reject(new InvalidArgumentError(`ctx.once() needs a non-empty key string and a function, got ${typeof key} and ${typeof fn}`))
    }
    const keys = (this.#onceKeys ??= new Set())
    if (keys.has(key)) return Promise.reject(new InvalidArgumentError(`ctx.once("${key}") was called twice in one pass: a key names one effect`))
    keys.add(key)
    const { effects } = this.journal
    if (effects.has(key)) return Promise.resolve(jsonCopy(effects.get(key)))
    let started: Promise<unknown>
    try {
      started = Promise.resolve(fn())
    } catch (error) {
      return Promise.reject(error)
    }
    const recording = started.then((value) => this.#record(key, value) as unknown)
    this.#running++
    recording.then(this.#settled, this.#settled)
    return recording
  }

  #record (key: string, value: unknown): unknown {
    const reason = notJson(value === undefined ? null : value)
    if (reason !== undefined) throw new InvalidArgumentError(`ctx.once("${key}") cannot record its value: it holds ${reason}, which is not JSON`)
    const json = JSON.stringify(value ?? null)
    const bytes = Buffer.byteLength(json)
    if (bytes > this.#budget.onceBytes) {
      throw new InvalidArgumentError(`ctx.once("${key}") cannot record its value: its JSON takes ${bytes} bytes, more than once.maxBytes (${this.#budget.onceBytes})`)
    }
    this.journal.effects.set(key, JSON.parse(json))
    const kept = this.#budget.recorded(this.journal)
    return kept === undefined ? JSON.parse(json) : kept.then(() => JSON.parse(json))
  }

  readonly #settled = (): void => {
    if (--this.#running === 0 && this.#draining) this.#answer()
  }

  /** The round goes out once the effects the pass started have settled, and were recorded. */
  #drain (): void {
    this.#draining = true
    if (this.#running === 0) this.#answer()
  }

  #answer (): void {
    this.#close({ kind: 'input_required', inputRequests: this.#round!.requests, journal: this.journal })
  }

  /** The handler's value is the outcome only if the pass has not yielded or failed. */
  #settle (outcome: PassOutcome<unknown>): void {
    if (this.#round === undefined) this.#close(outcome)
  }

  /** Ignored once the pass yielded (the yield unwinding the handler, most likely) or failed. */
  #threw (error: unknown): void {
    if (this.#round === undefined) this.#fail(error)
  }

  #close (outcome: PassOutcome<unknown>): void {
    if (this.#closed) return
    this.#closed = true
    this.#controller?.abort(new DOMException('the pass is over', 'AbortError'))
    this.#end!.resolve(outcome)
  }

  #fail (error: unknown): Promise<never> {
    if (!this.#closed) {
      this.#closed = true
      this.#controller?.abort(new DOMException('the pass is over', 'AbortError'))
      this.#end!.reject(error)
    }
    return rejected(error)
  }
}
