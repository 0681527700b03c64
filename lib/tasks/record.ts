/** What a task carries between its passes, sealed so a store sees only ids, statuses and timestamps. */
import { LruMap } from 'toad-cache'
import { createHmac } from 'node:crypto'
import type { InvalidRequestStateError } from '../errors.js'
import { Journal } from '../journal.js'
import { Sealer, type KeyRing } from '../seal/seal.js'
import { deepFreeze, type InputRequest, type JsonObject, type RequestId } from '../protocol/wire.js'
import type { StoredTask } from './store.js'

// Task states' purpose bytes, so no requestState or session id opens as one: 5 binds a state to its task's id; 4
// (sealed before that) does not, and still opens.
const BOUND_PURPOSE = 5
const UNBOUND_PURPOSE = 4

/** A journal slot as a task's sealed state spells it: its key `k`, fingerprint `f` and answer `r`. */
export interface StoredSlot {
  readonly k: string
  readonly f: string
  readonly r?: unknown
}

export interface TaskState {
  readonly principal: string | null
  readonly callId: RequestId
  readonly params: JsonObject
  readonly capabilities: JsonObject
  readonly info: JsonObject | undefined
  readonly ttl: number
  readonly pollInterval: number
  readonly ledger: readonly StoredSlot[]
  readonly round: number
  /** What `ctx.once` recorded in the passes so far, `[key, value]` in order (left out while empty). */
  readonly effects?: ReadonlyArray<readonly [string, unknown]>
  /** `ctx.callId` (`callId` above is the creating request's JSON-RPC id). */
  readonly ctxCallId?: string
  /** While `input_required`: the questions, and the answers given so far. */
  readonly asked?: Record<string, InputRequest>
  readonly answers?: JsonObject
  readonly result?: JsonObject
  readonly error?: JsonObject
  readonly message?: string
  readonly rerun?: boolean
}

/** The journal a task's next pass starts from: its own copy, which that pass adds to. */
export function journalOf (state: TaskState): Journal {
  const answers = state.ledger.map((slot) => 'r' in slot ? { key: slot.k, fingerprint: slot.f, answer: slot.r } : { key: slot.k, fingerprint: slot.f })
  return new Journal(answers, state.effects, state.ctxCallId)
}

/** The journal as a state spells it; effects are left out while there are none, so such a task keeps its old shape. */
export function journalFields (journal: Journal): Pick<TaskState, 'ledger' | 'effects' | 'ctxCallId'> {
  const ledger = journal.answers.map((slot) => 'answer' in slot
    ? { k: slot.key, f: slot.fingerprint, r: slot.answer }
    : { k: slot.key, f: slot.fingerprint })
  // Every pass's journal has its call's id (the engine gives it one).
  const fields = { ledger, ctxCallId: journal.callId }
  return journal.effects.size > 0 ? { ...fields, effects: [...journal.effects] } : fields
}

export interface Task {
  readonly stored: StoredTask
  readonly state: TaskState
}

// A state is bound to its task's id (`bound` below), so a store writer cannot pass one task's state off as another's (a
// whole record put back as it was is still self-consistent: a store must keep its writers trusted).
export type TaskRecord = Omit<StoredTask, 'sealed'>

const OPENED = 256
const OPENED_LENGTH = 16_384

/** Keeps the states it opened last, frozen: a task polled again opens without decrypting (bench/README.md#tasks). */
export class TaskSealer {
  readonly #sealer: Sealer
  readonly #unbound: Sealer
  readonly #ownerKey: Buffer
  readonly #opened = new LruMap<{ bound: string, state: TaskState }>(OPENED)

  constructor (ring: KeyRing, maxLength: number) {
    this.#sealer = new Sealer(ring, BOUND_PURPOSE, maxLength)
    this.#unbound = new Sealer(ring, UNBOUND_PURPOSE, maxLength)
    // Owners are digested under a key of their own, derived from the ring's first: stable across the fleet.
    this.#ownerKey = createHmac('sha256', ring.primary.key).update('mocapi task owners').digest()
  }

  get maxLength (): number {
    return this.#sealer.maxLength
  }

  /** The owner a store counts a caller's tasks under: not the principal, which only the sealed state holds. */
  owner (principal: string | null, anonymous: string): string {
    const who = principal === null ? `a:${anonymous}` : `p:${principal}`
    return createHmac('sha256', this.#ownerKey).update(who).digest('base64url').slice(0, 22)
  }

  /** Kept opened: the next read is likely the task's next poll. Throws TokenTooLongError past the longest state. */
  seal (record: TaskRecord, state: TaskState): StoredTask {
    const json = JSON.stringify(state)
    const bound = record.id
    const sealed = this.#sealer.seal(json, bound)
    this.#keep(sealed, bound, json)
    return { ...record, sealed }
  }

  open (stored: StoredTask): TaskState {
    const sealed = stored.sealed
    const bound = stored.id
    const kept = this.#opened.get(sealed)
    if (kept !== undefined && kept.bound === bound) return kept.state
    let json
    try {
      json = this.#sealer.open(sealed, bound)
    } catch (error) {
      if ((error as InvalidRequestStateError).reason !== 'unknown version') throw error
      return deepFreeze(JSON.parse(this.#unbound.open(sealed)) as TaskState)
    }
    return this.#keep(sealed, bound, json)
  }

  #keep (sealed: string, bound: string, json: string): TaskState {
    const state = deepFreeze(JSON.parse(json) as TaskState)
    if (sealed.length <= OPENED_LENGTH) {
      this.#opened.set(sealed, { bound, state })
    }
    return state
  }
}
