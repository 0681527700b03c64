// Token v2 = base64url(kind(1) ‖ keyId(4) ‖ salt(16) ‖ nonce(12) ‖ ciphertext ‖ tag(16)), AES-256-GCM under
// HMAC-SHA256(ring key, kind ‖ keyId ‖ salt), AAD kind ‖ keyId; a salt per epoch (docs/deploy.md#key-lifetime). The
// kind byte keeps one kind of token from passing for another; the first key seals, all open. v1 (no salt) still opens.
import { FifoMap } from 'toad-cache'
import { createCipheriv, createDecipheriv, createHash, createHmac, createSecretKey, randomFillSync, type KeyObject } from 'node:crypto'
import { InvalidRequestStateError } from '../errors.js'

const AAD_BYTES = 5
const SALT_BYTES = 16
const NONCE_BYTES = 12
const TAG_BYTES = 16
const HEADER_BYTES = { 1: AAD_BYTES + NONCE_BYTES, 2: AAD_BYTES + SALT_BYTES + NONCE_BYTES } as const
/** A v2 token's kind byte is its purpose with this bit set. */
const SALTED = 0x10
// One randomFillSync per 4096 tokens: a draw per token costs about as much as the seal (bench/README.md#nonce-pool).
const RANDOM_POOL_BYTES = 4096 * (SALT_BYTES + NONCE_BYTES)
/** Seals under one derived key before a sealer draws a new salt. */
const EPOCH_SEALS = 2 ** 24
/** Derived keys an opener keeps, of salts whose tokens it verified: every node's current epochs, and more. */
const OPENED_SALTS = 1024

export type TokenVersion = 1 | 2

/** How far ahead of a node's clock a token's `issuedAt` may lie: the skew between nodes' clocks a token survives. */
export const MAX_CLOCK_SKEW_MS = 60_000

interface RingKey {
  key: KeyObject
  id: number
}

export class KeyRing {
  readonly primary: RingKey
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

  key (id: number): RingKey | undefined {
    return this.#keys.get(id)
  }

  /** Random bytes never handed out before: a nonce or salt must not repeat. */
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

/** The AES key of a v2 token: HMAC-SHA256 of the ring key over its kind, key id and salt. */
function tokenKey (ringKey: KeyObject, token: Buffer): KeyObject {
  return createSecretKey(createHmac('sha256', ringKey).update(token.subarray(0, AAD_BYTES + SALT_BYTES)).digest())
}

export class TokenTooLongError extends RangeError {
  readonly length: number

  constructor (length: number, max: number) {
    super(`token of ${length} characters exceeds the limit of ${max}`)
    this.name = 'TokenTooLongError'
    this.length = length
  }
}

/** `open` throws InvalidRequestStateError (reason for the log) for anything but a genuine token of this purpose. */
export class Sealer {
  readonly #ring: KeyRing
  readonly #purpose: number
  readonly #maxLength: number
  /** kind ‖ keyId of the first key: the start, and the AAD, of every token it seals. */
  readonly #aad: Buffer
  readonly #header: number
  readonly #epochSeals: number
  /** kind ‖ keyId ‖ salt of the current epoch, and its key; seals left in it. */
  readonly #epoch = Buffer.alloc(AAD_BYTES + SALT_BYTES)
  #epochKey: KeyObject | undefined
  #sealsLeft = 0
  /** The keys of salts whose tokens opened, by kind ‖ keyId ‖ salt; added only after a tag checked. */
  readonly #opened = new FifoMap<KeyObject>(OPENED_SALTS)

  /** `epochSeals`: seals under one salt, for tests; 2^24 otherwise. */
  constructor (ring: KeyRing, purpose: number, maxLength: number, epochSeals = EPOCH_SEALS) {
    this.#ring = ring
    this.#purpose = purpose
    this.#maxLength = maxLength
    this.#header = HEADER_BYTES[ring.version]
    this.#aad = Buffer.alloc(AAD_BYTES)
    this.#aad[0] = ring.version === 2 ? SALTED | purpose : purpose
    this.#aad.writeUInt32BE(ring.primary.id, 1)
    this.#aad.copy(this.#epoch)
    this.#epochSeals = epochSeals
  }

  /** @internal How many derived keys it keeps for opening. */
  get keptKeys (): number {
    return this.#opened.size
  }

  get maxLength (): number {
    return this.#maxLength
  }

