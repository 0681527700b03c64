import type { FastifyInstance } from 'fastify'
import { call } from '../helpers.js'

/** The capabilities of a client that declares the tasks extension (and elicitation). */
export const WITH_TASKS = { elicitation: {}, extensions: { 'io.modelcontextprotocol/tasks': {} } }

/** A request from a client with the tasks extension, routed by its task id when it names one. */
export function task (app: FastifyInstance, method: string, params: Record<string, unknown>, headers: Record<string, string> = {}) {
  return call(app, method, params, {
    capabilities: WITH_TASKS,
    headers: typeof params.taskId === 'string' ? { 'mcp-name': params.taskId, ...headers } : headers,
  })
}

/** What `read` gives once `done` holds of it, read every 10 ms for up to 3 s. */
export async function until<T> (read: () => Promise<T>, done: (value: T) => boolean): Promise<T> {
  for (let i = 0; i < 300; i++) {
    const value = await read()
    if (done(value)) return value
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error('timed out')
}

/** A task as `tasks/get` shows it, or the error it answers. */
export const status = (app: FastifyInstance, taskId: string, headers: Record<string, string> = {}) =>
  task(app, 'tasks/get', { taskId }, headers).then(({ body }) => body.result ?? body.error)
