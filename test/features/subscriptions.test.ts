import t from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import mocapi, { InProcessBus, type BusEvent, type NotificationBus } from '../../lib/index.js'
import { Subscriptions } from '../../lib/features/subscriptions.js'
import { KEY, build, call, listen, MOCAPI_VERSION } from '../helpers.js'

async function served (t: Parameters<typeof build>[0], options = {}): Promise<{ app: FastifyInstance, url: string }> {
  // fetch may open a spare connection that never sends a request; Node would hold close() on it until a timeout.
  const app = await build(t, options, (app) => {
    app.mcp.tool({ name: 'first' }, () => '1').prompt({ name: 'p' }, () => 'p').resource({ uri: 'test://watched', name: 'watched' }, () => 'w')
  }, { forceCloseConnections: true })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  return { app, url: `http://127.0.0.1:${port}/mcp` }
}

t.test('listen: the ack first, then only the kinds asked for, each tagged', async (t) => {
  const { app, url } = await served(t)
  const tools = await listen(url, 41, { toolsListChanged: true, resourceSubscriptions: ['test://watched'] })
  const prompts = await listen(url, 42, { promptsListChanged: true })
  t.equal(tools.response.headers.get('content-type'), 'text/event-stream')
  t.equal(tools.response.headers.get('x-accel-buffering'), 'no')
  t.same(await tools.next(), {
    jsonrpc: '2.0',
    method: 'notifications/subscriptions/acknowledged',
    params: { notifications: { toolsListChanged: true, resourceSubscriptions: ['test://watched'] }, _meta: { 'io.modelcontextprotocol/subscriptionId': 41 } },
  })
  t.equal((await prompts.next()).method, 'notifications/subscriptions/acknowledged')

  app.mcp.tool({ name: 'second' }, () => '2')
  t.same(await tools.next(), { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 41 } } })
  app.mcp.notifyResourceUpdated('test://other')
  app.mcp.notifyResourceUpdated('test://watched')
  t.same(await tools.next(), { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'test://watched', _meta: { 'io.modelcontextprotocol/subscriptionId': 41 } } })
  app.mcp.removePrompt('p')
  t.same(await prompts.next(), { jsonrpc: '2.0', method: 'notifications/prompts/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 42 } } })
  t.same(prompts.frames.map((f) => f.method), ['notifications/subscriptions/acknowledged', 'notifications/prompts/list_changed'], 'no tools change reached the prompts listener')

  tools.close()
  prompts.close()
})

t.test('app.close() ends open streams with their final result', async (t) => {
  const { app, url } = await served(t)
  const stream = await listen(url, 7, { toolsListChanged: true })
  await stream.next()
  const closing = app.close()
  const final = await stream.next()
  t.same(final, {
    jsonrpc: '2.0',
    id: 7,
    result: { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': 7, 'io.modelcontextprotocol/serverInfo': { name: 'mocapi', version: MOCAPI_VERSION } } },
  })
  t.equal(await stream.next(), undefined, 'the stream ended')
  await closing
})

t.test('a stream whose client left before its request was served ends at once, holding no place', async (t) => {
  const subscriptions = new Subscriptions({ streams: 8, streamsPerCaller: 1, subscriptionUris: 4, uriLength: 100 }, () => true, { view: async () => undefined })
  const controller = new AbortController()
  controller.abort(new Error('the client left'))
  const ctx = { principal: null, request: { ip: '192.0.2.1' } } as never
  const stream = { signal: controller.signal, aborted: true, notify: () => true }
  const { ended } = subscriptions.stream(ctx, { lists: new Set(['tools']), uris: new Set() }, () => ({}), stream)
  await ended
  const live = new AbortController()
  const second = subscriptions.stream(ctx, { lists: new Set(), uris: new Set() }, () => ({}), { signal: live.signal, aborted: false, notify: () => true })
  t.ok(second.listener, 'its place was freed: the same caller opens another')
  live.abort()
  await second.ended
})

t.test('a client that leaves is forgotten', async (t) => {
  const { app, url } = await served(t)
  const stream = await listen(url, 9, { toolsListChanged: true })
  await stream.next()
  stream.close()
  await new Promise((resolve) => setTimeout(resolve, 50))
  app.mcp.tool({ name: 'later' }, () => 'x')
  const { body } = await call(app, 'tools/list')
  t.same(body.result.tools.map((tool: { name: string }) => tool.name), ['first', 'later'], 'the server keeps serving')
})

t.test('a bad filter is -32602', async (t) => {
  const app = await build(t)
  const cases: Array<[unknown, string]> = [
    ['all', 'params.notifications must be an object'],
    [{ everything: true }, 'Unknown field params.notifications.everything'],
    [{ toolsListChanged: 'yes' }, 'params.notifications.toolsListChanged must be a boolean'],
    [{ resourceSubscriptions: [1] }, 'params.notifications.resourceSubscriptions must be an array of URIs'],
  ]
  for (const [notifications, message] of cases) {
    const { body } = await call(app, 'subscriptions/listen', { notifications: notifications as object })
    t.same(body.error, { code: -32602, message })
  }
})

t.test('changes travel through the configured bus; registrations at boot are not announced', async (t) => {
  const published: BusEvent[] = []
  const inner = new InProcessBus()
  let closed = false
  const bus: NotificationBus = {
    publish: (event) => { published.push(event); inner.publish(event) },
    subscribe: (listener) => inner.subscribe(listener),
    close: () => { closed = true },
  }
  const app = Fastify()
  await app.register(mocapi, { requestState: { keys: [KEY] }, bus })
  app.mcp.tool({ name: 'boot' }, () => 'b')
  await app.ready()
  t.same(published, [])
  app.mcp.tool({ name: 'runtime' }, () => 'r')
  app.mcp.notifyListChanged('resources')
  await new Promise((resolve) => setImmediate(resolve))
  t.same(published, [{ kind: 'tools' }, { kind: 'resources' }])
  await app.close()
  t.equal(closed, true)
})

t.test('a bus that fails to publish is logged, and the server keeps serving', async (t) => {
  const errors: string[] = []
  const bus: NotificationBus = { publish: async () => { throw new Error('bus down') }, subscribe: async () => () => {} }
  const app = Fastify({ logger: { level: 'error', stream: { write: (line: string) => { errors.push(JSON.parse(line).msg) } } } })
  await app.register(mocapi, { requestState: { keys: [KEY] }, bus })
  t.teardown(() => app.close())
  await app.ready()
  app.mcp.tool({ name: 'x' }, () => 'x')
  await new Promise((resolve) => setTimeout(resolve, 10))
  t.same(errors, ['mocapi could not publish a change event'])
  t.equal((await call(app, 'tools/call', { name: 'x' })).body.result.content[0].text, 'x')
})
