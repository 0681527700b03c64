/**
 * Sealed tokens: AES-256-GCM under a key ring, as base64url text.
 *
 * Token = base64url(purpose(1) ‖ keyId(4) ‖ nonce(12) ‖ ciphertext ‖ tag(16)),
 * with purpose ‖ keyId as additional authenticated data. The purpose byte keeps one kind of
 * token from passing for another (a requestState is never a session id); key ids make
 * rotation work: the first key seals, every key opens.
 */
import { createCipheriv, createDecipheriv, createHash, createSecretKey, randomFillSync, type KeyObject } from 'node:crypto'
import { InvalidRequestStateError } from '../errors.js'

const AAD_BYTES = 5
const NONCE_BYTES = 12
const HEADER_BYTES = AAD_BYTES + NONCE_BYTES
const TAG_BYTES = 16
// The smallest plaintext is `[]`; anything shorter cannot be a token.
const MIN_TOKEN_BYTES = HEADER_BYTES + 2 + TAG_BYTES
const NONCE_POOL_SIZE = 4096 * NONCE_BYTES

interface RingKey {
  key: KeyObject
  id: number
}

/** The keys of one plugin registration (`parseKeys` checked them), and the nonces drawn for them. */
export class KeyRing {
  readonly primary: RingKey
  readonly #keys = new Map<number, RingKey>()
  // One randomFillSync per 4096 nonces rather than one per token: see bench/README.md#nonce-pool.
  readonly #nonces = Buffer.allocUnsafe(NONCE_POOL_SIZE)
  #nonceOffset = NONCE_POOL_SIZE

  constructor (keys: readonly Uint8Array[]) {
    for (const raw of keys) {
      const id = createHash('sha256').update(raw).digest().readUInt32BE(0)
      // A key listed twice keeps its first place.
      if (!this.#keys.has(id)) this.#keys.set(id, { key: createSecretKey(raw), id })
    }
    this.primary = this.#keys.values().next().value as RingKey
  }

  /** The key of a key id, when the ring holds it. */
  key (id: number): RingKey | undefined {
    return this.#keys.get(id)
  }

  /** A nonce never handed out before: a copy, so no caller holds a view of the pool. */
  nonce (): Buffer {
    if (this.#nonceOffset === NONCE_POOL_SIZE) {
      randomFillSync(this.#nonces)
      this.#nonceOffset = 0
    }
    const from = this.#nonceOffset
    this.#nonceOffset = from + NONCE_BYTES
    return Buffer.from(this.#nonces.subarray(from, this.#nonceOffset))
  }
}

/** A token whose plaintext would not fit in the longest token accepted. */
export class TokenTooLongError extends RangeError {
  /** How long the token would have been, in characters. */
  readonly length: number

  constructor (length: number, max: number) {
    super(`token of ${length} characters exceeds the limit of ${max}`)
    this.name = 'TokenTooLongError'
    this.length = length
  }
}

/**
 * Seals and opens the tokens of one purpose, in buffers made for each token (bench/README.md#plain-crypto).
 * `open` throws an InvalidRequestStateError (with a reason for the log) for anything but a genuine
 * token of this purpose under a key of the ring.
 */
export class Sealer {
  readonly #ring: KeyRing
  readonly #purpose: number
  readonly #maxLength: number
  /** purpose ‖ keyId of the ring's first key: the header, and the additional data, of what it seals. */
  readonly #aad: Buffer

  constructor (ring: KeyRing, purpose: number, maxLength: number) {
    this.#ring = ring
    this.#purpose = purpose
    this.#maxLength = maxLength
    this.#aad = Buffer.alloc(AAD_BYTES)
    this.#aad[0] = purpose
    this.#aad.writeUInt32BE(ring.primary.id, 1)
  }

  /** The longest token accepted, in characters. */
  get maxLength (): number {
    return this.#maxLength
  }

  /** How long, in characters, the token sealing a plaintext of `bytes` bytes is. */
  tokenLength (bytes: number): number {
    return Math.ceil((HEADER_BYTES + bytes + TAG_BYTES) * 4 / 3)
  }

  /** Seals `text` under the first key. Throws a TokenTooLongError when the token would be too long. */
  seal (text: string): string {
    const plaintext = Buffer.from(text)
    const length = this.tokenLength(plaintext.length)
    if (length > this.#maxLength) throw new TokenTooLongError(length, this.#maxLength)
    const nonce = this.#ring.nonce()
    const cipher = createCipheriv('aes-256-gcm', this.#ring.primary.key, nonce)
    cipher.setAAD(this.#aad)
    const ciphertext = Buffer.concat([cipher.update(plaintext), cipher.final()])
    return Buffer.concat([this.#aad, nonce, ciphertext, cipher.getAuthTag()]).toString('base64url')
  }

  /** The plaintext of a genuine token. */
  open (token: unknown): string {
    if (typeof token !== 'string') throw new InvalidRequestStateError('not a string')
    if (token.length === 0) throw new InvalidRequestStateError('empty')
    if (token.length > this.#maxLength) throw new InvalidRequestStateError('too long')
    // Node's decoder skips what it cannot read and takes either alphabet; only the one spelling
    // of the bytes, unpadded base64url, is a token.
    const bytes = Buffer.from(token, 'base64url')
    if (bytes.toString('base64url') !== token) throw new InvalidRequestStateError('not base64url')
    if (bytes.length < MIN_TOKEN_BYTES) throw new InvalidRequestStateError('too short')
    if (bytes[0] !== this.#purpose) throw new InvalidRequestStateError('unknown version')
    const entry = this.#ring.key(bytes.readUInt32BE(1))
    if (entry === undefined) throw new InvalidRequestStateError('unknown key')

    const tagStart = bytes.length - TAG_BYTES
    try {
      const decipher = createDecipheriv('aes-256-gcm', entry.key, bytes.subarray(AAD_BYTES, HEADER_BYTES), { authTagLength: TAG_BYTES })
      // The header is purpose ‖ keyId, both checked above.
      decipher.setAAD(bytes.subarray(0, AAD_BYTES))
      decipher.setAuthTag(bytes.subarray(tagStart))
      const plaintext = Buffer.concat([decipher.update(bytes.subarray(HEADER_BYTES, tagStart)), decipher.final()])
      return plaintext.toString()
    } catch {
      throw new InvalidRequestStateError('authentication failed')
    }
  }
}
