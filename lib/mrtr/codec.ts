/**
 * The requestState codec: a sealed token carrying everything a replayed request needs, so
 * mocapi keeps no per-round state on the server (see seal.ts for the token's layout).
 *
 * The plaintext is internal to this module: an array `[method, originalParams, ledger, issuedAt,
 * principal, round?]` whose ledger entries are `[k, f]` (pending) or `[k, f, r]` (answered), so a
 * token carries no member names (bench/README.md#compact-plaintext); {@link RequestStateCodec.decode}
 * rebuilds the {@link RequestStatePayload} objects.
 */
import { isPlainObject } from '../check.js'
import { ExpiredRequestStateError, InvalidRequestStateError } from '../errors.js'
import { Sealer, type KeyRing } from './seal.js'

/** One input request of a replayed handler, with its answer once the client gave it. */
export interface LedgerEntry {
  /** The input key. */
  k: string
  /** Fingerprint of the input request. */
  f: string
  /** The answer; absent while pending. */
  r?: unknown
}

/** What a requestState token carries. */
export interface RequestStatePayload {
  method: string
  originalParams: Record<string, unknown>
  /** The input requests asked so far, in ordinal order, with the answers given. */
  ledger: LedgerEntry[]
  /** Epoch milliseconds at which the token was minted. */
  issuedAt: number
  principal: string | null
  /** How many input rounds this request has been through; absent counts as 0. */
  round?: number
}

/** Options of {@link RequestStateCodec}, checked by `resolveOptions`. */
interface RequestStateCodecOptions {
  ring: KeyRing
  /** Lifetime of a token in milliseconds. */
  ttl: number
  /** Clock in epoch milliseconds; `Date.now` by default. */
  now?: () => number
  /** Longest token accepted, in characters; {@link DEFAULT_MAX_TOKEN_LENGTH} by default. */
  maxTokenLength?: number
}

/** Default longest token accepted, in characters. */
export const DEFAULT_MAX_TOKEN_LENGTH = 65_536

/** How far in the future `issuedAt` may lie (clock skew between instances), in milliseconds. */
export const MAX_CLOCK_SKEW_MS = 60_000

/** The purpose byte of requestState tokens. */
const REQUEST_STATE_PURPOSE = 2

/** How deep a value a token carries: JSON.stringify recurses, and far deeper nesting overflows the stack. */
export const MAX_CARRIED_DEPTH = 1000

/** A payload a token could not carry and give back the same; the message says why. */
export class UncarriableError extends TypeError {
  constructor (reason: string) {
    super(reason)
    this.name = 'UncarriableError'
  }
}

/**
 * Why a value cannot travel in a token and come back the same, or undefined when it can: a number
 * JSON cannot write (`1e400` parses as Infinity, and would come back as null, binding the token to
 * other arguments than it was made for), or nesting past {@link MAX_CARRIED_DEPTH}.
 */
function unwritable (value: unknown, depth: number): string | undefined {
  if (typeof value === 'number') return Number.isFinite(value) ? undefined : `it holds a number JSON cannot write (${value})`
  if (typeof value !== 'object' || value === null) return undefined
  if (depth >= MAX_CARRIED_DEPTH) return `it is nested more than ${MAX_CARRIED_DEPTH} deep`
  if (Array.isArray(value)) {
    for (const item of value) {
      const reason = unwritable(item, depth + 1)
      if (reason !== undefined) return reason
    }
    return undefined
  }
  for (const key in value) {
    const reason = unwritable((value as Record<string, unknown>)[key], depth + 1)
    if (reason !== undefined) return reason
  }
  return undefined
}

/** Mints and verifies requestState tokens under a key ring. */
export class RequestStateCodec {
  readonly #sealer: Sealer
  readonly #ttl: number
  readonly #now: () => number

  constructor (opts: RequestStateCodecOptions) {
    const { ring, ttl, now = Date.now, maxTokenLength = DEFAULT_MAX_TOKEN_LENGTH } = opts
    this.#sealer = new Sealer(ring, REQUEST_STATE_PURPOSE, maxTokenLength)
    this.#ttl = ttl
    this.#now = now
  }

  /** The longest token accepted, in characters. */
  get maxTokenLength (): number {
    return this.#sealer.maxLength
  }

  /**
   * Encrypts a payload under the first key; `issuedAt` defaults to now.
   * Throws an UncarriableError if the original params or an answer would not come back the same
   * (see {@link unwritable}), and a TokenTooLongError if the token would exceed `maxTokenLength`
   * (it could never be decoded).
   */
  encode (payload: Omit<RequestStatePayload, 'issuedAt'> & { issuedAt?: number }): string {
    const { principal, round } = payload
    const unfit = unwritable(payload.originalParams, 0)
    if (unfit !== undefined) throw new UncarriableError(unfit)
    const source = payload.ledger
    const ledger: unknown[] = new Array(source.length)
    for (let i = 0; i < source.length; i++) {
      const { k, f, r } = source[i]
      const answerUnfit = unwritable(r, 1)
      if (answerUnfit !== undefined) throw new UncarriableError(`an answer: ${answerUnfit}`)
      // As in an object, an undefined answer is no answer: the slot stays pending.
      ledger[i] = r === undefined ? [k, f] : [k, f, r]
    }
    const issuedAt = payload.issuedAt ?? this.#now()
    return this.#sealer.seal(JSON.stringify(round === undefined
      ? [payload.method, payload.originalParams, ledger, issuedAt, principal]
      : [payload.method, payload.originalParams, ledger, issuedAt, principal, round]))
  }

  /**
   * Verifies and decrypts a token. Throws InvalidRequestStateError for anything but a genuine,
   * well-formed token, ExpiredRequestStateError once its TTL has lapsed; never anything else.
   */
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

/**
 * Checks the decrypted plaintext's shape and rebuilds the payload from it in one walk;
 * `undefined` when it has the wrong shape.
 */
function toPayload (plain: unknown): RequestStatePayload | undefined {
  if (!Array.isArray(plain) || (plain.length !== 5 && plain.length !== 6)) return undefined
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
  const ledger: LedgerEntry[] = new Array(entries.length)
  for (let i = 0; i < entries.length; i++) {
    const entry: unknown = entries[i]
    if (!Array.isArray(entry)) return undefined
    const k: unknown = entry[0]
    const f: unknown = entry[1]
    if (typeof k !== 'string' || typeof f !== 'string') return undefined
    if (entry.length === 2) ledger[i] = { k, f }
    else if (entry.length === 3) ledger[i] = { k, f, r: entry[2] }
    else return undefined
  }
  if (plain.length === 5) {
    return { method, originalParams, ledger, issuedAt, principal }
  }
  const round: unknown = plain[5]
  if (!Number.isSafeInteger(round) || (round as number) < 0) return undefined
  return { method, originalParams, ledger, issuedAt, principal, round: round as number }
}
