import { boundedInteger, fail, knownFields, nonNegativeInteger, optionalBoolean, plainObject } from '../check.js'
import type { McpContext } from '../context.js'
import { InvalidDefinitionError, missingCapability, unboundPrincipal, type McpError } from '../errors.js'
import { TASKS_EXTENSION, declaresTasks } from '../protocol/extensions.js'
import { kCallState } from '../symbols.js'

/** How a tool takes part in tasks. */
export interface ToolTaskOptions {
  /**
   * `'optional'`: a call from a client with the tasks extension becomes a task, others run as plain calls;
   * `'required'`: a client without the extension is refused (-32021 naming it).
   */
  support: 'optional' | 'required'
  /** How long the task is kept from its creation, in ms (its `ttlMs`). Default 3 600 000 (1 hour), at most 30 days. */
  ttl?: number | undefined
  /** The polling interval suggested to clients, in ms (its `pollIntervalMs`). Default 2 000. */
  pollInterval?: number | undefined
  /**
   * When the node running a pass stops before it ends: run the pass again from the top on the next node that reads
   * the task (true), or fail the task saying so (false, the default). Set it for handlers that are idempotent.
   */
  rerun?: boolean | undefined
  /**
   * Whether the handler calls `ctx.detach()` (default false). One that does runs its first pass as a call, whose
   * questions before it are rounds of the call, and becomes a task at `detach()` or at its first turn neither asking
   * nor done, whichever comes first; one that does not becomes a task before it runs, and a `ctx.detach()` in it
   * fails at once.
   */
  detach?: boolean | undefined
}

export interface ToolTask {
  readonly support: 'optional' | 'required'
  readonly ttl: number
  readonly pollInterval: number
  readonly rerun: boolean
  readonly detach: boolean
}

const MAX_TASK_TTL = 30 * 24 * 3_600_000
const DEFAULT_TASK_TTL = 3_600_000
const DEFAULT_POLL_INTERVAL = 2_000
const KNOWN_TASK_FIELDS = new Set(['support', 'ttl', 'pollInterval', 'rerun', 'detach'])

export function toolTask (value: unknown, where: string): ToolTask | undefined {
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
    detach: optionalBoolean(options.detach, `${name}.detach`, false, InvalidDefinitionError),
  }
}

/** Whether a string is a task id as mocapi makes them: 128 random bits, 22 base64url characters. */
export function isTaskId (id: unknown): id is string {
  return typeof id === 'string' && TASK_ID.test(id)
}

const TASK_ID = /^[A-Za-z0-9_-]{22}$/

const MISSING_EXTENSION = { extensions: { [TASKS_EXTENSION]: {} } }

/** Before any lookup; 403 to an authenticated caller with no principal, whose tasks would be anyone's. */
export function requireTasks (ctx: McpContext): void {
  const call = ctx[kCallState]
  if (!declaresTasks(call.client)) throw missingCapability(MISSING_EXTENSION)
  if (call.principal.state === 'unbound') throw unboundPrincipal('its tasks')
}

export function tasksRequired (): McpError {
  return missingCapability(MISSING_EXTENSION)
}
