import { digest } from '../digest.js'
import { ElicitationLedgerMismatchError, invalidParams, missingCapability } from '../errors.js'
import type { InputRequest, JsonObject } from '../protocol/wire.js'
import type { LedgerEntry } from './codec.js'

/** Checks and normalises an answer from `inputResponses` before it enters the ledger. */
export type AnswerCheck = (value: unknown) => { ok: true, value: unknown } | { ok: false, message: string }

/**
 * One input request as the engine sees it: the text its fingerprint is taken over, and the
 * wire request itself, built only when the request is actually sent (a replayed round that
 * finds the answer in the ledger never needs it).
 */
export interface Question {
  /** With `text`, identifies the request: equal for equal requests, different otherwise. */
  readonly tag: string
  readonly text: string
  build (): InputRequest
}

/** A question whose wire request is already made: its text is the request's JSON. */
export function questionOf (request: InputRequest): Question {
  return { tag: 'json', text: JSON.stringify(request), build: () => request }
}

// Default keys (`elicit-1`, …) made once: a key built per call is a fresh string, which every
// lookup by it (in inputResponses, in the ledger) first has to hash.
const defaultKeys = new Map<string, string[]>()
const MAX_DEFAULT_KEYS = 64

function defaultKey (prefix: string, ordinal: number): string {
  if (ordinal >= MAX_DEFAULT_KEYS) return `${prefix}-${ordinal + 1}`
  let keys = defaultKeys.get(prefix)
  if (keys === undefined) {
    keys = []
    defaultKeys.set(prefix, keys)
  }
  return (keys[ordinal] ??= `${prefix}-${ordinal + 1}`)
}

/** How one pass of a handler ended. */
export type PassOutcome<T> =
  | { kind: 'complete', value: T }
  | { kind: 'input_required', inputRequests: Record<string, InputRequest>, ledger: LedgerEntry[] }

/**
 * A promise that never settles, made fresh for each yield: a shared one would keep every
 * suspended handler (and its request) reachable through its reaction list forever.
 */
function never (): Promise<never> {
  return new Promise<never>(() => {})
}

/**
 * The fingerprint kept in a ledger slot: a digest of the input key and the question. It only
 * has to tell a handler that asks something else on replay (the token itself is
 * authenticated), so a fast 53-bit digest will do.
 */
export function fingerprint (key: string, question: Pick<Question, 'tag' | 'text'>): string {
  return digest(key, question.tag, question.text)
}

/**
 * One run of a handler under the replay pattern (ADR-0021). The Nth input request reached
 * in the run (its ordinal) reads ledger slot N: answered slots return their answer at once;
 * the first unanswered ones end the pass with an `input_required` outcome.
 *
 * An unanswered request returns a promise that never settles, so a handler's own
 * try/catch cannot swallow the yield: the pass settles from outside the handler.
 */
export class ReplayPass {
  readonly #ledger: LedgerEntry[]
  readonly #responses: JsonObject | undefined
  #ordinal = 0
  #pending: Record<string, InputRequest> | undefined
  #closed = false
  #resolve: ((outcome: PassOutcome<unknown>) => void) | undefined
  #reject: ((error: unknown) => void) | undefined

  constructor (ledger: LedgerEntry[], responses: JsonObject | undefined) {
    this.#ledger = ledger
    this.#responses = responses
  }

  /** Slots answered so far, and slots waiting for an answer. */
  get counts (): { answered: number, pending: number } {
    let answered = 0
    for (const slot of this.#ledger) if ('r' in slot) answered++
    return { answered, pending: this.#ledger.length - answered }
  }

  /** Runs `fn` once; settles with its value, or with the input this pass still needs. */
  run<T> (fn: () => T | PromiseLike<T>): Promise<PassOutcome<T>> {
    return new Promise<PassOutcome<T>>((resolve, reject) => {
      this.#resolve = resolve as (outcome: PassOutcome<unknown>) => void
      this.#reject = reject
      let value
      try {
        value = fn()
      } catch (error) {
        this.#fail(error)
        return
      }
      // A handler that returns a plain value completes without a detour through a promise.
      if (typeof (value as PromiseLike<T> | undefined)?.then !== 'function') this.#settle({ kind: 'complete', value })
      else {
        (value as PromiseLike<T>).then(
          (result) => this.#settle({ kind: 'complete', value: result }),
          (error: unknown) => this.#fail(error))
      }
    })
  }

  /**
   * Asks for one input: the stored answer when the ledger has it, else a yield. `key` defaults
   * to `<prefix>-<ordinal>`; `missing` names the client capabilities the request needs and the
   * request's `_meta` lacks, if any.
   */
  ask (question: Question, key: string | undefined, prefix: string, accept: AnswerCheck, missing: Record<string, unknown> | undefined): Promise<unknown> {
    if (this.#closed) return never()
    const ordinal = this.#ordinal
    const ledger = this.#ledger
    key ??= defaultKey(prefix, ordinal)
    // Every ordinal before this one has its slot, under the key it was asked with in this pass.
    for (let i = 0; i < ordinal; i++) {
      if (ledger[i].k === key) return Promise.reject(new TypeError(`Input key "${key}" is used twice in one request: keys must be unique`))
    }
    this.#ordinal++

    const slot = ledger[ordinal] as LedgerEntry | undefined
    const print = fingerprint(key, question)
    if (slot !== undefined) {
      if (slot.f !== print) return this.#fail(new ElicitationLedgerMismatchError(ordinal + 1))
      if ('r' in slot) return Promise.resolve(slot.r)
    }
    const incoming = this.#responses?.[key]
    if (incoming !== undefined) {
      const checked = accept(incoming)
      if (!checked.ok) return this.#fail(invalidParams(`inputResponses.${key}: ${checked.message}`))
      ledger[ordinal] = { k: key, f: print, r: checked.value }
      return Promise.resolve(checked.value)
    }
    if (missing !== undefined) return this.#fail(missingCapability(missing))
    ledger[ordinal] = { k: key, f: print }
    if (this.#pending === undefined) {
      this.#pending = {}
      setImmediate(() => this.#settle({ kind: 'input_required', inputRequests: this.#pending!, ledger }))
    }
    this.#pending[key] = question.build()
    return never()
  }

  #settle (outcome: PassOutcome<unknown>): void {
    if (this.#closed) return
    this.#closed = true
    this.#resolve!(outcome)
  }

  #fail (error: unknown): Promise<never> {
    if (!this.#closed) {
      this.#closed = true
      this.#reject!(error)
    }
    return never()
  }
}
