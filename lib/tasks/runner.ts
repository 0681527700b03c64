// Each pass holds its task by a lease; a task whose node stopped mid-pass is failed, or run again, by its next reader.
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import { CallState } from '../call.js'
import { McpContext } from '../context.js'
import { ErrorCode, McpError } from '../errors.js'
import { PROTOCOL_VERSION, type JsonObject } from '../protocol/wire.js'
import type { ToolEnd } from '../features/tools.js'
import type { Task } from './record.js'
import type { TaskRepository } from './repository.js'
import { TaskLease } from './lease.js'
import { TaskDelivery } from './task-delivery.js'
import type { TaskStatus } from './store.js'
import type { FormAnswers } from '../elicitation/answers.js'

/** A task's pass: how it ended; questions (`input_required`) are an MRTR round's, before the call detached. */
type PassRunner = (ctx: McpContext) => Promise<ToolEnd>

interface RunnerParts {
  repository: TaskRepository
  run: PassRunner
  forms: FormAnswers
  lease: number
  resultLength: number
  log: FastifyBaseLogger
}

export const TERMINAL: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled'])

export class TaskRunner {
  readonly #parts: RunnerParts
  readonly #running = new Map<string, TaskLease>()

  constructor (parts: RunnerParts) {
    this.#parts = parts
  }

  lease (task: Task): TaskLease {
    return new TaskLease(this.#parts.repository, task)
  }

  delivery (lease: TaskLease): TaskDelivery {
    return new TaskDelivery(lease, this.#parts.repository.maxLength)
  }

  start (request: FastifyRequest, task: Task): void {
    const { state } = task
    const lease = this.lease(task)
    const { capabilities, info } = state
    const client = { protocolVersion: PROTOCOL_VERSION, capabilities, info: info as never, logLevel: undefined }
    // A task is never made for an unbound caller.
    const principal = { value: state.principal, state: state.principal === null ? 'anonymous' as const : 'bound' as const }
    const message = { id: state.callId, method: 'tools/call', params: state.params }
    const delivery = this.delivery(lease)
    const call = new CallState(request, message, client, principal, lease.stream, delivery, this.#parts.forms)
    this.follow(lease, this.#parts.run(new McpContext(call)))
  }

  follow (lease: TaskLease, passing: Promise<ToolEnd>): void {
    const id = lease.current.stored.id
    this.#running.set(id, lease)
    lease.hold(this.#parts.lease)
    const fail = async (error: unknown): Promise<void> => {
      if (lease.lost) return
      const failure = error instanceof McpError ? error.toJSON() : { code: ErrorCode.InternalError, message: 'Internal error' }
      if (!(error instanceof McpError)) this.#parts.log.error({ err: error, mcp: { task: id } }, 'mocapi: a task pass failed')
      // A failed task keeps nothing it no longer needs, so its write fits where the pass's own did not.
      await lease.update(({ state }) => {
        const { asked: _asked, answers: _answers, result: _result, effects: _effects, ...kept } = state
        return ['failed', { ...kept, ledger: [], error: failure, message: failure.message }, {}]
      })
    }
    passing.then(async (end) => {
      if ((end as { kind?: string }).kind === 'parked' || lease.lost) return
      const length = JSON.stringify(end).length
      if (length > this.#parts.resultLength) {
        await fail(new McpError(ErrorCode.InternalError, `The tool's result takes ${length} characters, more than a task keeps (bodyLimit)`))
        return
      }
      // The CallToolResult as a 2026-07-28 call answers it, `resultType` included.
      const result = { resultType: 'complete', ...end } as JsonObject
      await lease.update(({ state }) => ['completed', { ...state, result, message: undefined }, { quota: true }]).catch(fail)
    }, fail).catch((error: unknown) => {
      this.#parts.log.error({ err: error, mcp: { task: id } }, 'mocapi: the outcome of a task pass could not be stored')
    }).finally(() => {
      lease.end()
      if (this.#running.get(id) === lease) this.#running.delete(id)
    })
  }

  /** A working task whose lease lapsed lost its node: it fails, or, with `rerun`, runs again here. */
  async recover (request: FastifyRequest, task: Task): Promise<Task> {
    const { stored, state } = task
    if (stored.status !== 'working' || (stored.leaseUntil as number) > Date.now() || this.#running.has(stored.id)) return task
    const repository = this.#parts.repository
    const stopped = 'The node running this task stopped before it finished'
    const next = state.rerun === true
      ? await repository.replace(task, 'working', { ...state, message: 'Running again: the node running it stopped' },
        { leaseUntil: Date.now() + this.#parts.lease })
      : await repository.replace(task, 'failed', { ...state, message: stopped, error: { code: ErrorCode.InternalError, message: stopped } })
    if (next === undefined) return (await repository.read(stored.id)) ?? task
    if (next.stored.status === 'working') this.start(request, next)
    return next
  }

  lose (id: string, reason: string): void {
    this.#running.get(id)?.lose(reason)
  }

  has (id: string): boolean {
    return this.#running.has(id)
  }

  async close (): Promise<void> {
    await Promise.all([...this.#running.values()].map(async (lease) => {
      await lease.update(({ stored, state }) => [stored.status, state, { leaseUntil: Date.now() }]).catch(() => false)
      lease.lose('the server is closing')
    }))
  }
}
