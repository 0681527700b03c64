import type { NotificationBus } from '../bus/bus.js'
import type { Asked, CallState, Delivered, Delivery, ReplayStart } from '../call.js'
import { within } from '../check.js'
import { ErrorCode, InvalidRequestStateError, McpError, invalidParams, unboundPrincipal } from '../errors.js'
import { Journal } from '../journal.js'
import type { JsonObject } from '../protocol/wire.js'
import { digest } from '../seal/digest.js'
import type { TokenTooLongError } from '../seal/seal.js'
import { UncarriableError, type RequestStateCodec, type RequestStatePayload } from './codec.js'

type Claim = NonNullable<NotificationBus['claim']>

const ANSWERED = 'This round was already answered: a requestState is good for one retry (requestState.singleUse); ' +
  'start the call over without requestState'

/** Params fields that change from round to round, so are not part of a request's target. */
function isRoundField (key: string): boolean {
  return key === '_meta' || key === 'inputResponses' || key === 'requestState'
}

export function originalParamsOf (params: JsonObject): JsonObject {
  const original: JsonObject = {}
  for (const key of Object.keys(params)) {
    if (!isRoundField(key)) original[key] = params[key]
  }
  return original
}

/** Not `util.isDeepStrictEqual`: a token gives -0 back as 0, and a client sending `-0.0` each round must match it. */
function jsonEqual (a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false
  const keys = Object.keys(a)
  if (keys.length !== Object.keys(b).length) return false
  for (const key of keys) {
    if (!Object.hasOwn(b, key) || !jsonEqual((a as JsonObject)[key], (b as JsonObject)[key])) return false
  }
  return true
}

function sameParams (original: JsonObject, params: JsonObject): boolean {
  let count = 0
  for (const key of Object.keys(params)) {
    if (isRoundField(key)) continue
    if (!Object.hasOwn(original, key) || !jsonEqual(original[key], params[key])) return false
    count++
  }
  return count === Object.keys(original).length
}

/** The ledger goes out sealed in `requestState`, so the retry may reach any node holding the key. */
export class TokenDelivery implements Delivery {
  readonly #codec: RequestStateCodec
  /** Set with `requestState.singleUse`: claims each retried token fleet-wide, once. */
  readonly #claim: Claim | undefined
  readonly budget: Delivery['budget']

  constructor (codec: RequestStateCodec, claim?: Claim) {
    this.#codec = codec
    this.#claim = claim
    // One round's new ledger slots can never pass the bytes a token of maxTokenLength characters carries.
    this.budget = {
      bytes: Math.floor(codec.maxTokenLength * 3 / 4),
      tooLarge: (requests) => `The handler asked for more input in one round than a requestState token holds (over ${requests} requests)`,
    }
  }

  /** Any failed check of a retry's requestState (integrity, TTL, principal, method, params) is one opaque refusal. */
  start (call: CallState): ReplayStart | Promise<ReplayStart> {
    const responses = call.params.inputResponses as JsonObject | undefined
    const token = call.params.requestState
    if (typeof token !== 'string') return { journal: new Journal(), responses, round: 0 }
    if (call.principal.state === 'unbound') throw unboundPrincipal()
    const payload = this.#codec.decode(token)
    if (payload.principal !== call.principal.value) throw new InvalidRequestStateError('principal mismatch')
    if (payload.method !== call.method) throw new InvalidRequestStateError('method mismatch')
    if (!sameParams(payload.originalParams, call.params)) throw new InvalidRequestStateError('target or arguments mismatch')
    call.tokenTakenUntil = this.#codec.takenUntil(payload)
    const start = { journal: payload.journal, responses, round: payload.round ?? 0 }
    return this.#claim === undefined ? start : this.#claimed(call, token, payload, start)
  }

  /** A genuine token's retry claims it before the handler runs: of two retries with one token, exactly one runs. */
  async #claimed (call: CallState, token: string, payload: RequestStatePayload, start: ReplayStart):
  Promise<ReplayStart> {
    let first: boolean
    try {
      first = await within(this.#claim!(digest('claim', token), this.#codec.takenFor(payload)), 'the bus')
    } catch (error) {
      call.request.log.error({ err: error }, 'mocapi could not claim a single-use requestState: the bus failed')
      throw new McpError(ErrorCode.InternalError, 'The server could not check that this round is answered once (requestState.singleUse): retry it, and start the call over if the retry is refused as already answered', { statusCode: 503 })
    }
    if (!first) {
      call.request.log.info({ mcp: { method: call.method, round: start.round } }, 'mocapi refused a requestState: its round was already answered (singleUse)')
      throw invalidParams(ANSWERED)
    }
    return start
  }

  deliver (call: CallState, label: string, asked: Asked, round: number): Delivered {
    let requestState
    try {
      requestState = this.#codec.encode({
        method: call.method,
        originalParams: originalParamsOf(call.params),
        journal: asked.journal,
        principal: call.principal.value,
        round
      })
    } catch (error) {
      if (error instanceof UncarriableError) throw invalidParams(`${label} cannot carry this request in a requestState token: ${error.message}`)
      // The principal is a string or null, so the only other failure is a token too long.
      const length = (error as TokenTooLongError).length
      throw invalidParams(`${label} asked for more input than a requestState token holds (${length} characters, ` +
        `requestState.maxTokenLength is ${this.#codec.maxTokenLength}): its answers and ctx.once values count`)
    }
    return { kind: 'reply', result: { resultType: 'input_required', inputRequests: asked.inputRequests, requestState } }
  }
}
