// Tasks read and written by compare-and-set: the one place a store's failure becomes a 503 and a full store a 429.
import type { FastifyBaseLogger } from 'fastify'
import { randomBytes } from 'node:crypto'
import { callerAddress } from '../caller.js'
import type { McpContext } from '../context.js'
import { ErrorCode, InvalidRequestStateError, McpError, invalidParams, invalidRequest } from '../errors.js'
import type { TokenTooLongError } from '../seal/seal.js'
import type { Task, TaskRecord, TaskSealer, TaskState } from './record.js'
import { isTaskId } from '../features/tool-task.js'
import type { StoredTask, TaskQuota, TaskStatus, TaskStore } from './store.js'

export interface WriteOptions {
  leaseUntil?: number
  announce?: boolean
  quota?: boolean
}

interface RepositoryParts {
  store: TaskStore
  sealer: TaskSealer
  quota: TaskQuota
  log: FastifyBaseLogger
  announce: (id: string) => void
}

const WRITE_ATTEMPTS = 8

function notFound (): McpError {
  return invalidParams('Failed to retrieve task: Task not found')
}

function storeFailed (): McpError {
  return new McpError(ErrorCode.InternalError, 'The task store could not be reached; try again later', { statusCode: 503 })
}

export class TaskRepository {
  readonly #parts: RepositoryParts
  /** Opened when no task is found, so a missing task takes as long as another caller's. */
  readonly #decoy: StoredTask

  constructor (parts: RepositoryParts) {
    this.#parts = parts
    const state: TaskState = {
      principal: null,
      callId: 0,
      params: {},
      capabilities: {},
      info: undefined,
      ttl: 0,
      pollInterval: 0,
      ledger: [],
      round: 0,
    }
    this.#decoy = parts.sealer.seal({ id: '', version: 0, status: 'working', createdAt: 0, updatedAt: 0, expiresAt: 0, owner: '' }, state)
  }

  get maxLength (): number {
    return this.#parts.sealer.maxLength
  }

  async create (ctx: McpContext, status: TaskStatus, state: TaskState, lease: number): Promise<Task> {
    const now = Date.now()
    const stored = this.#seal({
      id: randomBytes(16).toString('base64url'),
      version: 1,
      status,
      createdAt: now,
      updatedAt: now,
      expiresAt: now + state.ttl,
      owner: this.#parts.sealer.owner(ctx.principal, callerAddress(ctx.request.ip)),
      ...(status === 'working' ? { leaseUntil: now + lease } : {}),
    }, state)
    const created = await this.#store('create a task', undefined, () => this.#parts.store.create(stored, this.#parts.quota))
    if (created !== 'written') throw this.#full()
    return { stored, state }
  }

  async read (id: string): Promise<Task | undefined> {
    const stored = await this.#store('read a task', id, () => this.#parts.store.get(id))
    return stored === undefined ? undefined : { stored, state: this.#parts.sealer.open(stored) }
  }

  /** One -32602 for unknown, expired and others' tasks alike. */
  async owned (ctx: McpContext): Promise<Task> {
    const id = ctx.params.taskId as string
    let task: Task | undefined
    try {
      task = isTaskId(id) ? await this.read(id) : undefined
    } catch (error) {
      if (!(error instanceof InvalidRequestStateError)) throw error
      this.#parts.log.warn({ mcp: { task: id, reason: error.reason } }, 'mocapi refused a stored task that does not open under the key ring')
      throw notFound()
    }
    if (task === undefined) {
      this.#parts.sealer.open(this.#decoy)
      throw notFound()
    }
    if (task.state.principal !== ctx.principal) throw notFound()
    return task
  }

  /** Undefined when the task changed meanwhile; with `quota`, a write past the caller's quota or the store's is 429. */
  async replace (task: Task, status: TaskStatus, state: TaskState, how: WriteOptions = {}): Promise<Task | undefined> {
    const previous = task.stored
    const stored = this.#seal({
      id: previous.id,
      version: previous.version + 1,
      status,
      createdAt: previous.createdAt,
      updatedAt: Date.now(),
      expiresAt: previous.expiresAt,
      owner: previous.owner,
      ...(how.leaseUntil === undefined ? {} : { leaseUntil: how.leaseUntil }),
    }, state)
    const quota = how.quota === true ? this.#parts.quota : undefined
    const written = await this.#store('update a task', previous.id, () => this.#parts.store.update(stored, quota))
    if (written === 'full') throw this.#full()
    if (written === 'stale') return undefined
    if (how.announce !== false) this.#parts.announce(previous.id)
    return { stored, state }
  }

  /** Re-reads and retries while another writer wins (`change` answers undefined), then 503 naming `to`. */
  async retrying<T> (ctx: McpContext, to: string, change: (task: Task) => Promise<T | undefined>): Promise<T> {
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      const done = await change(await this.owned(ctx))
      if (done !== undefined) return done
    }
    throw new McpError(ErrorCode.InternalError, `The task changed too often to ${to}`, { statusCode: 503 })
  }

  async stored (id: string): Promise<StoredTask | undefined> {
    return await this.#parts.store.get(id).catch(() => undefined)
  }

  #seal (record: TaskRecord, state: TaskState): StoredTask {
    try {
      return this.#parts.sealer.seal(record, state)
    } catch (error) {
      // A state is JSON (a result was written once before it gets here): only its length can fail.
      throw invalidParams(`The task would hold ${(error as TokenTooLongError).length} characters of state, more than one ` +
        `task may (${this.#parts.sealer.maxLength}: 8 times bodyLimit, at most limits.taskBytesPerCaller)`)
    }
  }

  async #store<T> (what: string, id: string | undefined, call: () => Promise<T>): Promise<T> {
    try {
      return await call()
    } catch (error) {
      this.#parts.log.error({ err: error, mcp: { task: id } }, `mocapi: the task store failed to ${what}`)
      throw storeFailed()
    }
  }

  #full (): McpError {
    const { tasks, bytes } = this.#parts.quota
    return invalidRequest(`This caller holds as many tasks as it may (${tasks}, limits.tasksPerCaller) or as much task ` +
      `state (${bytes} characters, limits.taskBytesPerCaller), or the task store is full; let some expire, then try again`, 429)
  }
}
