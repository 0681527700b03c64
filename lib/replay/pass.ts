import type { AskTarget, Delivery, Effect, LedgerEntry } from '../call.js'
import { defaultKey, type Question } from '../elicitation/questions.js'
import { noop } from '../check.js'
import { ElicitationLedgerMismatchError, InvalidArgumentError, invalidParams, missingCapability } from '../errors.js'
import { setOwn, type ClientCapabilities, type InputRequest, type JsonObject } from '../protocol/wire.js'
import { copyOf, notJson } from './effects.js'
import { differingPart, fingerprint } from './fingerprint.js'

type PassOutcome<T> =
  | { kind: 'complete', value: T }
  | { kind: 'input_required', inputRequests: Record<string, InputRequest>, ledger: LedgerEntry[], effects: Effect[] }

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

interface RoundBudget {
  /** Characters of the requests as sent (their text and schemas), so a round's reply stays bounded. */
  readonly size: number
  /** What the call's delivery carries, read at each ask: a call may become a task mid-pass. */
  readonly delivery: () => Delivery['budget']
  /** UTF-8 bytes of one value `ctx.once` records (`once.maxBytes`). */
  readonly onceBytes: number
}

/** One run of a handler: its Nth ask reads ledger slot N; asks made in the turn of the first unanswered one join it. */
export class ReplayPass implements AskTarget {
  readonly #ledger: LedgerEntry[]
  readonly #responses: JsonObject | undefined
  readonly #budget: RoundBudget
  readonly #effects: Effect[]
  #recorded: Map<string, unknown> | undefined
  #onceKeys: Set<string> | undefined
  /** Effects started and not settled: a pass that yields waits for them, so none that ran goes unrecorded. */
  #running = 0
  #draining = false
  #keys: Set<string> | undefined
  #ordinal = 0
  #pendingBytes = 0
  #pendingSize = 0
  #pending: Record<string, InputRequest> | undefined
  #yielded: Promise<never> | undefined
  #closed = false
  #controller: AbortController | undefined
  #resolve: ((outcome: PassOutcome<unknown>) => void) | undefined
  #reject: ((error: unknown) => void) | undefined

  constructor (ledger: LedgerEntry[], responses: JsonObject | undefined, budget: RoundBudget, effects: Effect[] = []) {
    this.#ledger = ledger
    this.#responses = responses
    this.#budget = budget
    this.#effects = effects
  }

