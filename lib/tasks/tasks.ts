/**
 * Tasks (the `io.modelcontextprotocol/tasks` extension): a task-capable `tools/call` becomes a task, whose work is
 * the same replay as an MRTR call, delivered through a store instead of a token. A pass that asks stores its
 * questions and unwinds; `tasks/update` on any node stores the answers, and the node whose update completes them
 * runs the next pass. A running pass holds a lease, so a node that dies leaves a task the next reader recovers.
 */
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import { randomBytes } from 'node:crypto'
import { CallState, McpContext, kCallState, type AskTarget, type NotificationStream } from '../context.js'
import { boundedInteger, fail, knownFields, nonNegativeInteger, optionalBoolean, plainObject } from '../check.js'
import { callerAddress } from '../address.js'
import type { FormAnswers } from '../elicitation/answers.js'
import { questionFor } from '../elicitation/questions.js'
import { ErrorCode, InvalidDefinitionError, InvalidRequestStateError, McpError, invalidParams, invalidRequest, missingCapability } from '../errors.js'
import { unboundPrincipal, type Asked, type Delivered, type Delivery, type ReplayStart } from '../replay/engine.js'
import type { TokenTooLongError } from '../seal/seal.js'
import { PROTOCOL_VERSION, setOwn, type InputRequest, type JsonObject } from '../protocol/wire.js'
import type { Task, TaskRecord, TaskSealer, TaskState } from './record.js'
import { isTaskId, type StoredTask, type TaskQuota, type TaskStatus, type TaskStore } from './store.js'

export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks'

/** How a tool takes part in tasks. */
export interface ToolTaskOptions {
  /**
   * `'optional'`: a call from a client with the tasks extension becomes a task, others run as plain calls;
   * `'required'`: a client without the extension is refused (-32021 naming it).
   */
  support: 'optional' | 'required'
  /** How long the task is kept from its creation, in ms (its `ttlMs`). Default 3 600 000 (1 hour), at most 30 days. */
  ttl?: number
  /** The polling interval suggested to clients, in ms (its `pollIntervalMs`). Default 2 000. */
  pollInterval?: number
  /**
   * When the node running a pass stops before it ends: run the pass again from the top on the next node that reads
   * the task (true), or fail the task saying so (false, the default). Set it for handlers that are idempotent.
   */
  rerun?: boolean
  /**
   * Whether the handler calls `ctx.detach()`. A handler that does runs its first pass as a call, whose questions
   * before `detach()` are rounds of the call; one that does not becomes a task before it runs. Default: whether the
   * handler's own source names `detach` (set it for a handler that detaches inside a function of its own).
   */
  detach?: boolean
}

/** A tool's task options, checked and filled in. */
export interface ToolTask {
  readonly support: 'optional' | 'required'
  readonly ttl: number
  readonly pollInterval: number
  readonly rerun: boolean
  readonly detach: boolean
}

/** The longest `task.ttl`: 30 days. */
const MAX_TASK_TTL = 30 * 24 * 3_600_000
const DEFAULT_TASK_TTL = 3_600_000
const DEFAULT_POLL_INTERVAL = 2_000
const KNOWN_TASK_FIELDS = new Set(['support', 'ttl', 'pollInterval', 'rerun', 'detach'])
const NAMES_DETACH = /\bdetach\b/

/** Checks a tool's `task` option at registration; undefined for a tool without one. */
export function toolTask (value: unknown, where: string, handler: (...args: never[]) => unknown): ToolTask | undefined {
  if (value === undefined) return undefined
  const name = `${where} task`
  const options = plainObject(value, name, InvalidDefinitionError)
  knownFields(options, KNOWN_TASK_FIELDS, name, InvalidDefinitionError)
  if (options.support !== 'optional' && options.support !== 'required') {
    fail(`${name}.support`, "'optional' or 'required'", options.support, InvalidDefinitionError)
  }
  const ttl = boundedInteger(options.ttl, `${name}.ttl`, DEFAULT_TASK_TTL, MAX_TASK_TTL, '30 days', InvalidDefinitionError)
  const pollInterval = nonNegativeInteger(options.pollInterval, `${name}.pollInterval`, DEFAULT_POLL_INTERVAL, InvalidDefinitionError)
  if (pollInterval > ttl) fail(`${name}.pollInterval`, `at most its ttl (${ttl})`, pollInterval, InvalidDefinitionError)
  return {
    support: options.support,
    ttl,
    pollInterval,
    rerun: optionalBoolean(options.rerun, `${name}.rerun`, false, InvalidDefinitionError),
    detach: options.detach === undefined
      ? NAMES_DETACH.test(Function.prototype.toString.call(handler))
      : optionalBoolean(options.detach, `${name}.detach`, false, InvalidDefinitionError),
  }
}

