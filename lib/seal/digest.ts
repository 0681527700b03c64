/** Cryptographic (SHA-256 cut to 128 bits): a question's text may hold data a third party edits between rounds. */
import { hash } from 'node:crypto'

export const DIGEST_LENGTH = 22

export function digest (domain: string, text: string): string {
  return hash('sha256', `${domain}\0${text}`, 'buffer').subarray(0, 16).toString('base64url')
}