  get signal (): AbortSignal {
    this.#controller ??= new AbortController()
    if (this.#closed && !this.#controller.signal.aborted) this.#controller.abort(new DOMException('the pass is over', 'AbortError'))
    return this.#controller.signal
  }

  get asking (): boolean {
    return this.#pending !== undefined
  }

  get ledger (): readonly LedgerEntry[] {
    return this.#ledger
  }

  get effects (): readonly Effect[] {
    return this.#effects
  }

  get counts (): { answered: number, pending: number } {
    let answered = 0
    for (const slot of this.#ledger) if ('r' in slot) answered++
    return { answered, pending: this.#ledger.length - answered }
  }

  run<T> (fn: () => T | PromiseLike<T>): Promise<PassOutcome<T>> {
    return new Promise<PassOutcome<T>>((resolve, reject) => {
      this.#resolve = resolve as (outcome: PassOutcome<unknown>) => void
      this.#reject = reject
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
    if (this.#closed) return this.#yielded ?? rejected(new Error('ctx.elicit() and kin were called after the handler\'s pass ended'))
    const ordinal = this.#ordinal++
    const ledger = this.#ledger
    key ??= defaultKey(question.prefix, ordinal)
    const keys = (this.#keys ??= new Set())
    if (keys.has(key)) return this.#fail(new InvalidArgumentError(`Input key "${key}" is used twice in one request: keys must be unique`))
    keys.add(key)

    const slot = ledger[ordinal] as LedgerEntry | undefined
    const print = fingerprint(question)
    if (slot !== undefined) {
      if (slot.k !== key) return this.#fail(new ElicitationLedgerMismatchError(ordinal + 1, 'key'))
      const part = differingPart(slot.f, print, question.kind)
      if (part !== undefined) return this.#fail(new ElicitationLedgerMismatchError(ordinal + 1, part))
      if ('r' in slot) return Promise.resolve(slot.r)
    }
    const responses = this.#responses
    const incoming = responses !== undefined && Object.hasOwn(responses, key) ? responses[key] : undefined
    if (incoming !== undefined) {
      const checked = question.check(incoming)
      if (!checked.ok) return this.#fail(invalidParams(`inputResponses.${key}: ${checked.message}`))
      ledger[ordinal] = { k: key, f: print, r: checked.value }
      return Promise.resolve(checked.value)
    }
    const missing = question.missing(capabilities)
    if (missing !== undefined) {
      if (unavailable === undefined) return this.#fail(missingCapability(missing))
      const answer = { action: 'unavailable', reason: unavailable }
      ledger[ordinal] = { k: key, f: print, r: answer }
      return Promise.resolve(answer)
    }
    this.#pendingBytes += key.length + print.length + 8
    const carried = this.#budget.delivery()
    if (carried !== undefined && this.#pendingBytes > carried.bytes) {
      return this.#fail(invalidParams(carried.tooLarge(ordinal + 1)))
    }
    this.#pendingSize += key.length + question.size
    if (this.#pendingSize > this.#budget.size) {
      return this.#fail(invalidParams(`The handler asked for more input in one round than one response may carry: its input requests passed ${this.#budget.size} characters (the bodyLimit option)`))
    }
    ledger[ordinal] = { k: key, f: print }
    if (this.#pending === undefined) {
      // A plain object, not Object.create(null): bench/README.md#questions.
      this.#pending = {}
      this.#yielded = rejected(inputRequired())
      setImmediate(() => { this.#drain() })
    }
    // Assignment would take `__proto__` for the prototype.
    if (key === '__proto__') setOwn(this.#pending, key, question.build())
    else this.#pending[key] = question.build()
    return this.#yielded as Promise<never>
  }

  /** Runs `fn` unless this call's journal holds `key`, and records its JSON value; refusals name the key. */
  once (key: string, fn: () => unknown): Promise<unknown> {
    if (this.#closed || this.#draining) {
      return this.#yielded ?? rejected(new Error('ctx.once() was called after the handler\'s pass ended'))
    }
    if (typeof key !== 'string' || key === '' || typeof fn !== 'function') {
      return Promise.reject(new InvalidArgumentError(`ctx.once() needs a non-empty key string and a function, got ${typeof key} and ${typeof fn}`))
    }
    const keys = (this.#onceKeys ??= new Set())
    if (keys.has(key)) return Promise.reject(new InvalidArgumentError(`ctx.once("${key}") was called twice in one pass: a key names one effect`))
    keys.add(key)
    const recorded = this.#journal()
    if (recorded.has(key)) return Promise.resolve(copyOf(recorded.get(key)))
    let started: Promise<unknown>
    try {
      started = Promise.resolve(fn())
    } catch (error) {
      return Promise.reject(error)
    }
    const recording = started.then((value) => this.#record(key, value))
    this.#running++
    recording.then(this.#settled, this.#settled)
    return recording
  }

  #journal (): Map<string, unknown> {
    if (this.#recorded === undefined) {
      this.#recorded = new Map()
      for (const [key, value] of this.#effects) this.#recorded.set(key, value)
    }
    return this.#recorded
  }

  #record (key: string, value: unknown): unknown {
    const reason = notJson(value === undefined ? null : value)
    if (reason !== undefined) throw new InvalidArgumentError(`ctx.once("${key}") cannot record its value: it holds ${reason}, which is not JSON`)
    const json = JSON.stringify(value ?? null)
    const bytes = Buffer.byteLength(json)
    if (bytes > this.#budget.onceBytes) {
      throw new InvalidArgumentError(`ctx.once("${key}") cannot record its value: its JSON takes ${bytes} bytes, more than once.maxBytes (${this.#budget.onceBytes})`)
    }
    const kept: unknown = JSON.parse(json)
    this.#effects.push([key, kept])
    this.#journal().set(key, kept)
    return JSON.parse(json)
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
    this.#close({ kind: 'input_required', inputRequests: this.#pending!, ledger: this.#ledger, effects: this.#effects })
  }

  /** The handler's value is the outcome only if the pass has not yielded or failed. */
  #settle (outcome: PassOutcome<unknown>): void {
    if (this.#pending === undefined) this.#close(outcome)
  }

  /** Ignored once the pass yielded (the yield unwinding the handler, most likely) or failed. */
  #threw (error: unknown): void {
    if (this.#pending === undefined) this.#fail(error)
  }

  #close (outcome: PassOutcome<unknown>): void {
    if (this.#closed) return
    this.#closed = true
    this.#controller?.abort(new DOMException('the pass is over', 'AbortError'))
    this.#resolve!(outcome)
  }

  #fail (error: unknown): Promise<never> {
    if (!this.#closed) {
      this.#closed = true
      this.#controller?.abort(new DOMException('the pass is over', 'AbortError'))
      this.#reject!(error)
    }
    return rejected(error)
  }
}
