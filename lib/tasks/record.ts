/** What a task carries between its passes, sealed so a store sees only ids, statuses and timestamps. */
import { createHmac } from 'node:crypto'
import type { LedgerEntry } from '../mrtr/codec.js'
import { Sealer, type KeyRing } from '../mrtr/seal.js'
import { deepFreeze, type InputRequest, type JsonObject, type RequestId } from '../protocol/wire.js'
import type { StoredTask } from './store.js'

/** The purpose byte of sealed tasks: neither a requestState nor a session id opens as one. */
const TASK_PURPOSE = 4

/** What a task knows beyond its stored fields. */
export interface TaskState {
  /** The caller it belongs to. */
  readonly principal: string | null
  /** The JSON-RPC id of the `tools/call` that created it. */
  readonly callId: RequestId
  /** `{ name, arguments }` of that call. */
  readonly params: JsonObject
  /** The capabilities and info its client declared on that call. */
  readonly capabilities: JsonObject
  readonly info: JsonObject | undefined
  readonly ttl: number
  readonly pollInterval: number
  /** The input requests of its passes so far, with their answers. */
  readonly ledger: LedgerEntry[]
  readonly round: number
  /** The questions it waits on, while `input_required`. */
  readonly asked?: Record<string, InputRequest>
  /** Answers given so far to those questions. */
  readonly answers?: JsonObject
  /** The `CallToolResult`, once `completed`. */
  readonly result?: JsonObject
  /** The JSON-RPC error, once `failed`. */
  readonly error?: JsonObject
  readonly message?: string
  /** Whether a pass whose node stopped runs again (the tool's `task.rerun`). */
  readonly rerun?: boolean
}

/** A task as a node works with it: its stored fields and its opened state. */
export interface Task {
  readonly stored: StoredTask
  readonly state: TaskState
}

/** How many opened states a registration keeps, and the longest sealed state it keeps one of. */
const OPENED = 256
const OPENED_LENGTH = 16_384

/**
 * Seals task states under the registration's key ring, and digests callers into store owners. The states of the
 * sealed strings it opened last are kept, frozen: a task polled again opens without decrypting
 * (bench/README.md#tasks).
 */
export class TaskSealer {
  readonly #sealer: Sealer
  readonly #ownerKey: Buffer
  readonly #opened = new Map<string, TaskState>()

  constructor (ring: KeyRing, maxLength: number) {
    this.#sealer = new Sealer(ring, TASK_PURPOSE, maxLength)
    // Owners are digested under a key of their own, derived from the ring's first: stable across the fleet.
    this.#ownerKey = createHmac('sha256', ring.primary.key).update('mocapi task owners').digest()
  }

  /** The owner a store counts a caller's tasks under: not the principal, which only the sealed state holds. */
  owner (principal: string | null, anonymous: string): string {
    const who = principal === null ? `a:${anonymous}` : `p:${principal}`
    return createHmac('sha256', this.#ownerKey).update(who).digest('base64url').slice(0, 22)
  }

  /** The sealed form of a task's state, kept opened: the next read of the task is likely its next poll. */
  seal (state: TaskState): string {
    const json = JSON.stringify(state)
    const sealed = this.#sealer.seal(json)
    this.#keep(sealed, json)
    return sealed
  }

  /** The state of a stored task; throws when it was not sealed by this ring as a task. */
  open (stored: StoredTask): TaskState {
    const sealed = stored.sealed
    const kept = this.#opened.get(sealed)
    if (kept !== undefined) {
      this.#opened.delete(sealed)
      this.#opened.set(sealed, kept)
      return kept
    }
    return this.#keep(sealed, this.#sealer.open(sealed))
  }

  #keep (sealed: string, json: string): TaskState {
    const state = deepFreeze(JSON.parse(json) as TaskState)
    if (sealed.length <= OPENED_LENGTH) {
      if (this.#opened.size >= OPENED) this.#opened.delete(this.#opened.keys().next().value as string)
      this.#opened.set(sealed, state)
    }
    return state
  }
}
