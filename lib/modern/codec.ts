// A token carries all a replayed request needs (layout: seal.ts). Its plaintext is positional, `[method,
// originalParams, answers, issuedAt, principal, round?, effects?, callId?]` with `[key, fingerprint, answer?]` slots
// and `[key, value]` effects (bench/README.md#compact-plaintext); each member is written whenever a later one is.
import { ExpiredRequestStateError, InvalidRequestStateError } from '../errors.js'
import { Journal, isCallId, type AnswerSlot } from '../journal.js'
import { notJson } from '../protocol/json.js'
import { isPlainObject } from '../protocol/wire.js'
import { MAX_CLOCK_SKEW_MS, Sealer, type KeyRing } from '../seal/seal.js'

export interface RequestStatePayload {
  method: string
  originalParams: Record<string, unknown>
  journal: Journal
  issuedAt: number
  principal: string | null
  round?: number
}

/** `ttl` in ms; `now` in epoch ms; token lengths in characters. */
interface RequestStateCodecParts {
  ring: KeyRing
  ttl: number
  now?: () => number
  maxTokenLength?: number
}

export const DEFAULT_MAX_TOKEN_LENGTH = 65_536

const REQUEST_STATE_PURPOSE = 2

export class UncarriableError extends TypeError {
  constructor (reason: string) {
    super(reason)
    this.name = 'UncarriableError'
  }
}

// Why a value would not come back the same: `1e400` (Infinity) returns as null, binding the token to other params.
// What a client sends nests at most MAX_DEPTH deep (the envelope refuses more), so the walk is bounded.
function unwritable (value: unknown): string | undefined {
  const reason = notJson(value, Infinity)
  return reason === undefined ? undefined : `it holds ${reason}, which JSON cannot write`
}

export class RequestStateCodec {
  readonly #sealer: Sealer
  readonly #ttl: number
  readonly #now: () => number

  constructor ({ ring, ttl, now = Date.now, maxTokenLength = DEFAULT_MAX_TOKEN_LENGTH }: RequestStateCodecParts) {
    this.#sealer = new Sealer(ring, REQUEST_STATE_PURPOSE, maxTokenLength)
    this.#ttl = ttl
    this.#now = now
  }

  get maxTokenLength (): number {
    return this.#sealer.maxLength
  }

  /** Throws UncarriableError or TokenTooLongError rather than mint a token that could not be read back the same. */
  encode (payload: Omit<RequestStatePayload, 'issuedAt'> & { issuedAt?: number }): string {
    const { principal, round } = payload
    const unfit = unwritable(payload.originalParams)
    if (unfit !== undefined) throw new UncarriableError(unfit)
    const source = payload.journal.answers
    const answers: unknown[] = new Array(source.length)
    for (let i = 0; i < source.length; i++) {
      const { key, fingerprint, answer } = source[i]
      // An undefined answer leaves the slot pending, as it would in an object (an array would write null).
      if (answer === undefined) {
        answers[i] = [key, fingerprint]
        continue
      }
      const answerUnfit = unwritable(answer)
      if (answerUnfit !== undefined) throw new UncarriableError(`an answer: ${answerUnfit}`)
      answers[i] = [key, fingerprint, answer]
    }
    const issuedAt = payload.issuedAt ?? this.#now()
    const { effects, callId } = payload.journal
    const plain: unknown[] = [payload.method, payload.originalParams, answers, issuedAt, principal]
    if (callId !== undefined) plain.push(round ?? 0, [...effects], callId)
    else if (effects.size > 0) plain.push(round ?? 0, [...effects])
    else if (round !== undefined) plain.push(round)
    return this.#sealer.seal(JSON.stringify(plain))
  }

  /**
   * Until when some node may still take the token of `payload`, in epoch ms by this node's clock: its expiry, plus the
   * skew a node whose clock is behind allows. A claim or a receipt of the token lives as long.
   */
  takenUntil (payload: RequestStatePayload): number {
    return payload.issuedAt + this.#ttl + MAX_CLOCK_SKEW_MS
  }

  /** How long from now some node may still take the token of `payload`, in ms (at least 1). */
  takenFor (payload: RequestStatePayload): number {
    return Math.max(1, this.takenUntil(payload) - this.#now())
  }

  /** Throws only InvalidRequestStateError (not genuine, or malformed) or ExpiredRequestStateError (past its TTL). */
  decode (token: unknown): RequestStatePayload {
    const json = this.#sealer.open(token)
    let plain: unknown
    try {
      plain = JSON.parse(json)
    } catch {
      throw new InvalidRequestStateError('plaintext is not JSON')
    }
    const payload = toPayload(plain)
    if (payload === undefined) throw new InvalidRequestStateError('malformed payload')
    const now = this.#now()
    if (payload.issuedAt > now + MAX_CLOCK_SKEW_MS) throw new InvalidRequestStateError('issued in the future')
    if (now > payload.issuedAt + this.#ttl) throw new ExpiredRequestStateError()
    return payload
  }
}

function toPayload (plain: unknown): RequestStatePayload | undefined {
  if (!Array.isArray(plain) || plain.length < 5 || plain.length > 8) return undefined
  const method: unknown = plain[0]
  const originalParams: unknown = plain[1]
  const entries: unknown = plain[2]
  const issuedAt: unknown = plain[3]
  const principal: unknown = plain[4]
  if (typeof method !== 'string') return undefined
  if (!isPlainObject(originalParams)) return undefined
  if (!Array.isArray(entries)) return undefined
  if (typeof issuedAt !== 'number' || !Number.isFinite(issuedAt)) return undefined
  if (principal !== null && typeof principal !== 'string') return undefined
  const answers: AnswerSlot[] = new Array(entries.length)
  for (let i = 0; i < entries.length; i++) {
    const entry: unknown = entries[i]
    if (!Array.isArray(entry)) return undefined
    const key: unknown = entry[0]
    const fingerprint: unknown = entry[1]
    if (typeof key !== 'string' || typeof fingerprint !== 'string') return undefined
    if (entry.length === 2) answers[i] = { key, fingerprint }
    else if (entry.length === 3) answers[i] = { key, fingerprint, answer: entry[2] }
    else return undefined
  }
  if (plain.length === 5) {
    return { method, originalParams, journal: new Journal(answers), issuedAt, principal }
  }
  const round: unknown = plain[5]
  if (!Number.isSafeInteger(round) || (round as number) < 0) return undefined
  if (plain.length === 6) {
    return { method, originalParams, journal: new Journal(answers), issuedAt, principal, round: round as number }
  }
  const effects = effectsFrom(plain[6])
  const callId: unknown = plain[7]
  if (effects === undefined || (plain.length === 8 && !isCallId(callId))) return undefined
  const journal = new Journal(answers, effects, callId as string | undefined)
  return { method, originalParams, journal, issuedAt, principal, round: round as number }
}

/** `[[key, value], …]` with distinct non-empty keys, or undefined. */
function effectsFrom (recorded: unknown): Array<[string, unknown]> | undefined {
  if (!Array.isArray(recorded)) return undefined
  const keys = new Set<string>()
  for (const effect of recorded) {
    if (!Array.isArray(effect) || effect.length !== 2) return undefined
    const key: unknown = effect[0]
    if (typeof key !== 'string' || key === '' || keys.has(key)) return undefined
    keys.add(key)
  }
  return recorded as Array<[string, unknown]>
}
