/**
 * The digests that stand for a question's parts in ledger fingerprints. A question's text may hold
 * data a third party can edit between rounds (an amount to confirm), so the digest is
 * cryptographic: SHA-256 cut to 128 bits.
 */
import { hash } from 'node:crypto'

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'

// For each base64url character, the one standing for its top 2 bits alone: the 22nd character of
// a 16-byte encoding carries the last 2 bits of those bytes and 4 bits of padding.
const TOP_TWO_BITS: string[] = []
for (let value = 0; value < 64; value++) TOP_TWO_BITS[BASE64URL.charCodeAt(value)] = BASE64URL[value & 0b110000]

/** The length of a {@link digest}. */
export const DIGEST_LENGTH = 22

/**
 * The first 128 bits of SHA-256 over a domain and a text, as the 22 base64url characters that
 * encode those 16 bytes.
 */
export function digest (domain: string, text: string): string {
  const full = hash('sha256', `${domain}\0${text}`, 'base64url')
  return full.slice(0, 21) + TOP_TWO_BITS[full.charCodeAt(21)]
}
