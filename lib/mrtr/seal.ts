/**
 * Sealed tokens: AES-256-GCM under a key of the ring, with a key of its own for each token.
 *
 * Token (version 2) = base64url(kind(1) ‖ keyId(4) ‖ salt(16) ‖ nonce(12) ‖ ciphertext ‖ tag(16)). The token's AES
 * key is HMAC-SHA256(ring key, kind ‖ keyId ‖ salt), so no key ever seals twice and the GCM nonce bound per key is
 * never approached (docs/deploy.md#key-lifetime); kind ‖ keyId is the additional authenticated data. The kind byte
 * keeps one kind of token from passing for another (a requestState is never a session id); key ids make rotation
 * work: the first key seals, every key opens.
 *
 * Version 1, without the salt, sealed directly under the ring key: it still opens, and `tokenVersion: 1` still
 * seals it, for the first step of a rolling upgrade from a build that knew only it.
 */
import { createCipheriv, createDecipheriv, createHash, createHmac, createSecretKey, randomFillSync, type KeyObject } from 'node:crypto'
import { InvalidRequestStateError } from '../errors.js'

const AAD_BYTES = 5
const SALT_BYTES = 16
const NONCE_BYTES = 12
const TAG_BYTES = 16
/** What comes before the ciphertext, by token version. */
const HEADER_BYTES = { 1: AAD_BYTES + NONCE_BYTES, 2: AAD_BYTES + SALT_BYTES + NONCE_BYTES } as const
/** The kind byte of a version 2 token is its purpose with this bit set. */
const SALTED = 0x10
// One randomFillSync per 4096 tokens rather than one per token: see bench/README.md#nonce-pool.
const RANDOM_POOL_BYTES = 4096 * (SALT_BYTES + NONCE_BYTES)

/** The layouts a ring can seal in. */
export type TokenVersion = 1 | 2

interface RingKey {
  key: KeyObject
  id: number
}

/** The keys of one plugin registration (`parseKeys` checked them), and the random bytes drawn for them. */
export class KeyRing {
  readonly primary: RingKey
  /** The layout new tokens are sealed in; every ring opens both. */
  readonly version: TokenVersion
  readonly #keys = new Map<number, RingKey>()
  readonly #random = Buffer.allocUnsafe(RANDOM_POOL_BYTES)
  #randomOffset = RANDOM_POOL_BYTES

  constructor (keys: readonly Uint8Array[], version: TokenVersion = 2) {
    for (const raw of keys) {
      const id = createHash('sha256').update(raw).digest().readUInt32BE(0)
      // A key listed twice keeps its first place.
      if (!this.#keys.has(id)) this.#keys.set(id, { key: createSecretKey(raw), id })
    }
    this.primary = this.#keys.values().next().value as RingKey
    this.version = version
  }

  /** The key of a key id, when the ring holds it. */
  key (id: number): RingKey | undefined {
    return this.#keys.get(id)
  }

  /** Fills `target` from `start` to `end` with random bytes never handed out before. */
  fillRandom (target: Buffer, start: number, end: number): void {
    const bytes = end - start
    if (this.#randomOffset + bytes > RANDOM_POOL_BYTES) {
      randomFillSync(this.#random)
      this.#randomOffset = 0
    }
    this.#random.copy(target, start, this.#randomOffset, this.#randomOffset + bytes)
    this.#randomOffset += bytes
  }
}

/** The AES key of one version 2 token: HMAC-SHA256 of its kind, key id and salt under the ring key. */
function tokenKey (ringKey: KeyObject, token: Buffer): Buffer {
  return createHmac('sha256', ringKey).update(token.subarray(0, AAD_BYTES + SALT_BYTES)).digest()
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
 * Seals and opens the tokens of one purpose, each in a buffer of its own. `open` throws an
 * InvalidRequestStateError (with a reason for the log) for anything but a genuine token of this
 * purpose under a key of the ring.
 */
export class Sealer {
  readonly #ring: KeyRing
  readonly #purpose: number
  readonly #maxLength: number
  /** kind ‖ keyId of the ring's first key: the start, and the additional data, of what it seals. */
  readonly #aad: Buffer
  readonly #header: number

  constructor (ring: KeyRing, purpose: number, maxLength: number) {
    this.#ring = ring
    this.#purpose = purpose
    this.#maxLength = maxLength
    this.#header = HEADER_BYTES[ring.version]
    this.#aad = Buffer.alloc(AAD_BYTES)
    this.#aad[0] = ring.version === 2 ? SALTED | purpose : purpose
    this.#aad.writeUInt32BE(ring.primary.id, 1)
  }

  /** The longest token accepted, in characters. */
  get maxLength (): number {
    return this.#maxLength
  }

  /** How long, in characters, the token sealing a plaintext of `bytes` bytes is. */
  tokenLength (bytes: number): number {
    return Math.ceil((this.#header + bytes + TAG_BYTES) * 4 / 3)
  }

  /** Seals `text` under the first key. Throws a TokenTooLongError when the token would be too long. */
  seal (text: string): string {
    const header = this.#header
    const plaintextBytes = Buffer.byteLength(text)
    const length = this.tokenLength(plaintextBytes)
    if (length > this.#maxLength) throw new TokenTooLongError(length, this.#maxLength)
    const token = Buffer.allocUnsafe(header + plaintextBytes + TAG_BYTES)
    this.#aad.copy(token, 0)
    this.#ring.fillRandom(token, AAD_BYTES, header)
    const plaintext = token.subarray(header, header + plaintextBytes)
    plaintext.write(text)
    const primary = this.#ring.primary.key
    const key = header === HEADER_BYTES[2] ? tokenKey(primary, token) : primary
    const cipher = createCipheriv('aes-256-gcm', key, token.subarray(header - NONCE_BYTES, header))
    cipher.setAAD(this.#aad)
    // The ciphertext is as long as the plaintext, and takes its place.
    plaintext.set(cipher.update(plaintext))
    cipher.final()
    token.set(cipher.getAuthTag(), header + plaintextBytes)
    return token.toString('base64url')
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
    const version = bytes[0] === (SALTED | this.#purpose) ? 2 : bytes[0] === this.#purpose ? 1 : undefined
    const header = HEADER_BYTES[version ?? 1]
    // The smallest plaintext is `[]`; anything shorter cannot be a token.
    if (bytes.length < header + 2 + TAG_BYTES) throw new InvalidRequestStateError('too short')
    if (version === undefined) throw new InvalidRequestStateError('unknown version')
    const entry = this.#ring.key(bytes.readUInt32BE(1))
    if (entry === undefined) throw new InvalidRequestStateError('unknown key')

    const tagStart = bytes.length - TAG_BYTES
    try {
      const key = version === 2 ? tokenKey(entry.key, bytes) : entry.key
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(header - NONCE_BYTES, header), { authTagLength: TAG_BYTES })
      // kind ‖ keyId, both checked above.
      decipher.setAAD(bytes.subarray(0, AAD_BYTES))
      decipher.setAuthTag(bytes.subarray(tagStart))
      const text = decipher.update(bytes.subarray(header, tagStart)).toString()
      // GCM releases no bytes at final(); it checks the tag.
      decipher.final()
      return text
    } catch {
      throw new InvalidRequestStateError('authentication failed')
    }
  }
}
