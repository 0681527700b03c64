/**
 * Fingerprints of input requests, kept in the ledger so a replay can tell that a handler asked
 * something else at an ordinal already answered: the digests of the request's shape and of its
 * text, kept apart so a mismatch can say which one differed.
 */
import { DIGEST_LENGTH, digest } from '../digest.js'
import type { FormAnswers } from '../elicitation/answers.js'
import type { Question, QuestionKind } from '../elicitation/questions.js'

/** The character that starts the fingerprints of each kind of input request. */
const KIND_MARK: Record<QuestionKind, string> = { elicit: 'e', elicitUrl: 'u', sample: 's', roots: 'r' }

/** The fingerprint of a question: its kind's mark, its shape's digest, its text's digest. */
export function fingerprint (question: Question, forms: FormAnswers): string {
  return KIND_MARK[question.kind] + question.shapeOf(forms) + digest('text', question.text)
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
