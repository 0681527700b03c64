/** Where tasks live between the requests that create, run, poll, answer and cancel them. */

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

/**
 * Keeps tasks for every node of a deployment. Each method resolves once its effect is visible to a `get` on any
 * node. `mocapi/testing` has the checks a store must pass (`taskStoreChecks`).
 */
export interface TaskStore {
  /**
   * Stores a new task, unless its owner already holds `perOwner` tasks that have not expired: false then.
   * Rejects when a task of that id exists.
   */
  create (task: StoredTask, perOwner: number): Promise<boolean>
  /** The task of an id; undefined when there is none or it expired. */
  get (id: string): Promise<StoredTask | undefined>
  /** Replaces a task when its stored version is `task.version - 1` and it has not expired; whether it did. */
  update (task: StoredTask): Promise<boolean>
  /** Releases the store's resources when the server closes. */
  close? (): void | Promise<void>
}

/** Options of {@link MemoryTaskStore}. */
export interface MemoryTaskStoreOptions {
  /** The most tasks held at once; a create past it is refused. Default 10 000. */
  maxTasks?: number
  /** Clock in epoch milliseconds; `Date.now` by default. */
  now?: () => number
}

/** The default store: tasks live in this process, so a single node serves them and a restart loses them. */
export class MemoryTaskStore implements TaskStore {
  readonly #tasks = new Map<string, StoredTask>()
  /** The ids each owner holds: a create counts them rather than scan every task. */
  readonly #owners = new Map<string, Set<string>>()
  readonly #maxTasks: number
  readonly #now: () => number

  constructor (options: MemoryTaskStoreOptions = {}) {
    this.#maxTasks = options.maxTasks ?? 10_000
    this.#now = options.now ?? Date.now
  }

  async create (task: StoredTask, perOwner: number): Promise<boolean> {
    if (this.#live(task.id) !== undefined) throw new Error(`mocapi: a task ${task.id} exists already`)
    if (this.#tasks.size >= this.#maxTasks) this.#sweep()
    if (this.#tasks.size >= this.#maxTasks) return false
    const held = this.#owners.get(task.owner) ?? new Set<string>()
    const now = this.#now()
    for (const id of held) {
      const kept = this.#tasks.get(id)
      if (kept !== undefined && kept.expiresAt > now) continue
      held.delete(id)
      this.#tasks.delete(id)
    }
    if (held.size >= perOwner) return false
    held.add(task.id)
    this.#owners.set(task.owner, held)
    this.#tasks.set(task.id, task)
    return true
  }

  async get (id: string): Promise<StoredTask | undefined> {
    return this.#live(id)
  }

  async update (task: StoredTask): Promise<boolean> {
    const kept = this.#live(task.id)
    if (kept === undefined || kept.version !== task.version - 1) return false
    this.#tasks.set(task.id, task)
    return true
  }

  /** How many tasks it holds, expired ones not yet dropped included. */
  get size (): number {
    return this.#tasks.size
  }

  #live (id: string): StoredTask | undefined {
    const task = this.#tasks.get(id)
    if (task === undefined || task.expiresAt > this.#now()) return task
    this.#drop(task)
    return undefined
  }

  #drop (task: StoredTask): void {
    this.#tasks.delete(task.id)
    const held = this.#owners.get(task.owner)
    held?.delete(task.id)
    if (held?.size === 0) this.#owners.delete(task.owner)
  }

  #sweep (): void {
    const now = this.#now()
    for (const task of this.#tasks.values()) if (task.expiresAt <= now) this.#drop(task)
  }
}
