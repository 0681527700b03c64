// What a call has recorded across its passes. Answers are matched by order (the Nth ask reads slot N, checked by its
// key and its question's fingerprint), effects by key (so `ctx.once` calls may move; asks may not).
import { randomBytes } from 'node:crypto'

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
  /** `ctx.callId`: minted at the call's first pass, or derived from its idempotency key, then carried. */
  callId: string | undefined

  constructor (answers: AnswerSlot[] = [], effects: Iterable<readonly [string, unknown]> = [], callId?: string) {
    this.answers = answers
    this.effects = new Map(effects)
    this.callId = callId
  }
}

/** 128 random bits, 22 base64url characters. */
export function newCallId (): string {
  return randomBytes(16).toString('base64url')
}

export function isCallId (value: unknown): value is string {
  return typeof value === 'string' && CALL_ID.test(value)
}

const CALL_ID = /^[A-Za-z0-9_-]{22}$/