/** What the task methods and passes need of the registration. */
export interface TasksParts {
  store: TaskStore
  sealer: TaskSealer
  /** How long a running pass holds its task, in ms. */
  lease: number
  /** What a caller's tasks may hold at once: `limits.tasksPerCaller` and `limits.taskBytesPerCaller`. */
  quota: TaskQuota
  /** The registration's forms, which answers given through `tasks/update` are checked against. */
  forms: FormAnswers
  /** The most characters a stored result may take (bodyLimit). */
  resultLength: number
  log: FastifyBaseLogger
  /** Tells every node that a task changed: its listen streams, and the node running it. */
  announce: (id: string) => void
}

/** How a write of a task goes: with a lease until then, unannounced, or checked against its caller's quota. */
export interface WriteOptions {
  leaseUntil?: number
  announce?: boolean
  quota?: boolean
}

/** Runs one pass of a task's tool with a context made for it: the tool's result, or its questions stored. */
export type PassRunner = (ctx: McpContext) => Promise<JsonObject>

const TERMINAL: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled'])
/** How many times a write that lost a race is tried again on fresh data. */
const WRITE_ATTEMPTS = 8

const MISSING_EXTENSION = { extensions: { [TASKS_EXTENSION]: {} } }

function notFound (): McpError {
  return invalidParams('Failed to retrieve task: Task not found')
}

function storeFailed (): McpError {
  return new McpError(ErrorCode.InternalError, 'The task store could not be reached; try again later', { statusCode: 503 })
}

/** Whether a request's client declared the tasks extension on it (2026-07-28 only). */
export function declaresTasks (ctx: McpContext): boolean {
  return ctx.protocolVersion === PROTOCOL_VERSION && ctx.clientSupports(TASKS_EXTENSION)
}

/**
 * Refuses a tasks method or filter to a client without the extension (-32021), and to an authenticated caller with no
 * principal (403: its tasks would be anyone's), before any lookup.
 */
export function requireTasks (ctx: McpContext): void {
  if (!declaresTasks(ctx)) throw missingCapability(MISSING_EXTENSION)
  if (ctx[kCallState].principal.state === 'unbound') throw unboundPrincipal('its tasks')
}

/** The error of a tool that must run as a task, for a client that cannot take one. */
export function tasksRequired (): McpError {
  return missingCapability(MISSING_EXTENSION)
}

/** The `Task` fields of a task, as `tasks/get` and `notifications/tasks` show it. */
function detailed (task: Task): JsonObject {
  const { stored, state } = task
  const view = summary(task)
  if (stored.status === 'input_required') view.inputRequests = outstanding(state)
  else if (stored.status === 'completed' && state.result !== undefined) view.result = state.result
  else if (stored.status === 'failed' && state.error !== undefined) view.error = state.error
  return view
}

function summary ({ stored, state }: Task): JsonObject {
  const view: JsonObject = {
    taskId: stored.id,
    status: stored.status,
    createdAt: new Date(stored.createdAt).toISOString(),
    lastUpdatedAt: new Date(stored.updatedAt).toISOString(),
    ttlMs: state.ttl,
  }
  if (state.pollInterval > 0) view.pollIntervalMs = state.pollInterval
  if (state.message !== undefined) view.statusMessage = state.message
  return view
}

/** The questions a task still waits on: those asked, less those answered. */
function outstanding (state: TaskState): JsonObject {
  const open: JsonObject = {}
  for (const [key, request] of Object.entries(state.asked as JsonObject)) {
    if (state.answers === undefined || !Object.hasOwn(state.answers, key)) setOwn(open, key, request)
  }
  return open
}

