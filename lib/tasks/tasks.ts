// A task is the same replay as an MRTR call, delivered through a store; a pass that asks parks.
import type { FastifyBaseLogger } from 'fastify'
import { noop } from '../check.js'
import type { McpContext } from '../context.js'
import type { FormAnswers } from '../elicitation/answers.js'
import { questionFor } from '../elicitation/questions.js'
import { InvalidArgumentError, invalidParams, unboundPrincipal } from '../errors.js'
import type { ToolEnd, Tools } from '../features/tools.js'
import { declaresTasks } from '../protocol/extensions.js'
import { setOwn, type InputRequest, type JsonObject } from '../protocol/wire.js'
import { newCallId } from '../journal.js'
import { kCallState } from '../symbols.js'
import { requireTasks, tasksRequired, type ToolTask } from '../features/tool-task.js'
import { journalFields, type Task, type TaskSealer, type TaskState } from './record.js'
import { TaskRepository } from './repository.js'
import { TERMINAL, TaskRunner } from './runner.js'
import { TaskStream } from './lease.js'
import { MemoryTaskStore, type TaskQuota, type TaskStatus, type TaskStore } from './store.js'
import { InProcessBus, type NotificationBus } from '../bus/bus.js'
import { detailed, summary } from './view.js'

interface TasksParts {
  tools: Tools
  store: TaskStore
  sealer: TaskSealer
  lease: number
  quota: TaskQuota
  forms: FormAnswers
  resultLength: number
  log: FastifyBaseLogger
  /** Tells every node: its listen streams, and the node running the task. */
  announce: (id: string) => void
}

/** What a handler of a task-capable tool that does not declare `task.detach` gets from `ctx.detach()`. */
function undeclaredDetach (name: string): () => Promise<void> {
  return () => Promise.reject(new InvalidArgumentError(`ctx.detach() needs tool ${name} to declare task: { detach: true }; ` +
    'without it, a call becomes a task before its handler runs'))
}

/** A deferred outcome, settled by whoever sees it first. */
function deferred<T> (): { promise: Promise<T>, resolve: (value: T) => void, reject: (error: unknown) => void } {
  const settle = {} as { resolve: (value: T) => void, reject: (error: unknown) => void }
  const promise = new Promise<T>((resolve, reject) => {
    settle.resolve = resolve
    settle.reject = reject
  })
  return { promise, ...settle }
}

export class Tasks {
  readonly #tools: Tools
  readonly #repository: TaskRepository
  readonly #runner: TaskRunner
  readonly #forms: FormAnswers
  readonly #lease: number
  #capable = 0
  #served = false

