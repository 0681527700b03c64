import { positiveInteger } from '../check.js'

/**
 * A place in one event type's log, `<ms>-<seq>` as a Redis Stream id: ordered by `ms`, then `seq`. `'0-0'` is before
 * every occurrence.
 */
export type Position = string

/** An occurrence as the log keeps it. */
export interface StoredOccurrence {
  readonly position: Position
  readonly eventId: string
  /** Epoch ms. */
  readonly timestamp: number
  /** The payload's JSON text. */
  readonly data: string
}

/** What a read found. */
export interface LogRead {
  /** After the position asked, in order, at most the number asked. */
  readonly occurrences: StoredOccurrence[]
  /** The last position the type's log was given (`'0-0'` when none). */
  readonly head: Position
  /** Occurrences at or before it are gone (age or bytes); `'0-0'` when none was dropped. */
  readonly floor: Position
}

/** A webhook subscription as the log keeps it: its record sealed (the client's secret is inside), until it expires. */
export interface StoredSubscription {
  readonly id: string
  readonly name: string
  /** Who holds it (a digest of the principal), for the per-principal bound. */
  readonly owner: string
  readonly sealed: string
  /** Epoch ms. */
  readonly expiresAt: number
}

/** A delivery job: `id` names it fleet-wide, `body` is opaque to the log; `attempt` counts its earlier claims. */
export interface DeliveryJob {
  readonly id: string
  readonly body: string
  readonly attempt: number
}

/**
 * Where occurrences, webhook subscriptions and webhook deliveries live for every node. Each method resolves once its
 * effect is visible to every node. `mocapi/testing`'s `eventLogChecks` are what a log must pass.
 *
 * Appending to a type that has subscriptions also enqueues, in the same step, the job `fanout|<name>|<position>` (body
 * `''`, due now): a node that dies after appending loses no webhook delivery, since any node's worker runs the fan-out.
 */
export interface EventLog {
  /**
   * Appends an occurrence of `name`, or finds the one of the same `eventId` still kept (`stored: false`, its position);
   * drops what is older than the log's `maxAge` or past its bytes.
   */
  append (name: string, occurrence: Omit<StoredOccurrence, 'position'>): Promise<{ position: Position, stored: boolean }>
  /** At most `limit` occurrences of `name` after `after`, with the log's head and floor. */
  read (name: string, after: Position, limit: number): Promise<LogRead>
  /**
   * Puts a subscription (replacing the one of its id): `'full'`, and nothing written, when its owner already holds
   * `maxPerOwner` other live ones.
   */
  putSubscription (subscription: StoredSubscription, maxPerOwner: number): Promise<'stored' | 'full'>
  /** The live subscription of `id`. */
  subscription (id: string): Promise<StoredSubscription | undefined>
  /** Removes a subscription; false when there was none live. */
  deleteSubscription (id: string): Promise<boolean>
  /** The live subscriptions of `name`. */
  subscriptions (name: string): Promise<StoredSubscription[]>
  /** Whether `key` was marked within its time (the webhook verification cache). */
  marked (key: string): Promise<boolean>
  mark (key: string, ttlMs: number): Promise<void>
  /** Enqueues jobs due at `dueAt`, each unless its id is queued or was finished within the time `finish` kept it. */
  enqueue (jobs: ReadonlyArray<{ id: string, body: string }>, dueAt: number): Promise<void>
  /**
   * Claims at most `max` jobs due by now: each becomes due again `leaseMs` from now (so a node that dies holding it
   * loses nothing) and its attempt count goes up by one. Two nodes never claim a job in the same lease.
   */
  claim (max: number, leaseMs: number): Promise<DeliveryJob[]>
  /** Makes a claimed job due at `dueAt`. */
  retry (id: string, dueAt: number): Promise<void>
  /** Removes a job for good (delivered, or given up); its id is refused by `enqueue` for `keepMs`. */
  finish (id: string, keepMs: number): Promise<void>
  /** When the next job is due (epoch ms); undefined when none is queued. */
  nextDue (): Promise<number | undefined>
  /** Releases the log's resources when the server closes. */
  close? (): void | Promise<void>
}

