import { setOwn, type JsonObject } from '../protocol/wire.js'
import type { Task, TaskState } from './record.js'

export function detailed (task: Task): JsonObject {
  const { stored, state } = task
  const view = summary(task)
  if (stored.status === 'input_required') view.inputRequests = outstanding(state)
  else if (stored.status === 'completed' && state.result !== undefined) view.result = state.result
  else if (stored.status === 'failed' && state.error !== undefined) view.error = state.error
  return view
}

export function summary ({ stored, state }: Task): JsonObject {
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

function outstanding (state: TaskState): JsonObject {
  const open: JsonObject = {}
  for (const [key, request] of Object.entries(state.asked as JsonObject)) {
    if (state.answers === undefined || !Object.hasOwn(state.answers, key)) setOwn(open, key, request)
  }
  return open
}
