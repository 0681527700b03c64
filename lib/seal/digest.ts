/** Cryptographic (SHA-256 cut to 128 bits): a question's text may hold data a third party edits between rounds. */
import { hash } from 'node:crypto'

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'

// Keeps a character's top 2 bits: the 22nd of a 16-byte encoding holds 2 data bits and 4 of padding.
const TOP_TWO_BITS: string[] = []
for (let value = 0; value < 64; value++) TOP_TWO_BITS[BASE64URL.charCodeAt(value)] = BASE64URL[value & 0b110000]

export const DIGEST_LENGTH = 22

export function digest (domain: string, text: string): string {
  const full = hash('sha256', `${domain}\0${text}`, 'base64url')
  return full.slice(0, 21) + TOP_TWO_BITS[full.charCodeAt(21)]
}
