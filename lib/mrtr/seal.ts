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
import { KEY_BYTES } from './keys.js'

const AAD_BYTES = 5
const NONCE_BYTES = 12
export const HEADER_BYTES = AAD_BYTES + NONCE_BYTES
const TAG_BYTES = 16
// The smallest plaintext is `[]`; anything shorter cannot be a token.
const MIN_TOKEN_BYTES = HEADER_BYTES + 2 + TAG_BYTES
// One options object for every decipher, rather than one per call.
const DECIPHER_OPTIONS = { authTagLength: TAG_BYTES }
const NONCE_POOL_SIZE = 4096 * NONCE_BYTES

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
export function isCanonicalBase64url (token: string, decoded: number): boolean {
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

interface RingKey {
  key: KeyObject
  id: number
}

/**
 * The keys of one plugin registration, and the nonces drawn for them: a pool refilled in bulk,
 * one `randomFillSync` per 4096 tokens instead of one each.
 */
export class KeyRing {
  readonly primary: RingKey
  readonly #keys = new Map<number, RingKey>()
  readonly #nonces = Buffer.allocUnsafe(NONCE_POOL_SIZE)
  #nonceOffset = NONCE_POOL_SIZE

  constructor (keys: readonly Uint8Array[]) {
    if (!Array.isArray(keys) || keys.length === 0) throw new TypeError('KeyRing: keys must be a non-empty array of 32-byte keys')
    let primary: RingKey | undefined
    keys.forEach((raw: unknown, i) => {
      if (!(raw instanceof Uint8Array) || raw.length !== KEY_BYTES) throw new TypeError(`KeyRing: keys[${i}] must be ${KEY_BYTES} bytes`)
      const id = createHash('sha256').update(raw).digest().readUInt32BE(0)
      const entry = { key: createSecretKey(raw), id }
      primary ??= entry
      // A key listed twice keeps its first place.
      if (!this.#keys.has(id)) this.#keys.set(id, entry)
    })
    this.primary = primary as RingKey
  }

  /** The key of a key id, when the ring holds it. */
  key (id: number): RingKey | undefined {
    return this.#keys.get(id)
  }

  /** Copies the next unused nonce into `target` at `offset`. */
  writeNonce (target: Buffer, offset: number): void {
    if (this.#nonceOffset === NONCE_POOL_SIZE) {
      randomFillSync(this.#nonces)
      this.#nonceOffset = 0
    }
    // A plain loop: for 12 bytes it beats Buffer#copy, which builds a view first.
    const pool = this.#nonces
    const from = this.#nonceOffset
    for (let i = 0; i < NONCE_BYTES; i++) target[offset + i] = pool[from + i]
    this.#nonceOffset = from + NONCE_BYTES
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
 * Seals and opens the tokens of one purpose. `open` throws an InvalidRequestStateError (with a
 * reason for the log) for anything but a genuine token of this purpose under a key of the ring.
 */
export class Sealer {
  readonly #ring: KeyRing
  readonly #purpose: number
  readonly #maxLength: number
  readonly #aad: Buffer
  // Work buffers sized for the longest acceptable token. seal and open are synchronous, so
  // reusing them saves an allocation and a few views per call; nothing returned aliases them.
  readonly #capacity: number
  readonly #sealBuf: Buffer
  readonly #sealNonce: Buffer
  readonly #openBuf: Buffer
  readonly #openNonce: Buffer
  readonly #openTag: Buffer
  readonly #openAad: Buffer

  constructor (ring: KeyRing, purpose: number, maxLength: number) {
    if (!Number.isSafeInteger(maxLength) || maxLength < 1) throw new TypeError('Sealer: maxLength must be a positive integer')
    this.#ring = ring
    this.#purpose = purpose
    this.#maxLength = maxLength
    this.#aad = Buffer.alloc(AAD_BYTES)
    this.#aad[0] = purpose
    this.#aad.writeUInt32BE(ring.primary.id, 1)
    // The most bytes a token of maxLength base64url characters can carry.
    this.#capacity = Math.max(Math.floor(maxLength * 3 / 4), HEADER_BYTES)
    this.#sealBuf = Buffer.alloc(this.#capacity)
    this.#aad.copy(this.#sealBuf, 0)
    this.#sealNonce = this.#sealBuf.subarray(AAD_BYTES, HEADER_BYTES)
    this.#openBuf = Buffer.alloc(this.#capacity)
    this.#openNonce = this.#openBuf.subarray(AAD_BYTES, HEADER_BYTES)
    this.#openTag = Buffer.alloc(TAG_BYTES)
    this.#openAad = this.#openBuf.subarray(0, AAD_BYTES)
  }

  /** The longest token accepted, in characters. */
  get maxLength (): number {
    return this.#maxLength
  }

  /** Seals `text` under the first key. Throws a TokenTooLongError when the token would be too long. */
  seal (text: string): string {
    const out = this.#sealBuf
    // Write first, measure after: a plaintext that leaves no room for the tag may have been cut
    // short (a cut leaves at most 3 bytes free), and is refused either way.
    const plaintextBytes = out.write(text, HEADER_BYTES, 'utf8')
    const length = HEADER_BYTES + plaintextBytes + TAG_BYTES
    if (length > this.#capacity) {
      const full = HEADER_BYTES + Buffer.byteLength(text) + TAG_BYTES
      throw new TokenTooLongError(Math.ceil(full * 4 / 3), this.#maxLength)
    }
    this.#ring.writeNonce(out, AAD_BYTES)
    // Encrypting a Buffer is cheaper than handing the cipher a string to convert; the
    // ciphertext, as long as the plaintext, then overwrites it in place.
    const cipher = createCipheriv('aes-256-gcm', this.#ring.primary.key, this.#sealNonce)
    cipher.setAAD(this.#aad)
    out.set(cipher.update(out.subarray(HEADER_BYTES, HEADER_BYTES + plaintextBytes)), HEADER_BYTES)
    cipher.final()
    out.set(cipher.getAuthTag(), HEADER_BYTES + plaintextBytes)
    return out.toString('base64url', 0, length)
  }

  /** The plaintext of a genuine token. */
  open (token: unknown): string {
    if (typeof token !== 'string') throw new InvalidRequestStateError('not a string')
    if (token.length === 0) throw new InvalidRequestStateError('empty')
    if (token.length > this.#maxLength) throw new InvalidRequestStateError('too long')
    const bytes = this.#openBuf
    const length = bytes.write(token, 0, 'base64url')
    if (!isCanonicalBase64url(token, length)) throw new InvalidRequestStateError('not base64url')
    if (length < MIN_TOKEN_BYTES) throw new InvalidRequestStateError('too short')
    if (bytes[0] !== this.#purpose) throw new InvalidRequestStateError('unknown version')
    const entry = this.#ring.key(bytes.readUInt32BE(1))
    if (entry === undefined) throw new InvalidRequestStateError('unknown key')

    const tagStart = length - TAG_BYTES
    const tag = this.#openTag
    for (let i = 0; i < TAG_BYTES; i++) tag[i] = bytes[tagStart + i]
    try {
      const decipher = createDecipheriv('aes-256-gcm', entry.key, this.#openNonce, DECIPHER_OPTIONS)
      // The header is purpose ‖ keyId, both checked above.
      decipher.setAAD(this.#openAad)
      decipher.setAuthTag(tag)
      // Buffer output then one toString (UTF-8, the argument-less fast path): cheaper than the
      // StringDecoder a string output sets up. GCM releases no bytes at final(); it checks the tag.
      const text = decipher.update(bytes.subarray(HEADER_BYTES, tagStart)).toString()
      decipher.final()
      return text
    } catch {
      throw new InvalidRequestStateError('authentication failed')
    }
  }
}
