/** What a task carries between its passes, sealed so a store sees only ids, statuses and timestamps. */
import { createHmac } from 'node:crypto'
import type { LedgerEntry } from '../call.js'
import type { InvalidRequestStateError } from '../errors.js'
import { Sealer, type KeyRing } from '../seal/seal.js'
import { deepFreeze, type InputRequest, type JsonObject, type RequestId } from '../protocol/wire.js'
import type { StoredTask } from './store.js'

/**
 * The purpose byte of sealed task states: neither a requestState nor a session id opens as one. States of purpose 5
 * are bound to their task's id; those of purpose 4 (sealed before that) are not, and still open.
 */
const BOUND_PURPOSE = 5
const UNBOUND_PURPOSE = 4

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

/**
 * What a state is sealed with besides its key: its task's id, so a store writer cannot pass one task's state off as
 * another's. (A whole record put back as it was earlier is self-consistent: a store must keep its writers trusted.)
 */
function boundTo (stored: TaskRecord): string {
  return stored.id
}

/** The stored record a state is being written into, all but its sealed state. */
export type TaskRecord = Omit<StoredTask, 'sealed'>

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
  readonly #unbound: Sealer
  readonly #ownerKey: Buffer
  readonly #opened = new Map<string, { bound: string, state: TaskState }>()

  constructor (ring: KeyRing, maxLength: number) {
    this.#sealer = new Sealer(ring, BOUND_PURPOSE, maxLength)
    this.#unbound = new Sealer(ring, UNBOUND_PURPOSE, maxLength)
    // Owners are digested under a key of their own, derived from the ring's first: stable across the fleet.
    this.#ownerKey = createHmac('sha256', ring.primary.key).update('mocapi task owners').digest()
  }

  /** The longest sealed state, in characters. */
  get maxLength (): number {
    return this.#sealer.maxLength
  }

  /** The owner a store counts a caller's tasks under: not the principal, which only the sealed state holds. */
  owner (principal: string | null, anonymous: string): string {
    const who = principal === null ? `a:${anonymous}` : `p:${principal}`
    return createHmac('sha256', this.#ownerKey).update(who).digest('base64url').slice(0, 22)
  }

  /**
   * The stored task of `record` with `state` sealed into it, kept opened: the next read of the task is likely its next
   * poll. Throws TokenTooLongError past the longest state.
   */
  seal (record: TaskRecord, state: TaskState): StoredTask {
    const json = JSON.stringify(state)
    const bound = boundTo(record)
    const sealed = this.#sealer.seal(json, bound)
    this.#keep(sealed, bound, json)
    return { ...record, sealed }
  }

  /** The state of a stored task; throws when it was not sealed by this ring as a task, for this record. */
  open (stored: StoredTask): TaskState {
    const sealed = stored.sealed
    const bound = boundTo(stored)
    const kept = this.#opened.get(sealed)
    if (kept !== undefined && kept.bound === bound) {
      this.#opened.delete(sealed)
      this.#opened.set(sealed, kept)
      return kept.state
    }
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
      if (this.#opened.size >= OPENED) this.#opened.delete(this.#opened.keys().next().value as string)
      this.#opened.set(sealed, { bound, state })
    }
    return state
  }
}