  constructor (parts: TasksParts) {
    this.#tools = parts.tools
    this.#forms = parts.forms
    this.#lease = parts.lease
    this.#repository = new TaskRepository(parts)
    this.#runner = new TaskRunner({
      repository: this.#repository,
      run: (ctx) => this.#runStored(ctx),
      forms: parts.forms,
      lease: parts.lease,
      resultLength: parts.resultLength,
      log: parts.log,
    })
    parts.tools.observe((tool, added) => {
      if (tool.task === undefined) return
      this.#capable += added ? 1 : -1
      this.#served = true
    })
  }

  /** Task-capable tools registered now. */
  get capable (): number {
    return this.#capable
  }

  /** Whether a task-capable tool was ever registered: its tasks outlive it, so `tasks/*` stays served. */
  get served (): boolean {
    return this.#served
  }

  /** At startup: a task store that serves one node, or a shared one whose news stays on this node, is worth a word. */
  warn (log: FastifyBaseLogger, store: TaskStore | undefined, bus: NotificationBus): void {
    if (store === undefined && this.#capable > 0) {
      log.warn('mocapi: tasks are kept in memory (no tasks.store configured): one node serves them, and a restart ' +
        'loses them; use RedisTaskStore from mocapi/redis, or another TaskStore, across a fleet')
    }
    // A store other nodes share, with news that stays on this one: a cancel reaches the pass's node late.
    if (store !== undefined && !(store instanceof MemoryTaskStore) && bus instanceof InProcessBus) {
      log.warn('mocapi: tasks.store is shared, but the bus is in-process: task news and cancels reach other nodes ' +
        'only at their next poll or lease write; give every node the same bus (RedisBus from mocapi/redis)')
    }
  }

  /**
   * `tools/call` in either era. A task-capable call from a client with the extension becomes a task: before its
   * handler runs, or with `task.detach` when it detaches; any other call runs as a plain call.
   */
  async call (ctx: McpContext): Promise<object> {
    const resolved = await this.#tools.resolve(ctx)
    if (!('tool' in resolved)) return resolved
    const task = resolved.tool.task
    if (task === undefined) return await this.#tools.run(ctx, resolved)
    const call = ctx[kCallState]
    if (!declaresTasks(call.client)) {
      if (task.support === 'required') throw tasksRequired()
      if (!task.detach) call.detacher = undeclaredDetach(resolved.tool.listed.name)
      return await this.#tools.run(ctx, resolved)
    }
    if (!task.detach) {
      const created = await this.#create(ctx, task, 'working', { ledger: [], round: 0, ctxCallId: call.callId ?? newCallId() })
      setImmediate(() => { this.#runner.start(ctx.request, created) })
      return { resultType: 'task', ...summary(created) }
    }
    return await this.#detaching(ctx, task, () => this.#tools.run(ctx, resolved))
  }

  /** A stored call's next pass: a tool that does not declare `detach` still refuses `ctx.detach()` there. */
  async #runStored (ctx: McpContext): Promise<ToolEnd> {
    const stored = await this.#tools.stored(ctx)
    if (stored.tool.task?.detach !== true) ctx[kCallState].detacher = undeclaredDetach(stored.tool.listed.name)
    return await this.#tools.run(ctx, stored)
  }

  /**
   * The detach rule: the first pass runs as a call, whose questions are rounds of the call, until it detaches: at
   * `ctx.detach()` when it is not asking (a detach in the turn of questions comes too late: they make this pass a
   * round), or at the first turn after the pass began in which it is neither asking nor done (it awaits something
   * other than mocapi, so it is taken to be working). From then the pass goes on as the task's: `detachTo` gives the
   * call the task's stream and delivery, and the engine, which reads the delivery at each ask, asks through the task.
   */
  async #detaching (ctx: McpContext, task: ToolTask, start: () => Promise<ToolEnd>): Promise<JsonObject> {
    const call = ctx[kCallState]
    const detaching = deferred<'detach'>()
    const released = deferred<void>()
    released.promise.catch(noop)
    const detach = (): void => { detaching.resolve('detach') }
    call.detacher = () => {
      if (call.target?.asking !== true) detach()
      return released.promise
    }
    const passing = start()
    const boundary = setImmediate(() => { if (call.target !== undefined && !call.target.asking) detach() })
    const settled = passing.then((result) => ({ result }), (error: unknown) => ({ error }))
    const first = await Promise.race([settled, detaching.promise])
    clearImmediate(boundary)
    if (first !== 'detach') {
      call.detacher = undefined
      if ('error' in first) throw first.error
      const end = first.result as unknown as JsonObject
      if (end.resultType === 'input_required' || task.support === 'optional') return end
      const created = await this.#create(ctx, task, 'completed', { ledger: [], round: call.round, result: { resultType: 'complete', ...end } })
      return { resultType: 'task', ...summary(created) }
    }
    let created: Task
    try {
      // The journal carries the id from here, so each effect the task records keeps it.
      const journal = call.target!.journal
      call.callId = journal.callId ??= call.callId ?? newCallId()
      created = await this.#create(ctx, task, 'working', { ...journalFields(journal), round: call.round })
    } catch (error) {
      released.reject(error)
      const stream = new TaskStream(noop)
      call.detachTo(stream, call.delivery)
      stream.abort('the task could not be created')
      throw error
    }
    const lease = this.#runner.lease(created)
    this.#runner.follow(lease, passing)
    call.detachTo(lease.stream, this.#runner.delivery(lease))
    released.resolve()
    return { resultType: 'task', ...summary(created) }
  }

  async get (ctx: McpContext): Promise<JsonObject> {
    requireTasks(ctx)
    const task = await this.#repository.owned(ctx)
    return detailed(await this.#runner.recover(ctx.request, task))
  }

  /** Answers to questions the task does not wait on are ignored; the update that completes them runs the next pass. */
  async update (ctx: McpContext): Promise<JsonObject> {
    requireTasks(ctx)
    const responses = ctx.params.inputResponses as JsonObject
    return await this.#repository.retrying(ctx, 'take these answers; send them again', async (task) => {
      const { stored, state } = task
      if (stored.status !== 'input_required') return {}
      const asked = state.asked as Record<string, InputRequest>
      const answers: JsonObject = { ...state.answers }
      let changed = false
      for (const key of Object.keys(responses)) {
        if (!Object.hasOwn(asked, key) || Object.hasOwn(answers, key)) continue
        // Refused here, as a round refuses it, so a wrong answer leaves the task waiting rather than failing it.
        const checked = questionFor(asked[key], this.#forms).check(responses[key])
        if (!checked.ok) throw invalidParams(`inputResponses.${key}: ${checked.message}`)
        setOwn(answers, key, responses[key])
        changed = true
      }
      if (!changed) return {}
      const complete = Object.keys(asked).every((key) => Object.hasOwn(answers, key))
      const next = complete
        ? await this.#repository.replace(task, 'working', { ...state, answers, message: undefined },
          { leaseUntil: Date.now() + this.#lease, quota: true })
        : await this.#repository.replace(task, 'input_required', { ...state, answers }, { quota: true })
      if (next === undefined) return undefined
      if (complete) this.#runner.start(ctx.request, next)
      return {}
    })
  }

  async cancel (ctx: McpContext): Promise<JsonObject> {
    requireTasks(ctx)
    return await this.#repository.retrying(ctx, 'cancel it; send the cancel again', async (task) => {
      if (TERMINAL.has(task.stored.status)) return {}
      const written = await this.#repository.replace(task, 'cancelled', { ...task.state, message: 'Cancelled by the client' })
      if (written === undefined) return undefined
      this.#runner.lose(written.stored.id, 'the task was cancelled')
      return {}
    })
  }

  /** A task's handle as `tools/call` hands it out, now, for its owner only (a receipt's duplicate gets it). */
  async handle (id: string, principal: string | null): Promise<JsonObject | undefined> {
    const task = await this.#owned(id, principal)
    return task && summary(task)
  }

  async view (id: string, principal: string | null): Promise<JsonObject | undefined> {
    const task = await this.#owned(id, principal)
    return task && detailed(task)
  }

  /** The task, for its owner; undefined for anyone else, or when it is gone or cannot be read. */
  async #owned (id: string, principal: string | null): Promise<Task | undefined> {
    const task = await this.#repository.read(id).catch(() => undefined)
    return task?.state.principal === principal ? task : undefined
  }

  /** Another node changed a task: a pass here stops once cancelled; one taken over learns it at its next write. */
  async changed (id: string): Promise<void> {
    if (!this.#runner.has(id)) return
    const stored = await this.#repository.stored(id)
    if (stored === undefined || TERMINAL.has(stored.status)) this.#runner.lose(id, 'the task was cancelled')
  }

  close (): Promise<void> {
    return this.#runner.close()
  }

  async #create (ctx: McpContext, task: ToolTask, status: TaskStatus, fields: Pick<TaskState, 'ledger' | 'round' | 'result' | 'effects' | 'ctxCallId'>): Promise<Task> {
    const call = ctx[kCallState]
    if (call.principal.state === 'unbound') throw unboundPrincipal('its task')
    const { capabilities, info } = call.client
    const state: TaskState = {
      principal: ctx.principal,
      callId: ctx.id,
      params: { name: ctx.params.name, arguments: ctx.params.arguments ?? {} },
      capabilities: capabilities as JsonObject,
      info: info as JsonObject | undefined,
      ttl: task.ttl,
      pollInterval: task.pollInterval,
      ...fields,
      ...(task.rerun ? { rerun: true } : {}),
    }
    return await this.#repository.create(ctx, status, state, this.#lease)
  }
}
