import { bindAsker, clientOf, principalState, streamOf, type McpContext } from '../context.js'
import type { FormAnswers } from '../elicitation/answers.js'
import { ErrorCode, InvalidRequestStateError, McpError, invalidParams, invalidRequest } from '../errors.js'
import type { Exchange } from '../legacy/exchange.js'
import { isPlainObject, type InputRequest, type JsonObject } from '../protocol/wire.js'
import { PROTOCOL_VERSION } from '../protocol/wire.js'
import { UncarriableError, type LedgerEntry, type RequestStateCodec } from './codec.js'
import { ReplayPass, type RoundBudget } from './pass.js'
import type { TokenTooLongError } from './seal.js'

/** The wire shape of an `input_required` result. */
export interface InputRequiredResult {
  resultType: 'input_required'
  inputRequests: Record<string, InputRequest>
  requestState: string
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

/** The refusal of an interactive round for a caller who is authenticated but has no principal to bind. */
function unboundPrincipal (): Error {
  return invalidRequest('This request is authenticated, but mocapi found no principal to bind its requestState to ' +
    '(request.user has no string or numeric sub): the server must set the principal option', 403)
}

/** The params of a server-to-client request, in the shape the client's revision knows. */
function legacyParams (version: string): (request: InputRequest, id: string) => JsonObject {
  return (request, id) => {
    if (request.method !== 'elicitation/create') return request.params
    const params = { ...request.params }
    // URL mode exists from 2025-11-25 only (the capability check saw to it), and needs an id there.
    if (params.mode === 'url') params.elicitationId = id
    else if (version !== '2025-11-25') delete params.mode
    return params
  }
}

/**
 * A client's error answer to a server-to-client request, as the call's own error: -32603, with the
 * client's code in the message. Passed through, its code would say things of the call that are not
 * so (-32601 "method not found" for a tool that exists, -32700 for a body that parsed).
 */
function clientRefused (method: string, error: unknown): McpError {
  const code = isPlainObject(error) && Number.isSafeInteger(error.code) ? ` (${error.code as number})` : ''
  const detail = isPlainObject(error) && typeof error.message === 'string' ? `: ${error.message.slice(0, 500)}` : ''
  return new McpError(ErrorCode.InternalError, `The client answered ${method} with an error${code}${detail}`)
}

/** What a verified requestState restores for the retry. */
interface Restored {
  ledger: LedgerEntry[]
  round: number
}

/**
 * Runs handlers under the replay pattern (docs/decisions/0001-elicitation-by-replay.md): on a
 * retry, restores the ledger from the request's requestState after checking the token against
 * the caller; runs one pass of the handler with the context bound to it; and when the pass
 * yields, seals the ledger into a fresh token.
 */
export class ReplayEngine {
  readonly #codec: RequestStateCodec
  readonly #maxRounds: number
  readonly #forms: FormAnswers
  readonly #budget: RoundBudget
  // Default keys (`elicit-1`, …) made once: a key built per call is a fresh string, which every
  // lookup by it (in inputResponses, in the ledger) first has to hash.
  readonly #defaultKeys = new Map<string, string[]>()

  readonly #exchange: Exchange

  /**
   * `exchange` asks 2025-era clients in server-to-client requests; `maxRoundSize` bounds the
   * characters of one round's input requests as sent.
   */
  constructor (codec: RequestStateCodec, maxRounds: number, forms: FormAnswers, exchange: Exchange, maxRoundSize: number) {
    this.#codec = codec
    this.#maxRounds = maxRounds
    this.#forms = forms
    this.#exchange = exchange
    // The bytes a token of maxTokenLength characters carries: what one round's new slots can never pass.
    this.#budget = { ledger: Math.floor(codec.maxTokenLength * 3 / 4), size: maxRoundSize }
  }

  #key = (prefix: string, ordinal: number): string => {
    if (ordinal >= 64) return `${prefix}-${ordinal + 1}`
    let keys = this.#defaultKeys.get(prefix)
    if (keys === undefined) {
      keys = []
      this.#defaultKeys.set(prefix, keys)
    }
    return (keys[ordinal] ??= `${prefix}-${ordinal + 1}`)
  }

