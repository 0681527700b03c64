/**
 * The requestState codec: a self-contained AES-256-GCM token carrying everything a
 * replayed request needs, so mocapi keeps no per-round state on the server.
 *
 * Token = base64url(version(1) ‖ keyId(4) ‖ nonce(12) ‖ ciphertext ‖ tag(16)),
 * with version ‖ keyId as additional authenticated data.
 *
 * The plaintext is internal to this module, so it is as compact as JSON allows: an array
 * `[method, originalParams, ledger, issuedAt, principal, round?]` whose ledger entries are
 * `[k, f]` (pending) or `[k, f, r]` (answered). Without the member names the cipher, the
 * base64url and above all JSON.parse have a third less to chew; {@link RequestStateCodec.decode}
 * rebuilds the {@link RequestStatePayload} objects.
 */
import { createCipheriv, createDecipheriv, createHash, createSecretKey, randomBytes, randomFillSync } from 'node:crypto'
import type { KeyObject } from 'node:crypto'
import { ExpiredRequestStateError, InvalidRequestStateError } from '../errors.js'

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
  inputResponses: LedgerEntry[]
  /** Epoch milliseconds at which the token was minted. */
  issuedAt: number
  principal: string | null
  /** How many input rounds this request has been through; absent counts as 0. */
  round?: number
}