  tokenLength (bytes: number): number {
    return Math.ceil((this.#header + bytes + TAG_BYTES) * 4 / 3)
  }

  /** `context`, when given, is bound as additional data: the token opens only with the same context. */
  seal (text: string, context?: string): string {
    const header = this.#header
    const plaintextBytes = Buffer.byteLength(text)
    const length = this.tokenLength(plaintextBytes)
    if (length > this.#maxLength) throw new TokenTooLongError(length, this.#maxLength)
    const token = Buffer.allocUnsafe(header + plaintextBytes + TAG_BYTES)
    let key = this.#ring.primary.key
    if (header === HEADER_BYTES[2]) {
      key = this.#sealingKey()
      this.#epoch.copy(token, 0)
    } else this.#aad.copy(token, 0)
    this.#ring.fillRandom(token, header - NONCE_BYTES, header)
    const plaintext = token.subarray(header, header + plaintextBytes)
    plaintext.write(text)
    const cipher = createCipheriv('aes-256-gcm', key, token.subarray(header - NONCE_BYTES, header))
    cipher.setAAD(context === undefined ? this.#aad : Buffer.concat([this.#aad, Buffer.from(context)]))
    // GCM ciphertext is as long as the plaintext, so it takes the plaintext's place in the token.
    plaintext.set(cipher.update(plaintext))
    cipher.final()
    token.set(cipher.getAuthTag(), header + plaintextBytes)
    return token.toString('base64url')
  }

  /** The current epoch's key, a new salt drawn when the epoch is spent; its key is kept for opening too. */
  #sealingKey (): KeyObject {
    if (this.#sealsLeft === 0 || this.#epochKey === undefined) {
      this.#ring.fillRandom(this.#epoch, AAD_BYTES, AAD_BYTES + SALT_BYTES)
      this.#epochKey = tokenKey(this.#ring.primary.key, this.#epoch)
      this.#sealsLeft = this.#epochSeals
      this.#keep(this.#epoch.toString('latin1'), this.#epochKey)
    }
    this.#sealsLeft--
    return this.#epochKey
  }

  #keep (salt: string, key: KeyObject): void {
    this.#opened.set(salt, key)
  }

  open (token: unknown, context?: string): string {
    if (typeof token !== 'string') throw new InvalidRequestStateError('not a string')
    if (token.length === 0) throw new InvalidRequestStateError('empty')
    if (token.length > this.#maxLength) throw new InvalidRequestStateError('too long')
    // Node's decoder skips bad characters and takes either alphabet: only canonical unpadded base64url is a token.
    const bytes = Buffer.from(token, 'base64url')
    if (bytes.toString('base64url') !== token) throw new InvalidRequestStateError('not base64url')
    const version = bytes[0] === (SALTED | this.#purpose) ? 2 : bytes[0] === this.#purpose ? 1 : undefined
    const header = HEADER_BYTES[version ?? 1]
    // The smallest plaintext is `[]`.
    if (bytes.length < header + 2 + TAG_BYTES) throw new InvalidRequestStateError('too short')
    if (version === undefined) throw new InvalidRequestStateError('unknown version')
    const entry = this.#ring.key(bytes.readUInt32BE(1))
    if (entry === undefined) throw new InvalidRequestStateError('unknown key')

    const tagStart = bytes.length - TAG_BYTES
    const salt = version === 2 ? bytes.toString('latin1', 0, AAD_BYTES + SALT_BYTES) : ''
    const kept = version === 2 ? this.#opened.get(salt) : undefined
    try {
      const key = version === 2 ? kept ?? tokenKey(entry.key, bytes) : entry.key
      const decipher = createDecipheriv('aes-256-gcm', key, bytes.subarray(header - NONCE_BYTES, header), { authTagLength: TAG_BYTES })
      const aad = bytes.subarray(0, AAD_BYTES)
      decipher.setAAD(context === undefined ? aad : Buffer.concat([aad, Buffer.from(context)]))
      decipher.setAuthTag(bytes.subarray(tagStart))
      const text = decipher.update(bytes.subarray(header, tagStart)).toString()
      // final() releases no bytes under GCM; it checks the tag.
      decipher.final()
      if (version === 2 && kept === undefined) this.#keep(salt, key)
      return text
    } catch {
      throw new InvalidRequestStateError('authentication failed')
    }
  }
}