/** A task's stream: progress becomes its status message; other notifications have no one to reach. */
class TaskStream implements NotificationStream {
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

/**
 * A pass this node runs: the version of its task it last wrote, its writes one after the other, and its lease
 * renewed until it ends. A write that finds the task changed by anyone else means the pass lost it (cancelled, or
 * taken over after its lease lapsed): the pass is aborted and what it does later is discarded.
 */
class Running {
  current: Task
  readonly stream: TaskStream
  readonly #tasks: Tasks
  #queue: Promise<unknown> = Promise.resolve()
  #renewal: NodeJS.Timeout | undefined
  #message: string | undefined
  #reporting = false
  #lost = false

  constructor (tasks: Tasks, task: Task) {
    this.#tasks = tasks
    this.current = task
    this.stream = new TaskStream((message) => { this.#progress(message) })
  }

  get lost (): boolean {
    return this.#lost
  }

  /** Renews the lease every third of it while the pass runs. */
  hold (lease: number): void {
    this.#renewal = setInterval(() => {
      // A renewal changes nothing a client sees: no one is told of it.
      this.write('working', this.current.state, { leaseUntil: Date.now() + lease, announce: false }).catch(() => {})
    }, Math.max(1, Math.floor(lease / 3)))
    this.#renewal.unref()
  }

  /** Writes the task in `status` with `state`, unless it was lost; whether it was written. */
  write (status: TaskStatus, state: TaskState, how: WriteOptions = {}): Promise<boolean> {
    const next = this.#queue.then(async () => {
      if (this.#lost) return false
      const written = await this.#tasks.replace(this.current, status, state, how)
      if (written === undefined) {
        this.lose('the task was changed elsewhere')
        return false
      }
      this.current = written
      return true
    })
    this.#queue = next.catch(() => {})
    return next
  }

  /** The pass ended: no more renewals. */
  end (): void {
    clearInterval(this.#renewal)
  }

  /** The pass no longer holds its task: it is aborted, and nothing it does is written. */
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
      const state = { ...this.current.state, message: this.#message }
      const { status, leaseUntil } = this.current.stored
      this.write(status, state, { leaseUntil, quota: true }).catch(() => {})
    })
  }
}

/** Delivers a task pass's questions: stored with the task, which waits `input_required` for `tasks/update`. */
class TaskDelivery implements Delivery {
  readonly #running: Running

  constructor (running: Running) {
    this.#running = running
  }

  start (): ReplayStart {
    const state = this.#running.current.state
    return { ledger: state.ledger.map((entry) => ({ ...entry })), responses: state.answers, round: state.round }
  }

  async deliver (_ctx: McpContext, _label: string, asked: Asked, round: number): Promise<Delivered> {
    const running = this.#running
    running.end()
    const state: TaskState = { ...running.current.state, ledger: asked.ledger, round, asked: asked.inputRequests }
    delete (state as { answers?: unknown }).answers
    delete (state as { message?: unknown }).message
    await running.write('input_required', state, { quota: true })
    return { kind: 'reply', result: { resultType: 'input_required', inputRequests: asked.inputRequests, requestState: '' } }
  }
}

/** The tasks of one registration: creating them from calls, running their passes, and the `tasks/*` methods. */
export class Tasks {
  readonly #parts: TasksParts
  readonly #running = new Map<string, Running>()
  /** A sealed state opened when no task is found, so a missing task takes as long as another caller's. */
  readonly #decoy: StoredTask
  #run: PassRunner | undefined