/** Options of {@link MemoryEventLog}. */
export interface MemoryEventLogOptions {
  /** ms an occurrence is kept. Default 3 600 000 (an hour). */
  maxAge?: number | undefined
  /** Characters of payload JSON kept across all types; the oldest go first. Default 64 Mi. */
  maxBytes?: number | undefined
  /** Clock in epoch milliseconds; `Date.now` by default. */
  now?: (() => number) | undefined
}

const DEFAULT_MAX_AGE = 3_600_000
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024

/** `a` before `b`: negative; the same: 0. */
export function comparePositions (a: Position, b: Position): number {
  const [am, as] = splitPosition(a)
  const [bm, bs] = splitPosition(b)
  return am !== bm ? am - bm : as - bs
}

export function splitPosition (position: Position): [number, number] {
  const dash = position.indexOf('-')
  return [Number(position.slice(0, dash)), Number(position.slice(dash + 1))]
}

/** Whether `value` is a position: two non-negative safe integers joined by `-`. */
export function isPosition (value: unknown): value is Position {
  return typeof value === 'string' && /^(0|[1-9]\d{0,15})-(0|[1-9]\d{0,15})$/.test(value) &&
    splitPosition(value).every(Number.isSafeInteger)
}

interface TypeLog {
  readonly entries: StoredOccurrence[]
  /** Index of the first live entry: entries before it are dropped lazily, in bulk. */
  start: number
  head: Position
  floor: Position
  readonly ids: Map<string, Position>
}

interface QueuedJob {
  body: string
  dueAt: number
  attempt: number
}

/**
 * The default event log, in this process: one node, lost on exit. Occurrences are kept `maxAge` ms and `maxBytes`
 * characters of payload across all types (the oldest go first), subscriptions until they expire, jobs until finished.
 */
export class MemoryEventLog implements EventLog {
  readonly #logs = new Map<string, TypeLog>()
  readonly #subscriptions = new Map<string, StoredSubscription>()
  /** Subscription ids by type and by owner: a fan-out or a bound reads its own, never every subscription. */
  readonly #byName = new Map<string, Set<string>>()
  readonly #byOwner = new Map<string, Set<string>>()
  readonly #marks = new Map<string, number>()
  /** [dueAt, id] of every job, a min-heap: a claim looks only at what is due; an entry whose job moved is skipped. */
  readonly #due: Array<[number, string]> = []
  readonly #jobs = new Map<string, QueuedJob>()
  readonly #finished = new Map<string, number>()
  readonly #maxAge: number
  readonly #maxBytes: number
  readonly #now: () => number
  #bytes = 0
  #lastMs = 0
  #seq = 0

  constructor (options: MemoryEventLogOptions = {}) {
    this.#maxAge = positiveInteger(options.maxAge, 'MemoryEventLog maxAge', DEFAULT_MAX_AGE)
    this.#maxBytes = positiveInteger(options.maxBytes, 'MemoryEventLog maxBytes', DEFAULT_MAX_BYTES)
    this.#now = options.now ?? Date.now
  }