/** Options of {@link RequestStateCodec}. */
export interface RequestStateCodecOptions {
  /** 32-byte keys; the first encrypts, every one decrypts. */
  keys: readonly Uint8Array[]
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

// Version 1 carried the payload as a JSON object; its tokens are refused as 'unknown version'.
const VERSION = 2
const KEY_BYTES = 32
const AAD_BYTES = 5
const NONCE_BYTES = 12
const HEADER_BYTES = AAD_BYTES + NONCE_BYTES
const TAG_BYTES = 16
// The smallest plaintext is `[]`; anything shorter cannot be a token.
const MIN_TOKEN_BYTES = HEADER_BYTES + 2 + TAG_BYTES
const BASE64_ANY = /^[A-Za-z0-9+/_-]+={0,2}$/
// One options object for every decipher, rather than one per call.
const DECIPHER_OPTIONS = { authTagLength: TAG_BYTES }

// Nonces come from a pool refilled in bulk: one randomFillSync per 4096 tokens instead of one each.
const NONCE_POOL_SIZE = 4096 * NONCE_BYTES
const noncePool = Buffer.allocUnsafe(NONCE_POOL_SIZE)
let nonceOffset = NONCE_POOL_SIZE

// For a final character standing for 2 (bit 1) or 4 (bit 2) bits of padding, whether those bits are 0.
const ZERO_TAIL = new Uint8Array(128)
for (let value = 0; value < 64; value++) {
  const code = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'.charCodeAt(value)
  if ((value & 0b11) === 0) ZERO_TAIL[code] |= 2
  if ((value & 0b1111) === 0) ZERO_TAIL[code] |= 4
}

/**
 * Whether `token`, which Node's decoder read as `decoded` bytes, is exactly the unpadded
 * base64url encoding of those bytes: the only spelling a token is accepted in.
 * Cheaper than re-encoding and comparing, and equivalent to it (the tests check both ways).
 */
function isCanonicalBase64url (token: string, decoded: number): boolean {
  // The decoder skips characters outside both alphabets, '=' included, so any of them makes the
  // token longer than the canonical length; it reads a UTF-16 unit by its low byte, so anything
  // but ASCII must be refused first (it takes more UTF-8 bytes than characters).
  if (token.length !== Math.ceil(decoded * 4 / 3) || Buffer.byteLength(token) !== token.length) return false
  // The decoder reads the base64 alphabet as well; '+' and '/' would pass for '-' and '_'.
  if (token.includes('+') || token.includes('/')) return false
  // The bits of the last character past the final byte must be 0.
  const tail = token.length & 3
  return tail === 0 || (ZERO_TAIL[token.charCodeAt(token.length - 1)] & (tail === 2 ? 4 : 2)) !== 0
}

/** Copy the next unused nonce into `target` at `offset`. */
function writeNonce (target: Buffer, offset: number): void {
  if (nonceOffset === NONCE_POOL_SIZE) {
    randomFillSync(noncePool)
    nonceOffset = 0
  }
  // A plain loop: for 12 bytes it beats Buffer#copy, which builds a view first.
  for (let i = 0; i < NONCE_BYTES; i++) target[offset + i] = noncePool[nonceOffset + i]
  nonceOffset += NONCE_BYTES
}

/** 32 fresh random bytes: the key of a single process when no keys are configured. */
export function ephemeralKey (): Buffer {
  return randomBytes(KEY_BYTES)
}

/**
 * Validate configured keys: an array of strings, each base64 or base64url of 32 bytes.
 * Errors name the position, never the key.
 */
export function parseKeys (keys: unknown): Buffer[] {
  if (!Array.isArray(keys)) {
    throw new TypeError(`requestState.keys must be an array of base64 strings (got ${describe(keys)})`)
  }
  if (keys.length === 0) {
    throw new TypeError('requestState.keys must not be empty')
  }
  return keys.map((key: unknown, i) => {
    if (typeof key !== 'string') {
      throw new TypeError(`requestState.keys[${i}] must be a base64 or base64url string (got ${describe(key)})`)
    }
    const text = key.trim()
    if (!BASE64_ANY.test(text)) {
      throw new TypeError(`requestState.keys[${i}] is not base64 or base64url`)
    }
    // Node's base64 decoder reads both alphabets.
    const bytes = Buffer.from(text, 'base64')
    if (bytes.length !== KEY_BYTES) {
      throw new TypeError(`requestState.keys[${i}] must decode to ${KEY_BYTES} bytes (got ${bytes.length})`)
    }
    return bytes
  })
}

/** Split a comma-separated environment value into keys; `undefined` when unset or empty. */
export function keysFromEnv (value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined
  const keys = value.split(',').map((s) => s.trim()).filter((s) => s !== '')
  return keys.length === 0 ? undefined : keys
}

function describe (value: unknown): string {
  return value === null ? 'null' : Array.isArray(value) ? 'array' : typeof value
}

interface RingKey {
  key: KeyObject
  aad: Buffer
}

/** Mints and verifies requestState tokens under a key ring. */
export class RequestStateCodec {
  readonly #primary: RingKey
  readonly #ring = new Map<number, RingKey>()
  readonly #ttl: number
  readonly #now: () => number
  readonly #maxTokenLength: number
  // Work buffers sized for the longest acceptable token. encode and decode are synchronous,
  // so reusing them saves an allocation and a few views per call; nothing returned aliases them.
  readonly #capacity: number
  readonly #encodeBuf: Buffer
  readonly #encodeNonce: Buffer
  readonly #decodeBuf: Buffer
  readonly #decodeNonce: Buffer
  readonly #decodeTag: Buffer