  constructor (parts: TasksParts) {
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

  /** Sets what runs a pass of a task's tool. */
  runWith (run: PassRunner): void {
    this.#run = run
  }

  /**
   * A task-capable call from a client with the extension. A handler that does not detach becomes a task before it
   * runs: the task is stored, then its first pass starts here. One that detaches runs as an MRTR call until it calls
   * `ctx.detach()`, or waits on anything but mocapi; the call then becomes a task and the pass goes on as its first.
   * A pass that asks first answers `input_required`, as any round; one that ends first answers its result (a
   * `'required'` tool's, as a completed task).
   */
  async call (ctx: McpContext, task: ToolTask, runPass: () => Promise<JsonObject>): Promise<JsonObject> {
    const state = ctx[kCallState]
    if (!task.detach) {
      const created = await this.#create(ctx, task, 'working', { ledger: [], round: 0 })
      setImmediate(() => { this.#start(ctx.request, created) })
      return { resultType: 'task', ...summary(created) }
    }
    let detach!: () => void
    const detaching = new Promise<'detach'>((resolve) => { detach = () => { resolve('detach') } })
    let released!: { resolve: () => void, reject: (error: unknown) => void }
    const release = new Promise<void>((resolve, reject) => { released = { resolve, reject } })
    release.catch(() => {})
    // A detach asked in the same turn as questions comes too late: the questions make this a round of the call.
    state.detacher = () => {
      if (state.target?.asking !== true) detach()
      return release
    }
    const passing = runPass()
    const boundary = setImmediate(() => { if (state.target !== undefined && !state.target.asking) detach() })
    const settled = passing.then((result) => ({ result }), (error: unknown) => ({ error }))
    const first = await Promise.race([settled, detaching])
    clearImmediate(boundary)
    if (first !== 'detach') {
      state.detacher = undefined
      if ('error' in first) throw first.error
      if (first.result.resultType === 'input_required' || task.support === 'optional') return first.result
      const result = { resultType: 'complete', ...first.result }
      const created = await this.#create(ctx, task, 'completed', { ledger: [], round: state.round, result })
      return { resultType: 'task', ...summary(created) }
    }
    const target = state.target
    let created: Task
    try {
      created = await this.#create(ctx, task, 'working', { ledger: [...(target as AskTarget).ledger], round: state.round })
    } catch (error) {
      released.reject(error)
      const stream = new TaskStream(() => {})
      state.detachTo(stream, state.delivery)
      stream.abort('the task could not be created')
      throw error
    }
    const running = this.#follow(created, passing)
    state.detachTo(running.stream, new TaskDelivery(running))
    released.resolve()
    return { resultType: 'task', ...summary(created) }
  }

  /** `tasks/get`: the task by status; a task whose running node stopped is failed, or run again here. */
  async get (ctx: McpContext): Promise<JsonObject> {
    requireTasks(ctx)
    let task = await this.#owned(ctx)
    task = await this.#recover(ctx.request, task)
    return detailed(task)
  }

  /**
   * `tasks/update`: stores the answers to the questions the task waits on (others are ignored). Once every
   * question is answered, the node whose update did it runs the next pass.
   */
  async update (ctx: McpContext): Promise<JsonObject> {
    requireTasks(ctx)
    const responses = ctx.params.inputResponses as JsonObject
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      const task = await this.#owned(ctx)
      const { stored, state } = task
      if (stored.status !== 'input_required') return {}
      const asked = state.asked as Record<string, InputRequest>
      const answers: JsonObject = { ...state.answers }
      let changed = false
      for (const key of Object.keys(responses)) {
        if (!Object.hasOwn(asked, key) || Object.hasOwn(answers, key)) continue
        // Refused here, as a round refuses it, so a wrong answer leaves the task waiting rather than failing it.
        const checked = questionFor(asked[key]).check(responses[key], this.#parts.forms)
        if (!checked.ok) throw invalidParams(`inputResponses.${key}: ${checked.message}`)
        setOwn(answers, key, responses[key])
        changed = true
      }
      if (!changed) return {}
      const complete = Object.keys(asked).every((key) => Object.hasOwn(answers, key))
      const next = complete
        ? await this.replace(task, 'working', { ...state, answers, message: undefined }, { leaseUntil: Date.now() + this.#parts.lease, quota: true })
        : await this.replace(task, 'input_required', { ...state, answers }, { quota: true })
      if (next === undefined) continue
      if (complete) this.#start(ctx.request, next)
      return {}
    }
    throw new McpError(ErrorCode.InternalError, 'The task changed too often to take these answers; send them again', { statusCode: 503 })
  }

  /** `tasks/cancel`: the task is cancelled at once, and the node running a pass of it aborts `ctx.signal`. */
  async cancel (ctx: McpContext): Promise<JsonObject> {
    requireTasks(ctx)
    for (let attempt = 0; attempt < WRITE_ATTEMPTS; attempt++) {
      const task = await this.#owned(ctx)
      if (TERMINAL.has(task.stored.status)) return {}
      const written = await this.replace(task, 'cancelled', { ...task.state, message: 'Cancelled by the client' })
      if (written === undefined) continue
      this.#running.get(written.stored.id)?.lose('the task was cancelled')
      return {}
    }
    throw new McpError(ErrorCode.InternalError, 'The task changed too often to cancel it; send the cancel again', { statusCode: 503 })
  }

  /** The current task of an id as its caller may see it, for listen streams; undefined for anyone else's. */
  async view (id: string, principal: string | null): Promise<JsonObject | undefined> {
    const task = await this.#read(id).catch(() => undefined)
    return task === undefined || task.state.principal !== principal ? undefined : detailed(task)
  }

  /**
   * Another node changed a task: a pass of it that runs here stops once the task is over (cancelled); a pass whose
   * task was taken over learns it at its next write.
   */
  async changed (id: string): Promise<void> {
    const running = this.#running.get(id)
    if (running === undefined) return
    const stored = await this.#parts.store.get(id).catch(() => undefined)
    if (stored === undefined || TERMINAL.has(stored.status)) running.lose('the task was cancelled')
  }

  /** The server closes: the passes it runs let go of their tasks, so the next reader recovers them. */
  async close (): Promise<void> {
    await Promise.all([...this.#running.values()].map(async (running) => {
      const { stored, state } = running.current
      await running.write(stored.status, state, { leaseUntil: Date.now() }).catch(() => false)
      running.lose('the server is closing')
    }))
  }

  /**
   * Replaces a task with its next version; the new task, or undefined when it changed meanwhile. With `quota`, a write
   * that grows it past its caller's quota or the store's bound is refused (429).
   */
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
    let written
    try {
      written = await this.#parts.store.update(stored, how.quota === true ? this.#parts.quota : undefined)
    } catch (error) {
      this.#parts.log.error({ err: error, mcp: { task: previous.id } }, 'mocapi: the task store failed to update a task')
      throw storeFailed()
    }
    if (written === 'full') throw this.#full()
    if (written === 'stale') return undefined
    if (how.announce !== false) this.#parts.announce(previous.id)
    return { stored, state }
  }

  /** A stored task of `record` with `state`; -32602 when the state is larger than a task may hold. */
  #seal (record: TaskRecord, state: TaskState): StoredTask {
    try {
      return this.#parts.sealer.seal(record, state)
    } catch (error) {
      // A state is JSON (a result was written once before it gets here): only its length can fail.
      throw invalidParams(`The task would hold ${(error as TokenTooLongError).length} characters of state, more than one task may ` +
        `(${this.#parts.sealer.maxLength}: 8 times bodyLimit, at most limits.taskBytesPerCaller)`)
    }
  }

  #full (): McpError {
    const { tasks, bytes } = this.#parts.quota
    return invalidRequest(`This caller holds as many tasks as it may (${tasks}, limits.tasksPerCaller) or as much task ` +
      `state (${bytes} characters, limits.taskBytesPerCaller), or the task store is full; let some expire, then try again`, 429)
  }

  async #create (ctx: McpContext, task: ToolTask, status: TaskStatus, fields: Pick<TaskState, 'ledger' | 'round' | 'result'>): Promise<Task> {
    if (ctx[kCallState].principal.state === 'unbound') throw unboundPrincipal('its task')
    const now = Date.now()
    const { capabilities, info } = ctx[kCallState].client
    const params: JsonObject = { name: ctx.params.name, arguments: ctx.params.arguments ?? {} }
    const state: TaskState = {
      principal: ctx.principal,
      callId: ctx.id,
      params,
      capabilities: capabilities as JsonObject,
      info: info as JsonObject | undefined,
      ttl: task.ttl,
      pollInterval: task.pollInterval,
      ...fields,
      ...(task.rerun ? { rerun: true } : {}),
    }
    const stored = this.#seal({
      id: randomBytes(16).toString('base64url'),
      version: 1,
      status,
      createdAt: now,
      updatedAt: now,
      expiresAt: now + task.ttl,
      owner: this.#parts.sealer.owner(ctx.principal, callerAddress(ctx.request.ip)),
      ...(status === 'working' ? { leaseUntil: now + this.#parts.lease } : {}),
    }, state)
    let created
    try {
      created = await this.#parts.store.create(stored, this.#parts.quota)
    } catch (error) {
      this.#parts.log.error({ err: error }, 'mocapi: the task store failed to create a task')
      throw storeFailed()
    }
    if (created !== 'written') throw this.#full()
    return { stored, state }
  }

