import type { NotificationStream } from '../call.js'
import { noop } from '../check.js'
import type { Task, TaskState } from './record.js'
import type { TaskRepository, WriteOptions } from './repository.js'
import type { TaskStatus } from './store.js'

/** A task's stream: progress becomes its status message; other notifications have no one to reach. */
export class TaskStream implements NotificationStream {
  readonly #controller = new AbortController()
  readonly #report: (message: string) => void

  constructor (report: (message: string) => void) {
    this.#report = report
  }

  get signal (): AbortSignal {
    return this.#controller.signal
  }

  get aborted (): boolean {
    return this.#controller.signal.aborted
  }

  notify (): boolean {
    return true
  }

  progress (progress: number, total: number | undefined, message: string | undefined): void {
    this.#report(message ?? (total === undefined ? `${progress}` : `${progress} of ${total}`))
  }

  abort (reason: string): void {
    this.#controller.abort(new DOMException(reason, 'AbortError'))
  }
}

/** A write that finds the task changed by anyone else means the pass lost it (cancelled, or taken over): it aborts. */
export class TaskLease {
  current: Task
  readonly stream: TaskStream
  readonly #repository: TaskRepository
  #queue: Promise<unknown> = Promise.resolve()
  #renewal: NodeJS.Timeout | undefined
  #message: string | undefined
  #reporting = false
  #lost = false

  constructor (repository: TaskRepository, task: Task) {
    this.#repository = repository
    this.current = task
    this.stream = new TaskStream((message) => { this.#progress(message) })
  }

  get lost (): boolean {
    return this.#lost
  }

  hold (lease: number): void {
    this.#renewal = setInterval(() => {
      // A renewal changes nothing a client sees: no one is told of it.
      this.update((current) => ['working', current.state, { leaseUntil: Date.now() + lease, announce: false }]).catch(noop)
    }, Math.max(1, Math.floor(lease / 3)))
    this.#renewal.unref()
  }

  /**
   * Queues a write built from the record as the writes queued before it leave it: one built when it was queued would
   * put back what a write still in flight (an effect's, say) is changing.
   */
  update (next: (current: Task) => readonly [TaskStatus, TaskState, WriteOptions]): Promise<boolean> {
    const queued = this.#queue.then(async () => {
      if (this.#lost) return false
      const [status, state, how] = next(this.current)
      const written = await this.#repository.replace(this.current, status, state, how)
      if (written === undefined) {
        this.lose('the task was changed elsewhere')
        return false
      }
      this.current = written
      return true
    })
    this.#queue = queued.catch(noop)
    return queued
  }

  end (): void {
    clearInterval(this.#renewal)
  }

  lose (reason: string): void {
    if (this.#lost) return
    this.#lost = true
    this.end()
    this.stream.abort(reason)
  }

  #progress (message: string): void {
    this.#message = message
    if (this.#reporting) return
    this.#reporting = true
    setImmediate(() => {
      this.#reporting = false
      this.update(({ stored, state }) => {
        const how = { leaseUntil: stored.leaseUntil, quota: true }
        return [stored.status, { ...state, message: this.#message }, how]
      }).catch(noop)
    })
  }
}
