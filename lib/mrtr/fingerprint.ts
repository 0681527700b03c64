/**
 * Fingerprints of input requests, kept in the ledger so a replay can tell that a handler asked
 * something else at an ordinal already answered: the digests of the request's shape and of its
 * text, kept apart so a mismatch can say which one differed.
 */
import { DIGEST_LENGTH, digest } from '../digest.js'
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