  /** The task a request names, when its caller owns it; one -32602 for unknown, expired and others' tasks alike. */
  async #owned (ctx: McpContext): Promise<Task> {
    const id = ctx.params.taskId as string
    let task: Task | undefined
    try {
      task = isTaskId(id) ? await this.#read(id) : undefined
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

  async #read (id: string): Promise<Task | undefined> {
    let stored
    try {
      stored = await this.#parts.store.get(id)
    } catch (error) {
      this.#parts.log.error({ err: error, mcp: { task: id } }, 'mocapi: the task store failed to read a task')
      throw storeFailed()
    }
    return stored === undefined ? undefined : { stored, state: this.#parts.sealer.open(stored) }
  }

  /** A working task whose lease lapsed lost its node: it fails, or, for a `rerun` tool, runs again here. */
  async #recover (request: FastifyRequest, task: Task): Promise<Task> {
    const { stored, state } = task
    if (stored.status !== 'working' || (stored.leaseUntil as number) > Date.now() || this.#running.has(stored.id)) return task
    const next = state.rerun === true
      ? await this.replace(task, 'working', { ...state, message: 'Running again: the node running it stopped' }, { leaseUntil: Date.now() + this.#parts.lease })
      : await this.replace(task, 'failed', {
        ...state,
        message: 'The node running this task stopped before it finished',
        error: { code: ErrorCode.InternalError, message: 'The node running this task stopped before it finished' },
      })
    if (next === undefined) return (await this.#read(stored.id)) ?? task
    if (next.stored.status === 'working') this.#start(request, next)
    return next
  }

  /** Runs a pass of a task on this node, in the background. */
  #start (request: FastifyRequest, task: Task): void {
    const { state } = task
    const running = new Running(this, task)
    const client = {
      protocolVersion: PROTOCOL_VERSION,
      capabilities: state.capabilities,
      info: state.info as never,
      logLevel: undefined,
    }
    const principal = { value: state.principal, state: state.principal === null ? 'anonymous' as const : 'bound' as const }
    const callState = new CallState(client, principal, running.stream, new TaskDelivery(running))
    const ctx = new McpContext(request, { id: state.callId, method: 'tools/call', params: state.params }, callState)
    this.#follow(task, (this.#run as PassRunner)(ctx), running)
  }

  /** Holds a task while its pass runs, and stores how the pass ended. */
  #follow (task: Task, passing: Promise<JsonObject>, running = new Running(this, task)): Running {
    const id = task.stored.id
    this.#running.set(id, running)
    running.hold(this.#parts.lease)
    const fail = async (error: unknown): Promise<void> => {
      if (running.lost) return
      const failure = error instanceof McpError ? error.toJSON() : { code: ErrorCode.InternalError, message: 'Internal error' }
      if (!(error instanceof McpError)) this.#parts.log.error({ err: error, mcp: { task: id } }, 'mocapi: a task pass failed')
      // A failed task keeps nothing it no longer needs, so its write fits where the pass's own did not.
      const { asked: _asked, answers: _answers, result: _result, ...kept } = running.current.state
      await running.write('failed', { ...kept, ledger: [], error: failure, message: failure.message })
    }
    passing.then(async (result) => {
      if (result.resultType === 'input_required' || running.lost) return
      const length = JSON.stringify(result).length
      if (length > this.#parts.resultLength) {
        await fail(new McpError(ErrorCode.InternalError, `The tool's result takes ${length} characters, more than a task keeps (bodyLimit)`))
        return
      }
      // The CallToolResult as a 2026-07-28 call answers it, `resultType` included.
      const state = { ...running.current.state, result: { resultType: 'complete', ...result }, message: undefined }
      await running.write('completed', state, { quota: true }).catch(fail)
    }, fail).catch((error: unknown) => {
      this.#parts.log.error({ err: error, mcp: { task: id } }, 'mocapi: the outcome of a task pass could not be stored')
    }).finally(() => {
      running.end()
      if (this.#running.get(id) === running) this.#running.delete(id)
    })
    return running
  }
}
