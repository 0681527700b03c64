/** Kept in the ledger so a replay notices a changed question; shape and text digested apart to say which changed. */
import { DIGEST_LENGTH, digest } from '../seal/digest.js'
import type { Question, QuestionKind } from '../elicitation/questions.js'

const KIND_MARK: Record<QuestionKind, string> = { elicit: 'e', elicitUrl: 'u', sample: 's', roots: 'r' }

/** Kind mark ‖ shape digest ‖ text digest: {@link differingPart} reads these positions. */
export function fingerprint (question: Question): string {
  return KIND_MARK[question.kind] + question.shapeOf() + digest('text', question.text)
}

export function differingPart (kept: string, asked: string, kind: QuestionKind): 'kind' | 'schema' | 'url' | 'params' | 'message' | undefined {
  if (kept === asked) return undefined
  if (kept[0] !== asked[0]) return 'kind'
  if (kept.slice(1, 1 + DIGEST_LENGTH) !== asked.slice(1, 1 + DIGEST_LENGTH)) {
    return kind === 'elicit' ? 'schema' : kind === 'elicitUrl' ? 'url' : 'params'
  }
  return 'message'
}
