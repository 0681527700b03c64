import type { ListKind } from '../bus/events.js'
import type { McpContext } from '../context.js'
import { invalidParams } from '../errors.js'
import { LIST_CHANGED, type Filter, type StreamSettings, type Subscriptions } from '../features/subscriptions.js'
import { META_SUBSCRIPTION_ID, type JsonObject } from '../protocol/wire.js'
import { kCallState } from '../symbols.js'
import { isTaskId, requireTasks } from '../features/tool-task.js'

const LIST_FLAGS: Readonly<Record<string, ListKind>> = { toolsListChanged: 'tools', promptsListChanged: 'prompts', resourcesListChanged: 'resources' }

/** The dispatcher already made sure `value` is an object. */
function readFilter (ctx: McpContext, value: JsonObject, limits: StreamSettings): Required<Filter> {
  const lists = new Set<ListKind>()
  const uris = new Set<string>()
  const tasks = new Set<string>()
  for (const key of Object.keys(value)) {
    const item = value[key]
    if (key === 'taskIds') {
      requireTasks(ctx)
      if (!Array.isArray(item) || !item.every(isTaskId)) {
        throw invalidParams('params.notifications.taskIds must be an array of task ids (22 base64url characters each)')
      }
      if (item.length > limits.subscriptionUris) {
        throw invalidParams(`params.notifications.taskIds holds ${item.length} ids; at most ${limits.subscriptionUris} are accepted (limits.subscriptionUris)`)
      }
      for (const id of item as string[]) tasks.add(id)
    } else if (key === 'resourceSubscriptions') {
      if (!Array.isArray(item) || !item.every((uri) => typeof uri === 'string')) throw invalidParams('params.notifications.resourceSubscriptions must be an array of URIs')
      if (item.length > limits.subscriptionUris) {
        throw invalidParams(`params.notifications.resourceSubscriptions holds ${item.length} URIs; at most ${limits.subscriptionUris} are accepted (limits.subscriptionUris)`)
      }
      for (const uri of item as string[]) {
        if (uri.length > limits.uriLength) throw invalidParams(`params.notifications.resourceSubscriptions has a URI longer than ${limits.uriLength} characters`)
        uris.add(uri)
      }
    } else if (Object.hasOwn(LIST_FLAGS, key)) {
      if (typeof item !== 'boolean') throw invalidParams(`params.notifications.${key} must be a boolean`)
      if (item) lists.add(LIST_FLAGS[key])
    } else throw invalidParams(`Unknown field params.notifications.${key}`)
  }
  return { lists, uris, tasks }
}

export async function listen (ctx: McpContext, subscriptions: Subscriptions): Promise<JsonObject> {
  const filter = readFilter(ctx, ctx.params.notifications as JsonObject, subscriptions.limits)
  const meta = { [META_SUBSCRIPTION_ID]: ctx.id }
  const { ended } = subscriptions.stream(ctx, filter, (event) => event.kind === 'resource'
    ? { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: event.uri, _meta: meta } }
    : { jsonrpc: '2.0', method: LIST_CHANGED[event.kind], params: { _meta: meta } },
  ctx[kCallState].stream, (task) => ({ jsonrpc: '2.0', method: 'notifications/tasks', params: { ...task, _meta: meta } }))
  ctx[kCallState].stream.notify({ jsonrpc: '2.0', method: 'notifications/subscriptions/acknowledged', params: { notifications: ctx.params.notifications, _meta: meta } })
  await ended
  return { _meta: meta }
}
