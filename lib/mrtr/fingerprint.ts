/**
 * Fingerprints of input requests, kept in the ledger so a replay can tell that a handler asked
 * something else at an ordinal already answered. A question's text may hold data a third party
 * can edit between rounds (an amount to confirm), so the digest is cryptographic: SHA-256, cut to
 * 128 bits, of the request's shape and of its text, kept apart so a mismatch can say which one
 * differed.
 */
import { hash } from 'node:crypto'
import type { InputRequest } from '../protocol/wire.js'

/** The kinds of input request, each with the character that starts its fingerprints. */
export const KIND_MARK = { elicit: 'e', elicitUrl: 'u', sample: 's', roots: 'r' } as const

export type QuestionKind = keyof typeof KIND_MARK

/**
 * One input request as the engine sees it: what it fingerprints, and the wire request itself,
 * built only when the request is actually sent (a replayed round that finds the answer in the
 * ledger never needs it).
 */
export interface Question {
  readonly kind: QuestionKind
  /** {@link digest} of the request's shape: its requested schema, URL or sampling params. */
  readonly shape: string
  /** The text shown to the user; empty for sampling and roots. */
  readonly text: string
  /** About how many characters the request takes when sent: its text and its shape's source (schema, URL, params). */
  readonly size: number
  build (): InputRequest
}

const BASE64URL = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'

// For each base64url character, the one standing for its top 2 bits alone: the 22nd character of
// a 16-byte encoding carries the last 2 bits of those bytes and 4 bits of padding.
const TOP_TWO_BITS: string[] = []
for (let value = 0; value < 64; value++) TOP_TWO_BITS[BASE64URL.charCodeAt(value)] = BASE64URL[value & 0b110000]

/** The first 128 bits of SHA-256 over a domain and a text, as the 22 base64url characters that encode those 16 bytes. */
export function digest (domain: string, text: string): string {
  // The one-shot hash with text output: a digest returned as a Buffer costs five times as much,
  // most of it in making the Buffer. 21 characters carry 126 bits; the 22nd keeps its top 2 bits.
  const full = hash('sha256', `${domain}\0${text}`, 'base64url')
  return full.slice(0, 21) + TOP_TWO_BITS[full.charCodeAt(21)]
}

const DIGEST_LENGTH = 22

/** The fingerprint of a question: its kind's mark, its shape's digest, its text's digest. */
export function fingerprint (question: Question): string {
  return KIND_MARK[question.kind] + question.shape + digest('text', question.text)
}

/** Which part of a fingerprint differs from the other's, or undefined when they are equal. */
export function differingPart (kept: string, asked: string, kind: QuestionKind): 'kind' | 'schema' | 'url' | 'params' | 'message' | undefined {
  if (kept === asked) return undefined
  if (kept[0] !== asked[0]) return 'kind'
  if (kept.slice(1, 1 + DIGEST_LENGTH) !== asked.slice(1, 1 + DIGEST_LENGTH)) {
    return kind === 'elicit' ? 'schema' : kind === 'elicitUrl' ? 'url' : 'params'
  }
  return 'message'
}
