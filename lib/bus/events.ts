/** What crosses the bus between nodes: the one place the shape of each event is written and read back. */
import { LOGGING_LEVELS, jsonObject, type LoggingLevel } from '../protocol/wire.js'

/** The lists whose changes streams hear of. */
export type ListKind = 'tools' | 'prompts' | 'resources'

export const LIST_KINDS: readonly ListKind[] = ['tools', 'prompts', 'resources']

/** A change that listeners may be told about. */
export type ChangeEvent =
  | { kind: ListKind }
  | { kind: 'resource', uri: string }

/** What a 2025-era session asks of the node holding its streams and calls. */
export type SessionEvent =
  | { kind: 'session', session: string, op: 'level', level: LoggingLevel }
  /** `from`: the hub that published it, which applied it to the streams of its own node already. */
  | { kind: 'session', session: string, op: 'subscribe' | 'unsubscribe', uri: string, from?: string }
  | { kind: 'session', session: string, op: 'cancel', requestId: string | number }

/** That a task changed, from the node `node`: listen streams naming it re-read it, and so does a node running it. */
export interface TaskEvent {
  kind: 'task'
  id: string
  node: string
}

/** That a receipt is done: duplicates waiting for it on any node read it. */
export interface ReceiptEvent {
  kind: 'receipt'
  name: string
}

/** That an occurrence of the event type `name` was appended: streams of it read the log, workers the queue. */
export interface OccurrenceEvent {
  kind: 'occurrence'
  name: string
}

/** Everything a bus broadcasts: changes, tasks' news, receipts done, occurrences, and 2025-era sessions' events. */
export type BusEvent = ChangeEvent | SessionEvent | TaskEvent | ReceiptEvent | OccurrenceEvent

/** A fresh object of the event's known fields only; `undefined` when the message is none. */
export function parseEvent (message: string): BusEvent | undefined {
  const value = jsonObject(message)
  if (value === undefined) return undefined
  const { kind, uri, session, op, level, requestId, from, id, node } = value
  if (typeof kind !== 'string') return undefined
  if (kind === 'task') return typeof id === 'string' && typeof node === 'string' ? { kind, id, node } : undefined
  if (kind === 'receipt' || kind === 'occurrence') return typeof value.name === 'string' ? { kind, name: value.name } : undefined
  if (LIST_KINDS.includes(kind as ListKind)) return { kind: kind as ListKind }
  if (kind === 'resource') return typeof uri === 'string' ? { kind, uri } : undefined
  if (kind !== 'session' || typeof session !== 'string') return undefined
  if (op === 'level') return LOGGING_LEVELS.includes(level as never) ? { kind, session, op, level: level as LoggingLevel } : undefined
  if (op === 'subscribe' || op === 'unsubscribe') {
    if (typeof uri !== 'string') return undefined
    return typeof from === 'string' ? { kind, session, op, uri, from } : { kind, session, op, uri }
  }
  if (op === 'cancel' && (typeof requestId === 'string' || typeof requestId === 'number')) return { kind, session, op, requestId }
  return undefined
}
