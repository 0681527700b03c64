/** requestState keys: 32 random bytes each. Errors name a key's position, never its value, which is a secret. */
import { randomBytes } from 'node:crypto'
import { InvalidKeyError } from '../errors.js'
import { KeyRing, type TokenVersion } from './seal.js'

const KEY_BYTES = 32

const BASE64_ANY = /^[A-Za-z0-9+/_-]+={0,2}$/
const HEX = /^[0-9a-fA-F]{64}$/
// 32 random bytes hold about 30 distinct values; fewer than 16 (chance far below 1e-15) is a repeated pattern.
const MIN_DISTINCT_BYTES = 16

export const MAKE_KEY = 'make one with `node -e "console.log(require(\'crypto\').randomBytes(32).toString(\'base64\'))"` ' +
  '(or `openssl rand -base64 32`)'

export function ephemeralKey (): Buffer {
  return randomBytes(KEY_BYTES)
}

/** Why 32 bytes are plainly not a random key, or undefined when nothing gives them away. */
export function weakness (bytes: Uint8Array): string | undefined {
  if (new Set(bytes).size < MIN_DISTINCT_BYTES) return 'repeats a few byte values (a pattern, or bytes all alike)'
  const step = (bytes[1] - bytes[0]) & 0xff
  let progression = true
  let text = true
  for (let i = 0; i < bytes.length; i++) {
    if (i > 0 && ((bytes[i] - bytes[i - 1]) & 0xff) !== step) progression = false
    if (bytes[i] < 0x20 || bytes[i] > 0x7e) text = false
  }
  if (progression) return 'is a counting sequence'
  // Random bytes are all printable ASCII with a probability of about 1e-14: this is a passphrase.
  if (text) return 'is printable text (a passphrase), not random bytes'
  return undefined
}

function decodeKey (key: unknown, i: number): Buffer {
  const where = `requestState.keys[${i}]`
  if (typeof key !== 'string') throw new InvalidKeyError(`${where} must be a base64, base64url or hex string, got ${key === null ? 'null' : Array.isArray(key) ? 'an array' : typeof key}`)
  const text = key.trim()
  if (HEX.test(text)) return Buffer.from(text, 'hex')
  if (!BASE64_ANY.test(text)) throw new InvalidKeyError(`${where} is not base64, base64url or hex`)
  // Node's base64 decoder reads both alphabets.
  const bytes = Buffer.from(text, 'base64')
  if (bytes.length !== KEY_BYTES) {
    throw new InvalidKeyError(`${where} must decode to ${KEY_BYTES} bytes, got ${bytes.length}: ${MAKE_KEY}`)
  }
  return bytes
}

export function parseKeys (keys: readonly unknown[]): Buffer[] {
  return keys.map((key, i) => {
    const bytes = decodeKey(key, i)
    const weak = weakness(bytes)
    if (weak !== undefined) throw new InvalidKeyError(`requestState.keys[${i}] ${weak}: use 32 random bytes; ${MAKE_KEY}`)
    return bytes
  })
}

export function keysFromEnv (value: string | undefined): string[] | undefined {
  if (value === undefined) return undefined
  const keys = value.split(',').map((s) => s.trim()).filter((s) => s !== '')
  return keys.length === 0 ? undefined : keys
}

/** A ring of the keys given, else `MOCAPI_REQUEST_STATE_KEYS`, else an ephemeral key (with a warning). */
export function keyRingOf (keys: string[] | undefined, version: TokenVersion, warn: (text: string) => void): KeyRing {
  const configured = keys ?? keysFromEnv(process.env.MOCAPI_REQUEST_STATE_KEYS)
  if (configured !== undefined) return new KeyRing(parseKeys(configured), version)
  warn('mocapi: no requestState keys configured (requestState.keys or MOCAPI_REQUEST_STATE_KEYS); ' +
    'using an ephemeral key: tokens in flight are lost on restart and other nodes cannot read them')
  return new KeyRing([ephemeralKey()], version)
}