  async append (name: string, occurrence: Omit<StoredOccurrence, 'position'>): Promise<{ position: Position, stored: boolean }> {
    const log = this.#log(name)
    this.#expire(log)
    const known = log.ids.get(occurrence.eventId)
    if (known !== undefined) return { position: known, stored: false }
    const now = this.#now()
    if (now > this.#lastMs) {
      this.#lastMs = now
      this.#seq = 0
    } else this.#seq++
    const position = `${this.#lastMs}-${this.#seq}`
    log.entries.push({ ...occurrence, position })
    log.ids.set(occurrence.eventId, position)
    log.head = position
    this.#bytes += occurrence.data.length
    while (this.#bytes > this.#maxBytes) this.#dropOldest()
    if (this.#hasSubscriptions(name)) {
      this.#schedule(`fanout|${name}|${position}`, { body: '', dueAt: now, attempt: 0 })
    }
    return { position, stored: true }
  }

  async read (name: string, after: Position, limit: number): Promise<LogRead> {
    const log = this.#logs.get(name)
    if (log === undefined) return { occurrences: [], head: '0-0', floor: '0-0' }
    this.#expire(log)
    const occurrences: StoredOccurrence[] = []
    // Entries are in order: a binary search finds the first after `after`.
    let low = log.start
    let high = log.entries.length
    while (low < high) {
      const middle = (low + high) >>> 1
      if (comparePositions(log.entries[middle].position, after) <= 0) low = middle + 1
      else high = middle
    }
    for (let i = low; i < log.entries.length && occurrences.length < limit; i++) occurrences.push(log.entries[i])
    return { occurrences, head: log.head, floor: log.floor }
  }

  async putSubscription (subscription: StoredSubscription, maxPerOwner: number): Promise<'stored' | 'full'> {
    const held = this.#live(this.#byOwner, subscription.owner).filter((other) => other.id !== subscription.id)
    if (held.length >= maxPerOwner) return 'full'
    this.#unindex(subscription.id)
    this.#subscriptions.set(subscription.id, { ...subscription })
    index(this.#byName, subscription.name, subscription.id)
    index(this.#byOwner, subscription.owner, subscription.id)
    return 'stored'
  }

  async subscription (id: string): Promise<StoredSubscription | undefined> {
    const found = this.#subscriptions.get(id)
    return found !== undefined && found.expiresAt > this.#now() ? found : undefined
  }

  async deleteSubscription (id: string): Promise<boolean> {
    const live = await this.subscription(id)
    this.#unindex(id)
    return live !== undefined
  }

  async subscriptions (name: string): Promise<StoredSubscription[]> {
    return this.#live(this.#byName, name)
  }

  async marked (key: string): Promise<boolean> {
    const until = this.#marks.get(key)
    return until !== undefined && until > this.#now()
  }

  async mark (key: string, ttlMs: number): Promise<void> {
    const now = this.#now()
    sweep(this.#marks, now)
    this.#marks.delete(key)
    this.#marks.set(key, now + ttlMs)
  }

  async enqueue (jobs: ReadonlyArray<{ id: string, body: string }>, dueAt: number): Promise<void> {
    const now = this.#now()
    sweep(this.#finished, now)
    for (const job of jobs) {
      if (this.#jobs.has(job.id) || (this.#finished.get(job.id) ?? 0) > now) continue
      this.#schedule(job.id, { body: job.body, dueAt, attempt: 0 })
    }
  }

  async claim (max: number, leaseMs: number): Promise<DeliveryJob[]> {
    const now = this.#now()
    const claimed: DeliveryJob[] = []
    while (claimed.length < max && this.#dropStale() && this.#due[0][0] <= now) {
      const id = popHeap(this.#due)[1]
      const job = this.#jobs.get(id) as QueuedJob
      claimed.push({ id, body: job.body, attempt: job.attempt })
      job.attempt++
      this.#schedule(id, { ...job, dueAt: now + leaseMs })
    }
    return claimed
  }

  async retry (id: string, dueAt: number): Promise<void> {
    const job = this.#jobs.get(id)
    if (job !== undefined) this.#schedule(id, { ...job, dueAt })
  }

  async finish (id: string, keepMs: number): Promise<void> {
    this.#jobs.delete(id)
    this.#finished.delete(id)
    this.#finished.set(id, this.#now() + keepMs)
  }

  async nextDue (): Promise<number | undefined> {
    return this.#dropStale() ? this.#due[0][0] : undefined
  }

  #schedule (id: string, job: QueuedJob): void {
    this.#jobs.set(id, job)
    pushHeap(this.#due, [job.dueAt, id])
  }

  /** Pops heap entries whose job is gone or was moved; true while a live one is on top. */
  #dropStale (): boolean {
    while (this.#due.length > 0) {
      const [dueAt, id] = this.#due[0]
      if (this.#jobs.get(id)?.dueAt === dueAt) return true
      popHeap(this.#due)
    }
    return false
  }

  /** The live subscriptions an index holds under `key`; expired ones are dropped as they are met. */
  #live (from: Map<string, Set<string>>, key: string): StoredSubscription[] {
    const now = this.#now()
    const live: StoredSubscription[] = []
    for (const id of from.get(key) ?? []) {
      const subscription = this.#subscriptions.get(id) as StoredSubscription
      if (subscription.expiresAt > now) live.push(subscription)
      else this.#unindex(id)
    }
    return live
  }

  #unindex (id: string): void {
    const subscription = this.#subscriptions.get(id)
    if (subscription === undefined) return
    this.#subscriptions.delete(id)
    unindex(this.#byName, subscription.name, id)
    unindex(this.#byOwner, subscription.owner, id)
  }

  #hasSubscriptions (name: string): boolean {
    return this.#live(this.#byName, name).length > 0
  }

  #log (name: string): TypeLog {
    let log = this.#logs.get(name)
    if (log === undefined) {
      log = { entries: [], start: 0, head: '0-0', floor: '0-0', ids: new Map() }
      this.#logs.set(name, log)
    }
    return log
  }

  /** Drops a type's occurrences older than `maxAge`. */
  #expire (log: TypeLog): void {
    // By position, as Redis trims by stream id: both are the log's own clock.
    const oldest = this.#now() - this.#maxAge
    while (log.start < log.entries.length && splitPosition(log.entries[log.start].position)[0] < oldest) this.#drop(log)
  }

  #dropOldest (): void {
    let oldest: TypeLog | undefined
    for (const log of this.#logs.values()) {
      if (log.start >= log.entries.length) continue
      const first = log.entries[log.start].position
      if (oldest === undefined || comparePositions(first, oldest.entries[oldest.start].position) < 0) oldest = log
    }
    // The bytes count live entries only: past the bound, some type holds one.
    this.#drop(oldest as TypeLog)
  }

  #drop (log: TypeLog): void {
    const entry = log.entries[log.start]
    log.start++
    log.floor = entry.position
    log.ids.delete(entry.eventId)
    this.#bytes -= entry.data.length
    // The array is cut once half of it is dropped: each entry is moved at most once on average.
    if (log.start > 1024 && log.start * 2 > log.entries.length) {
      log.entries.splice(0, log.start)
      log.start = 0
    }
  }
}

function index (into: Map<string, Set<string>>, key: string, id: string): void {
  let ids = into.get(key)
  if (ids === undefined) {
    ids = new Set()
    into.set(key, ids)
  }
  ids.add(id)
}

function unindex (from: Map<string, Set<string>>, key: string, id: string): void {
  const ids = from.get(key) as Set<string>
  ids.delete(id)
  if (ids.size === 0) from.delete(key)
}

/** Drops expired entries from the front of a map kept in insertion order: each is looked at once, not at every call. */
function sweep (until: Map<string, number>, now: number): void {
  for (const [key, expiry] of until) {
    if (expiry > now) return
    until.delete(key)
  }
}

function pushHeap (heap: Array<[number, string]>, entry: [number, string]): void {
  heap.push(entry)
  let i = heap.length - 1
  while (i > 0) {
    const parent = (i - 1) >> 1
    if (heap[parent][0] <= entry[0]) break
    heap[i] = heap[parent]
    i = parent
  }
  heap[i] = entry
}

function popHeap (heap: Array<[number, string]>): [number, string] {
  const top = heap[0]
  const last = heap.pop() as [number, string]
  if (heap.length === 0) return top
  let i = 0
  for (;;) {
    const left = 2 * i + 1
    if (left >= heap.length) break
    const child = left + 1 < heap.length && heap[left + 1][0] < heap[left][0] ? left + 1 : left
    if (heap[child][0] >= last[0]) break
    heap[i] = heap[child]
    i = child
  }
  heap[i] = last
  return top
}
