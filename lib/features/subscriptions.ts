import { streamOf, type McpContext } from '../context.js'
import { invalidParams } from '../errors.js'
import { META_SUBSCRIPTION_ID, type JsonObject } from '../protocol/wire.js'

/** A change that listeners may be told about. */
export type ChangeEvent =
  | { kind: 'tools' | 'prompts' | 'resources' }
  | { kind: 'resource', uri: string }

/**
 * Carries change events between the nodes of a deployment. The default is in-process; a
 * shared bus (Redis pub/sub, say) lets a change announced on one node reach listeners on all.
 */
export interface NotificationBus {
  /** Announces a change to every node's listeners. */
  publish (event: ChangeEvent): void | Promise<void>
  /** Receives every change announced by any node; returns the unsubscribe function. */
  subscribe (listener: (event: ChangeEvent) => void): (() => void) | Promise<() => void>
  /** Releases the bus's resources when the server closes. */
  close? (): void | Promise<void>
}

/** The in-process bus: a change reaches the listeners of this process only. */
export class InProcessBus implements NotificationBus {
  readonly #listeners = new Set<(event: ChangeEvent) => void>()

  publish (event: ChangeEvent): void {
    for (const listener of this.#listeners) listener(event)
  }

  subscribe (listener: (event: ChangeEvent) => void): () => void {
    this.#listeners.add(listener)
    return () => { this.#listeners.delete(listener) }
  }
}

interface Filter {
  toolsListChanged?: boolean
  promptsListChanged?: boolean
  resourcesListChanged?: boolean
  resourceSubscriptions?: string[]
}

const FILTER_FIELDS: Record<string, 'boolean' | 'array'> = {
  toolsListChanged: 'boolean', promptsListChanged: 'boolean', resourcesListChanged: 'boolean', resourceSubscriptions: 'array',
}

const LIST_CHANGED: Record<'tools' | 'prompts' | 'resources', { flag: keyof Filter, method: string }> = {
  tools: { flag: 'toolsListChanged', method: 'notifications/tools/list_changed' },
  prompts: { flag: 'promptsListChanged', method: 'notifications/prompts/list_changed' },
  resources: { flag: 'resourcesListChanged', method: 'notifications/resources/list_changed' },
}

/** Checks the filter; the dispatcher already made sure it is an object. */
function readFilter (value: JsonObject): Filter {
  for (const [key, item] of Object.entries(value)) {
    const type = FILTER_FIELDS[key]
    if (type === undefined) throw invalidParams(`Unknown field params.notifications.${key}`)
    const ok = type === 'boolean' ? typeof item === 'boolean' : Array.isArray(item) && item.every((uri) => typeof uri === 'string')
    if (!ok) throw invalidParams(`params.notifications.${key} must be ${type === 'boolean' ? 'a boolean' : 'an array of URIs'}`)
  }
  return value as Filter
}

/**
 * Open `subscriptions/listen` streams of this process. Each stream gets the acknowledgement
 * first, then only the notification kinds its filter asked for, each tagged with its
 * subscription id; it ends when the client leaves or the server closes.
 */
export class Subscriptions {
  readonly #streams = new Set<{ deliver: (event: ChangeEvent) => void, end: () => void }>()

  /** Delivers a change from the bus to the matching open streams. */
  deliver (event: ChangeEvent): void {
    for (const stream of this.#streams) stream.deliver(event)
  }

  /** Serves one listen request until the client goes away or `closeAll()`. */
  listen (ctx: McpContext): Promise<JsonObject> {
    const filter = readFilter(ctx.params.notifications as JsonObject)
    const meta = { [META_SUBSCRIPTION_ID]: ctx.id }
    const sink = streamOf(ctx)
    return new Promise((resolve) => {
      const stream = {
        deliver: (event: ChangeEvent) => {
          if (event.kind === 'resource') {
            if (filter.resourceSubscriptions?.includes(event.uri) === true) {
              sink.notify({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: event.uri, _meta: meta } })
            }
          } else if (filter[LIST_CHANGED[event.kind].flag] === true) {
            sink.notify({ jsonrpc: '2.0', method: LIST_CHANGED[event.kind].method, params: { _meta: meta } })
          }
        },
        end: () => {
          this.#streams.delete(stream)
          resolve({ _meta: meta })
        },
      }
      this.#streams.add(stream)
      sink.signal.addEventListener('abort', stream.end)
      sink.notify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: filter, _meta: meta } })
    })
  }

  /** Ends every open stream with its final result (graceful shutdown). */
  closeAll (): void {
    for (const stream of [...this.#streams]) stream.end()
  }
}
