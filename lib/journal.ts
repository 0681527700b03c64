// What a call has recorded across its passes. Answers are matched by order (the Nth ask reads slot N, checked by its
// key and its question's fingerprint), effects by key (so `ctx.once` calls may move; asks may not).
/** One ask of the call: pending until it has an `answer`. */
export interface AnswerSlot {
  readonly key: string
  /** The question's fingerprint (replay/fingerprint.ts): a replay asking another question is a mismatch. */
  readonly fingerprint: string
  readonly answer?: unknown
}

export class Journal {
  readonly answers: AnswerSlot[]
  /** What `ctx.once` recorded, by key, in the order it ran. */
  readonly effects: Map<string, unknown>

  constructor (answers: AnswerSlot[] = [], effects: Iterable<readonly [string, unknown]> = []) {
    this.answers = answers
    this.effects = new Map(effects)
  }

  /** A copy whose slots and effects later passes may add to without touching this one. */
  copy (): Journal {
    return new Journal([...this.answers], this.effects)
  }
}