  /**
   * Verifies a retry's requestState: integrity, TTL, principal, method, then target and
   * arguments. Any failure throws an InvalidRequestStateError with one opaque message.
   */
  #restore (token: string, ctx: McpContext): Restored {
    const payload = this.#codec.decode(token)
    if (payload.principal !== ctx.principal) throw new InvalidRequestStateError('principal mismatch')
    if (payload.method !== ctx.method) throw new InvalidRequestStateError('method mismatch')
    if (!sameParams(payload.originalParams, ctx.params)) throw new InvalidRequestStateError('target or arguments mismatch')
    return { ledger: payload.ledger, round: payload.round ?? 0 }
  }

  /**
   * Runs a handler once under the replay pattern, bound to `ctx` (its `ctx.elicit` and kin ask
   * through the pass). Resolves with its value, or with the `input_required` result that asks
   * for what the pass still needs.
   */
  async run<T> (ctx: McpContext, label: string, fn: () => T | PromiseLike<T>): Promise<{ complete: T } | InputRequiredResult> {
    const client = clientOf(ctx)
    if (client.protocolVersion !== PROTOCOL_VERSION) return this.#runLegacy(ctx, label, fn)
    const token = ctx.params.requestState
    const bound = principalState(ctx) !== 'unbound'
    let restored: Restored | undefined
    if (typeof token === 'string') {
      if (!bound) throw unboundPrincipal()
      restored = this.#restore(token, ctx)
    }
    const round = restored === undefined ? 0 : restored.round
    const pass = new ReplayPass(restored === undefined ? [] : restored.ledger, ctx.params.inputResponses as JsonObject | undefined, this.#key, this.#forms, this.#budget)
    bindAsker(ctx, pass, round + 1)
    const outcome = await pass.run(fn)
    const log = ctx.logger
    if (log.level === 'debug' || log.level === 'trace') {
      const counts = pass.counts
      log.debug({ mcp: { handler: label, round: round + 1, answered: counts.answered, pending: counts.pending } }, 'mocapi replay pass')
    }
    if (outcome.kind === 'complete') return { complete: outcome.value }
    if (!bound) throw unboundPrincipal()
    if (round >= this.#maxRounds) {
      throw invalidParams(`${label} still needs input after ${this.#maxRounds} rounds, the limit (requestState.maxRounds)`)
    }
    let requestState
    try {
      requestState = this.#codec.encode({ method: ctx.method, originalParams: originalParamsOf(ctx.params), ledger: outcome.ledger, principal: ctx.principal, round: round + 1 })
    } catch (error) {
      if (error instanceof UncarriableError) throw invalidParams(`${label} cannot carry this request in a requestState token: ${error.message}`)
      // The principal is a string or null, so the other way encoding fails is a token too long.
      const length = (error as TokenTooLongError).length
      throw invalidParams(`${label} asked for more input than a requestState token holds (${length} characters, requestState.maxTokenLength is ${this.#codec.maxTokenLength})`)
    }
    return { resultType: 'input_required', inputRequests: outcome.inputRequests, requestState }
  }

  /**
   * Runs a 2025-era call: each pass that yields sends its input requests to the client on the
   * call's stream, and the next pass replays with the answers in its ledger, on this node, until
   * the handler completes. The ledger stays in memory for the call's lifetime; nothing is sealed.
   */
  async #runLegacy<T> (ctx: McpContext, label: string, fn: () => T | PromiseLike<T>): Promise<{ complete: T }> {
    const stream = streamOf(ctx)
    const { session, sessionExpiresAt } = clientOf(ctx)
    let ledger: LedgerEntry[] = []
    let responses: JsonObject | undefined
    for (let round = 0; ; round++) {
      const pass = new ReplayPass(ledger, responses, this.#key, this.#forms, this.#budget)
      bindAsker(ctx, pass, round + 1)
      const outcome = await pass.run(fn)
      if (outcome.kind === 'complete') return { complete: outcome.value }
      if (principalState(ctx) === 'unbound') throw unboundPrincipal()
      if (round >= this.#maxRounds) throw invalidParams(`${label} still needs input after ${this.#maxRounds} rounds, the limit (requestState.maxRounds)`)
      // A 2025-era client without a session declared no capabilities, so its pass failed before it yielded.
      const asked = await this.#exchange.ask({ session: session as string, principal: ctx.principal, expiresAt: sessionExpiresAt }, outcome.inputRequests, (request) => stream.notify(request),
        stream.signal, legacyParams(ctx.protocolVersion))
      if (asked.kind === 'timeout') {
        throw new McpError(ErrorCode.RequestTimeout, `${label} waited for the client's answer longer than session.answerTimeout allows`)
      }
      if (asked.kind === 'expired') {
        throw new McpError(ErrorCode.RequestTimeout, `${label} waited for the client's answer until its session expired (session.ttl); a new session can call again`)
      }
      // The client cancelled or left, or the server is closing: the call is over, and the handler did not fail.
      if (asked.kind === 'aborted') throw new McpError(ErrorCode.InternalError, `${label} stopped waiting for the client's answer: ${(asked.reason as Error).message}`)
      if (asked.errors.length > 0) throw clientRefused(asked.errors[0].method, asked.errors[0].error)
      ledger = outcome.ledger
      responses = asked.responses
    }
  }
}
