/** The statuses of a task. */
export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled'

/**
 * A task as a store keeps it: the fields a store needs in clear, and everything else (arguments, ledger,
 * questions, result, principal) sealed under the requestState key ring.
 */
export interface StoredTask {
  /** 128 random bits, base64url. */
  readonly id: string
  /** 1 when created, one more on each update: what a compare-and-set compares. */
  readonly version: number
  readonly status: TaskStatus
  /** Epoch milliseconds. */
  readonly createdAt: number
  readonly updatedAt: number
  /** When the store may drop the task, in epoch milliseconds. */
  readonly expiresAt: number
  /** While a pass runs: until when the node running it holds the task, in epoch milliseconds. */
  readonly leaseUntil?: number
  /** A keyed digest of the caller: whose tasks count together against `perOwner`; not the principal itself. */
  readonly owner: string
  /** The rest of the task, sealed: opaque to the store. */
  readonly sealed: string
}

/** What one owner may hold in a store at once. */
export interface TaskQuota {
  /** Live tasks. */
  readonly tasks: number
  /** Characters of their sealed states together. */
  readonly bytes: number
}

/**
 * How a write went: `'written'`; `'stale'`, the task is not at the version before (another writer won, or it is gone);
 * `'full'`, the owner's quota or the store's own bound has no room for it.
 */
export type TaskWrite = 'written' | 'stale' | 'full'

/**
 * Keeps tasks for every node of a deployment. Each method resolves once its effect is visible to a `get` on any
 * node. A store counts each task by the length of its `sealed` field, per owner and in all. `mocapi/testing` has the
 * checks a store must pass (`taskStoreChecks`).
 */
export interface TaskStore {
  /**
   * Stores a new task: `'full'` when its owner already holds `quota.tasks` live tasks, when their sealed states and
   * this one's would pass `quota.bytes`, or when the store's own bound is reached. Rejects when a task of that id
   * exists.
   */
  create (task: StoredTask, quota: TaskQuota): Promise<TaskWrite>
  /** The task of an id; undefined when there is none or it expired. */
  get (id: string): Promise<StoredTask | undefined>
  /**
   * Replaces a task when its stored version is `task.version - 1` and it has not expired. With a `quota`, a write that
   * makes the task larger is `'full'` when its owner's states or the store's would then pass their bound; without one
   * (a write that ends a task, whose size is bounded), the bounds are not checked.
   */
  update (task: StoredTask, quota?: TaskQuota): Promise<TaskWrite>
  /** Releases the store's resources when the server closes. */
  close? (): void | Promise<void>
}

/** Options of {@link MemoryTaskStore}. */
export interface MemoryTaskStoreOptions {
  /** The most tasks held at once; a create past it is refused. Default 10 000. */
  maxTasks?: number | undefined
  /** The most characters of sealed state held at once; a create or a growing update past it is refused. 256 MiB. */
  maxBytes?: number | undefined
  /** Clock in epoch milliseconds; `Date.now` by default. */
  now?: (() => number) | undefined
}

interface Owned {
  readonly ids: Set<string>
  bytes: number
}

/** The default store: tasks live in this process, so a single node serves them and a restart loses them. */
export class MemoryTaskStore implements TaskStore {
  readonly #tasks = new Map<string, StoredTask>()
  /** What each owner holds: a create counts it rather than scan every task. */
  readonly #owners = new Map<string, Owned>()
  readonly #maxTasks: number
  readonly #maxBytes: number
  readonly #now: () => number
  #bytes = 0

  constructor (options: MemoryTaskStoreOptions = {}) {
    this.#maxTasks = options.maxTasks ?? 10_000
    this.#maxBytes = options.maxBytes ?? 256 * 1024 * 1024
    this.#now = options.now ?? Date.now
  }

  async create (task: StoredTask, quota: TaskQuota): Promise<TaskWrite> {
    if (this.#live(task.id) !== undefined) throw new Error(`mocapi: a task ${task.id} exists already`)
    const size = task.sealed.length
    if (this.#tasks.size >= this.#maxTasks || this.#bytes + size > this.#maxBytes) this.#sweep()
    if (this.#tasks.size >= this.#maxTasks || this.#bytes + size > this.#maxBytes) return 'full'
    const owned = this.#owners.get(task.owner) ?? { ids: new Set<string>(), bytes: 0 }
    for (const id of owned.ids) this.#live(id)
    if (owned.ids.size >= quota.tasks || owned.bytes + size > quota.bytes) return 'full'
    owned.ids.add(task.id)
    owned.bytes += size
    this.#owners.set(task.owner, owned)
    this.#tasks.set(task.id, task)
    this.#bytes += size
    return 'written'
  }

  async get (id: string): Promise<StoredTask | undefined> {
    return this.#live(id)
  }

  async update (task: StoredTask, quota?: TaskQuota): Promise<TaskWrite> {
    const kept = this.#live(task.id)
    if (kept === undefined || kept.version !== task.version - 1) return 'stale'
    const growth = task.sealed.length - kept.sealed.length
    const owned = this.#owners.get(kept.owner) as Owned
    if (quota !== undefined && growth > 0 && (owned.bytes + growth > quota.bytes || this.#bytes + growth > this.#maxBytes)) return 'full'
    owned.bytes += growth
    this.#bytes += growth
    // The owner a task counts under is the one it was created with.
    this.#tasks.set(task.id, task.owner === kept.owner ? task : { ...task, owner: kept.owner })
    return 'written'
  }

  /** How many tasks it holds, expired ones not yet dropped included. */
  get size (): number {
    return this.#tasks.size
  }

  /** The characters of sealed state it holds, expired tasks not yet dropped included. */
  get bytes (): number {
    return this.#bytes
  }

  #live (id: string): StoredTask | undefined {
    const task = this.#tasks.get(id)
    if (task === undefined || task.expiresAt > this.#now()) return task
    this.#drop(task)
    return undefined
  }

  #drop (task: StoredTask): void {
    this.#tasks.delete(task.id)
    this.#bytes -= task.sealed.length
    const owned = this.#owners.get(task.owner) as Owned
    owned.ids.delete(task.id)
    owned.bytes -= task.sealed.length
    if (owned.ids.size === 0) this.#owners.delete(task.owner)
  }

  #sweep (): void {
    const now = this.#now()
    for (const task of this.#tasks.values()) if (task.expiresAt <= now) this.#drop(task)
  }
}
