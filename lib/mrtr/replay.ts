import type { FastifyBaseLogger } from 'fastify'
import { InvalidRequestStateError, invalidParams } from '../errors.js'
import type { InputRequest, JsonObject } from '../protocol/wire.js'
import type { LedgerEntry, RequestStateCodec } from './codec.js'
import { ReplayPass } from './engine.js'

/** The wire shape of an `input_required` result. */
export interface InputRequiredResult {
  resultType: 'input_required'
  inputRequests: Record<string, InputRequest>
  requestState: string
}

/** What the engine needs of a request's context: the request, and where its handler asks. */
export interface Interactive {
  pass: ReplayPass | undefined
  readonly method: string
  readonly params: JsonObject
  readonly principal: string | null
  readonly restored: RestoredState | undefined
  readonly request: { readonly log: FastifyBaseLogger }
}

/** What a verified requestState restores for the retry. */
export interface RestoredState {
  ledger: LedgerEntry[]
  round: number
}

/** Params fields that are not part of a request's target: they change from round to round. */
function isRoundField (key: string): boolean {
  return key === '_meta' || key === 'inputResponses' || key === 'requestState'
}

/** The fields of a request's params that name its target; `_meta` and the MRTR fields are not part of it. */
export function originalParamsOf (params: JsonObject): JsonObject {
  const original: JsonObject = {}
  for (const key of Object.keys(params)) {
    if (!isRoundField(key)) original[key] = params[key]
  }
  return original
}

/** Whether two JSON values are equal, whatever the key order of their objects. */
function jsonEqual (a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], b[i])) return false
    return true
  }
  if (Array.isArray(b)) return false
  const keys = Object.keys(a)
  if (keys.length !== Object.keys(b).length) return false
  for (const key of keys) {
    if (!Object.hasOwn(b, key) || !jsonEqual((a as JsonObject)[key], (b as JsonObject)[key])) return false
  }
  return true
}

/** Whether a retry's params name the same target and arguments as the token's `originalParams`. */
function sameParams (original: JsonObject, params: JsonObject): boolean {
  let count = 0
  for (const key of Object.keys(params)) {
    if (isRoundField(key)) continue
    if (!Object.hasOwn(original, key) || !jsonEqual(original[key], params[key])) return false
    count++
  }
  return count === Object.keys(original).length
}

/**
 * Binds the replay pattern to requestState tokens: restores a retry's ledger after checking
 * the token against the caller, and seals a new token when a pass yields.
 */
export class ReplayEngine {
  readonly #codec: RequestStateCodec
  readonly #maxRounds: number

  constructor (codec: RequestStateCodec, maxRounds: number) {
    this.#codec = codec
    this.#maxRounds = maxRounds
  }

  /**
   * Verifies a retry's requestState: integrity, TTL, principal, method, then target and
   * arguments. Any failure throws an InvalidRequestStateError with one opaque message.
   */
  restore (token: string, method: string, params: JsonObject, principal: string | null): RestoredState {
    const payload = this.#codec.decode(token)
    if (payload.principal !== principal) throw new InvalidRequestStateError('principal mismatch')
    if (payload.method !== method) throw new InvalidRequestStateError('method mismatch')
    if (!sameParams(payload.originalParams, params)) {
      throw new InvalidRequestStateError('target or arguments mismatch')
    }
    return { ledger: payload.inputResponses, round: payload.round ?? 0 }
  }

  /**
   * Runs a handler once under the replay pattern, bound to `ctx` (its `ctx.elicit` and kin ask
   * through the pass). Resolves with its value, or with the `input_required` result that asks
   * for what the pass still needs.
   */
  async run<T> (ctx: Interactive, label: string, fn: () => T | PromiseLike<T>): Promise<{ complete: T } | InputRequiredResult> {
    const restored = ctx.restored
    const round = restored === undefined ? 0 : restored.round
    const pass = new ReplayPass(restored === undefined ? [] : restored.ledger, ctx.params.inputResponses as JsonObject | undefined)
    ctx.pass = pass
    const outcome = await pass.run(fn)
    const log = ctx.request.log
    if (log.level === 'debug' || log.level === 'trace') {
      const counts = pass.counts
      log.debug({ mcp: { handler: label, round: round + 1, answered: counts.answered, pending: counts.pending } }, 'mocapi replay pass')
    }
    if (outcome.kind === 'complete') return { complete: outcome.value }
    if (round >= this.#maxRounds) {
      throw invalidParams(`${label} still needs input after ${this.#maxRounds} rounds, the limit (requestState.maxRounds)`)
    }
    const requestState = this.#codec.encode({
      method: ctx.method,
      originalParams: originalParamsOf(ctx.params),
      inputResponses: outcome.ledger,
      principal: ctx.principal,
      round: round + 1,
    })
    return { resultType: 'input_required', inputRequests: outcome.inputRequests, requestState }
  }
}