  constructor (opts: RequestStateCodecOptions) {
    const { keys, ttl, now = Date.now, maxTokenLength = DEFAULT_MAX_TOKEN_LENGTH } = opts
    if (!Array.isArray(keys) || keys.length === 0) {
      throw new TypeError('RequestStateCodec: keys must be a non-empty array of 32-byte keys')
    }
    if (typeof ttl !== 'number' || !(ttl > 0) || !Number.isFinite(ttl)) {
      throw new TypeError('RequestStateCodec: ttl must be a positive number of milliseconds')
    }
    if (typeof now !== 'function') {
      throw new TypeError('RequestStateCodec: now must be a function')
    }
    if (!Number.isSafeInteger(maxTokenLength) || maxTokenLength < 1) {
      throw new TypeError('RequestStateCodec: maxTokenLength must be a positive integer')
    }
    let primary: RingKey | undefined
    keys.forEach((raw: unknown, i) => {
      if (!(raw instanceof Uint8Array) || raw.length !== KEY_BYTES) {
        throw new TypeError(`RequestStateCodec: keys[${i}] must be ${KEY_BYTES} bytes`)
      }
      const id = createHash('sha256').update(raw).digest().readUInt32BE(0)
      const aad = Buffer.alloc(AAD_BYTES)
      aad[0] = VERSION
      aad.writeUInt32BE(id, 1)
      const entry = { key: createSecretKey(raw), aad }
      primary ??= entry
      // A key listed twice keeps its first place.
      if (!this.#ring.has(id)) this.#ring.set(id, entry)
    })
    this.#primary = primary as RingKey
    this.#ttl = ttl
    this.#now = now
    this.#maxTokenLength = maxTokenLength
    // The most bytes a token of maxTokenLength base64url characters can carry.
    this.#capacity = Math.max(Math.floor(maxTokenLength * 3 / 4), HEADER_BYTES)
    this.#encodeBuf = Buffer.alloc(this.#capacity)
    this.#primary.aad.copy(this.#encodeBuf, 0)
    this.#encodeNonce = this.#encodeBuf.subarray(AAD_BYTES, HEADER_BYTES)
    this.#decodeBuf = Buffer.alloc(this.#capacity)
    this.#decodeNonce = this.#decodeBuf.subarray(AAD_BYTES, HEADER_BYTES)
    this.#decodeTag = Buffer.alloc(TAG_BYTES)
  }

  /**
   * Encrypt a payload under the first key; `issuedAt` defaults to now.
   * Throws a RangeError if the token would exceed `maxTokenLength` (it could never be decoded).
   */
  encode (payload: Omit<RequestStatePayload, 'issuedAt'> & { issuedAt?: number }): string {
    const { principal, round } = payload
    // In an array JSON writes undefined as null, which would read back as the anonymous principal.
    if (principal !== null && typeof principal !== 'string') {
      throw new TypeError(`requestState principal must be a string or null (got ${describe(principal)})`)
    }
    const source = payload.inputResponses
    const ledger: unknown[] = new Array(source.length)
    for (let i = 0; i < source.length; i++) {
      const { k, f, r } = source[i]
      // As in an object, an undefined answer is no answer: the slot stays pending.
      ledger[i] = r === undefined ? [k, f] : [k, f, r]
    }
    const issuedAt = payload.issuedAt ?? this.#now()
    const json = JSON.stringify(round === undefined
      ? [payload.method, payload.originalParams, ledger, issuedAt, principal]
      : [payload.method, payload.originalParams, ledger, issuedAt, principal, round])
    const out = this.#encodeBuf
    // Write first, measure after: a plaintext that leaves no room for the tag may have been cut
    // short (a cut leaves at most 3 bytes free), and is refused either way.
    const plaintextBytes = out.write(json, HEADER_BYTES, 'utf8')
    const length = HEADER_BYTES + plaintextBytes + TAG_BYTES
    if (length > this.#capacity) {
      const full = HEADER_BYTES + Buffer.byteLength(json) + TAG_BYTES
      throw new RangeError(`requestState token of ${Math.ceil(full * 4 / 3)} characters exceeds maxTokenLength ${this.#maxTokenLength}`)
    }
    writeNonce(out, AAD_BYTES)
    // Encrypting a Buffer is cheaper than handing the cipher a string to convert; the
    // ciphertext, as long as the plaintext, then overwrites it in place.
    const cipher = createCipheriv('aes-256-gcm', this.#primary.key, this.#encodeNonce)
    cipher.setAAD(this.#primary.aad)
    out.set(cipher.update(out.subarray(HEADER_BYTES, HEADER_BYTES + plaintextBytes)), HEADER_BYTES)
    cipher.final()
    out.set(cipher.getAuthTag(), HEADER_BYTES + plaintextBytes)
    return out.toString('base64url', 0, length)
  }

  /**
   * Verify and decrypt a token. Throws InvalidRequestStateError for anything but a genuine,
   * well-formed token, ExpiredRequestStateError once its TTL has lapsed; never anything else.
   */
  decode (token: unknown): RequestStatePayload {
    if (typeof token !== 'string') throw new InvalidRequestStateError('not a string')
    if (token.length === 0) throw new InvalidRequestStateError('empty')
    if (token.length > this.#maxTokenLength) throw new InvalidRequestStateError('too long')
    const bytes = this.#decodeBuf
    const length = bytes.write(token, 0, 'base64url')
    if (!isCanonicalBase64url(token, length)) throw new InvalidRequestStateError('not base64url')
    if (length < MIN_TOKEN_BYTES) throw new InvalidRequestStateError('too short')
    if (bytes[0] !== VERSION) throw new InvalidRequestStateError('unknown version')
    const entry = this.#ring.get(bytes.readUInt32BE(1))
    if (entry === undefined) throw new InvalidRequestStateError('unknown key')

    const tagStart = length - TAG_BYTES
    const tag = this.#decodeTag
    for (let i = 0; i < TAG_BYTES; i++) tag[i] = bytes[tagStart + i]
    let json: string
    try {
      const decipher = createDecipheriv('aes-256-gcm', entry.key, this.#decodeNonce, DECIPHER_OPTIONS)
      // Version and keyId matched, so the header equals this key's AAD.
      decipher.setAAD(entry.aad)
      decipher.setAuthTag(tag)
      // Buffer output then one toString (UTF-8, the argument-less fast path): cheaper than the
      // StringDecoder a string output sets up.
      // GCM releases no bytes at final(); it only checks the tag.
      json = decipher.update(bytes.subarray(HEADER_BYTES, tagStart)).toString()
      decipher.final()
    } catch {
      throw new InvalidRequestStateError('authentication failed')
    }

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
 * Check the decrypted plaintext's shape and rebuild the payload from it in one walk;
 * `undefined` when it has the wrong shape.
 */
function toPayload (plain: unknown): RequestStatePayload | undefined {
  if (!Array.isArray(plain) || (plain.length !== 5 && plain.length !== 6)) return undefined
  // Indexing, not destructuring: destructuring an array runs its iterator.
  const method: unknown = plain[0]
  const originalParams: unknown = plain[1]
  const ledger: unknown = plain[2]
  const issuedAt: unknown = plain[3]
  const principal: unknown = plain[4]
  if (typeof method !== 'string') return undefined
  if (typeof originalParams !== 'object' || originalParams === null || Array.isArray(originalParams)) return undefined
  if (!Array.isArray(ledger)) return undefined
  if (typeof issuedAt !== 'number' || !Number.isFinite(issuedAt)) return undefined
  if (principal !== null && typeof principal !== 'string') return undefined
  const inputResponses: LedgerEntry[] = new Array(ledger.length)
  for (let i = 0; i < ledger.length; i++) {
    const entry: unknown = ledger[i]
    if (!Array.isArray(entry)) return undefined
    const k: unknown = entry[0]
    const f: unknown = entry[1]
    if (typeof k !== 'string' || typeof f !== 'string') return undefined
    if (entry.length === 2) inputResponses[i] = { k, f }
    else if (entry.length === 3) inputResponses[i] = { k, f, r: entry[2] }
    else return undefined
  }
  if (plain.length === 5) {
    return { method, originalParams: originalParams as Record<string, unknown>, inputResponses, issuedAt, principal }
  }
  const round: unknown = plain[5]
  if (!Number.isSafeInteger(round) || (round as number) < 0) return undefined
  return { method, originalParams: originalParams as Record<string, unknown>, inputResponses, issuedAt, principal, round: round as number }
}
