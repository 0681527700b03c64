import type { McpContext } from '../context.js'
import { discover, type DiscoverSettings, type Registered } from '../features/discover.js'
import { defineShared, type ListSettings, type SharedFeatures } from '../features/methods.js'
import type { Subscriptions } from '../features/subscriptions.js'
import { Dispatcher } from '../protocol/dispatch.js'
import { defineEvents, type EventsFeatures } from '../events/methods.js'
import { listen } from './listen.js'
import type { Tasks } from '../tasks/tasks.js'

interface ModernFeatures extends Omit<SharedFeatures, 'eventTypes'>, EventsFeatures {
  subscriptions: Subscriptions
  tasks: Tasks
}

export function modernMethods (
  settings: { lists: ListSettings, discover: DiscoverSettings },
  features: ModernFeatures,
  counts: Registered
): Dispatcher<McpContext> {
  const dispatcher = new Dispatcher<McpContext>()
  const { tasks, subscriptions } = features
  dispatcher.define('server/discover', { params: {}, run: async () => discover(settings.discover, counts) })
  // Tasks sit over tools: a task-capable call from a client with the extension becomes a task.
  defineShared(dispatcher, settings.lists, features, counts)
  defineEvents(dispatcher, features, settings.lists)
  dispatcher.define('subscriptions/listen', { params: { notifications: 'object' }, run: (ctx) => listen(ctx, subscriptions) })
  const hasTasks = () => tasks.served
  dispatcher.define('tasks/get', { params: { taskId: 'string' }, enabled: hasTasks, run: (ctx) => tasks.get(ctx) })
  dispatcher.define('tasks/update', {
    params: { taskId: 'string', inputResponses: 'object' },
    enabled: hasTasks,
    run: (ctx) => tasks.update(ctx),
  })
  dispatcher.define('tasks/cancel', { params: { taskId: 'string' }, enabled: hasTasks, run: (ctx) => tasks.cancel(ctx) })
  return dispatcher
}
