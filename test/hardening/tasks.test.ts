import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import type { AddressInfo } from 'node:net'
import mocapi, { MemoryTaskStore, requestedSchema, type MocapiOptions, type StoredTask } from '../../lib/index.js'
import { callerAddress } from '../../lib/caller.js'
import { KEY, capturedLogs, postHttp } from '../helpers.js'
import { startRedis, withRedis } from '../redis-server.js'
import { WITH_TASKS, until } from '../tasks/client.js'

const SECRET = 'a-test-secret-of-thirty-two-bytes!!'

/** A listening server behind @fastify/jwt (a token is optional), with task-capable tools. */
async function server (t: Test, options: MocapiOptions = {}) {
  const { lines, options: logging } = capturedLogs()
  const app: FastifyInstance = Fastify(logging)
  await app.register(fastifyJwt, { secret: SECRET })
  app.addHook('onRequest', async (request) => {
    if (request.headers.authorization !== undefined) await request.jwtVerify()
  })
  await app.register(mocapi, { requestState: { keys: [KEY] }, ...options })
  app.mcp.tool({ name: 'ask', task: { support: 'optional' }, inputSchema: { type: 'object' } }, async (_args, ctx) => {
    const answer = await ctx.elicit('Note?', requestedSchema().string('note'))
    return answer.action === 'accept' ? `noted ${answer.content.note.length}` : answer.action
  })
  app.mcp.tool({ name: 'detaching', task: { support: 'optional', detach: true } }, async (_args, ctx) => {
    await ctx.detach()
    return 'detached'
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`
  return { app, url, lines, token: (claims: object) => app.jwt.sign(claims) }
}

const META = (capabilities: object = WITH_TASKS) => ({
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': capabilities,
  'io.modelcontextprotocol/clientInfo': { name: 'tasks-attack', version: '1.0.0' },
})

/** A 2026-07-28 request over real HTTP, with a client that declares the tasks extension. */
const post = (url: string, method: string, params: Record<string, unknown>, options: { token?: string, meta?: object } = {}) =>
  // JSON.stringify overflows where JSON.parse does not: a value thousands deep goes in as text.
  postHttp(url, method, params, { ...options, meta: options.meta ?? META(), text: (body) => body.replaceAll(`"${DEEP}"`, nested(5_000)) })

const statusOf = (url: string, taskId: string, token?: string) =>
  post(url, 'tasks/get', { taskId }, { token }).then(({ body }) => body.result ?? body.error)

/** The JSON text of `levels` arrays, one in the other. */
const nested = (levels: number): string => '['.repeat(levels) + ']'.repeat(levels)
/** Stands for an array 5 000 levels deep in what {@link post} sends. */
const DEEP = '<5000 levels>'

t.test('a caller authenticated without a principal can neither make a task nor reach any: 403, as for a round', async (t) => {
  const { url, token } = await server(t)
  const service = token({ client_id: 'svc-a' })
  for (const name of ['ask', 'detaching']) {
    const created = await post(url, 'tools/call', { name, arguments: {} }, { token: service })
    t.equal(created.status, 403, name)
    t.match(created.body.error, { code: -32600, message: /no principal to bind its task/ })
  }
  // An anonymous caller's task: the unbound caller may not reach it either.
  const anonymous = await post(url, 'tools/call', { name: 'ask', arguments: {} })
  const taskId = anonymous.body.result.taskId
  await until(() => statusOf(url, taskId), (s) => s.status === 'input_required')
  for (const [method, params] of [['tasks/get', {}], ['tasks/update', { inputResponses: {} }], ['tasks/cancel', {}]] as const) {
    const refused = await post(url, method, { taskId, ...params }, { token: service })
    t.equal(refused.status, 403, method)
    t.match(refused.body.error.message, /no principal to bind its tasks/)
  }
  const stream = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'subscriptions/listen', authorization: `Bearer ${service}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'subscriptions/listen', params: { notifications: { taskIds: [taskId] }, _meta: META() } }),
  })
  t.equal(stream.status, 403, 'nor listen to it')
  await stream.body?.cancel()
  t.equal((await statusOf(url, taskId)).status, 'input_required', 'the task went on untouched')
})

t.test('a caller\'s tasks hold at most limits.taskBytesPerCaller of state: past it, 429 on create and on answers', async (t) => {
  const store = new MemoryTaskStore()
  const { url, token } = await server(t, { limits: { taskBytesPerCaller: 100_000 }, tasks: { store } })
  const ada = token({ sub: 'ada' })
  const args = { blob: 'x'.repeat(30_000) }
  const made: string[] = []
  for (;;) {
    const { status, body } = await post(url, 'tools/call', { name: 'ask', arguments: args }, { token: ada })
    if (status !== 200) {
      t.equal(status, 429)
      t.match(body.error, { code: -32600, message: /100000 characters, limits\.taskBytesPerCaller/ })
      break
    }
    made.push(body.result.taskId)
  }
  t.equal(made.length, 2, 'two tasks of about 40 000 characters fit in 100 000; a third does not')
  t.ok(store.bytes <= 100_000, `the store holds ${store.bytes} characters for this caller`)
  const other = await post(url, 'tools/call', { name: 'ask', arguments: args }, { token: token({ sub: 'bob' }) })
  t.equal(other.status, 200, 'another caller has a quota of its own')
  // An answer that would grow ada's tasks past the quota: refused, the task keeps waiting.
  await until(() => statusOf(url, made[0], ada), (s) => s.status === 'input_required')
  const grown = await post(url, 'tasks/update', { taskId: made[0], inputResponses: { 'elicit-1': { action: 'accept', content: { note: 'y'.repeat(20_000) } } } }, { token: ada })
  t.equal(grown.status, 429)
  t.equal((await statusOf(url, made[0], ada)).status, 'input_required')
  const small = await post(url, 'tasks/update', { taskId: made[0], inputResponses: { 'elicit-1': { action: 'accept', content: { note: 'ok' } } } }, { token: ada })
  t.same(small.body.result, { resultType: 'complete', _meta: small.body.result._meta })
  t.match(await until(() => statusOf(url, made[0], ada), (s) => s.status === 'completed'), { result: { content: [{ text: 'noted 2' }] } })
})

t.test('answers that would make one task larger than a task holds: -32602 naming the limit, the task keeps waiting', async (t) => {
  const { url, token } = await server(t, { limits: { taskBytesPerCaller: 20_000 } })
  const ada = token({ sub: 'ada' })
  const { body } = await post(url, 'tools/call', { name: 'ask', arguments: {} }, { token: ada })
  const taskId = body.result.taskId
  await until(() => statusOf(url, taskId, ada), (s) => s.status === 'input_required')
  const refused = await post(url, 'tasks/update', { taskId, inputResponses: { 'elicit-1': { action: 'accept', content: { note: 'z'.repeat(30_000) } } } }, { token: ada })
  t.equal(refused.status, 200)
  t.match(refused.body.error, { code: -32602, message: /more than one task may \(20000: 8 times bodyLimit, at most limits\.taskBytesPerCaller\)/ })
  t.equal((await statusOf(url, taskId, ada)).status, 'input_required')
})

t.test('arguments, answers and capabilities nested thousands deep: -32602 naming the field, never a 500', async (t) => {
  const { url, lines } = await server(t)
  const deep = DEEP
  const args = await post(url, 'tools/call', { name: 'ask', arguments: { deep } })
  t.equal(args.status, 400)
  t.match(args.body.error, { code: -32602, message: 'params.arguments nests objects or arrays more than 1000 levels deep' })
  const capabilities = await post(url, 'tools/call', { name: 'ask', arguments: {} }, { meta: { ...META(), 'io.modelcontextprotocol/clientCapabilities': { ...WITH_TASKS, experimental: deep } } })
  t.match(capabilities.body.error, { code: -32602, message: /^params\._meta nests/ })
  const { body } = await post(url, 'tools/call', { name: 'ask', arguments: {} })
  await until(() => statusOf(url, body.result.taskId), (s) => s.status === 'input_required')
  const answers = await post(url, 'tasks/update', { taskId: body.result.taskId, inputResponses: { 'elicit-1': deep } })
  t.match(answers.body.error, { code: -32602, message: /^params\.inputResponses nests/ })
  const plain = await post(url, 'tools/call', { name: 'ask', arguments: { deep } }, { meta: META({ elicitation: {} }) })
  t.equal(plain.status, 400, 'a plain call is refused alike')
  t.ok(await post(url, 'tools/call', { name: 'ask', arguments: { fine: JSON.parse(nested(60)) } }).then(({ status }) => status === 200), '60 levels are fine')
  t.notOk(lines.some((line) => line.level >= 50), 'nothing failed inside')
})

t.test('tasks/update checks URL, sampling and roots answers as a round does, and keeps the task waiting', async (t) => {
  const { app, url } = await server(t)
  app.mcp.tool({ name: 'kinds', task: { support: 'optional' } }, async (_args, ctx) => {
    const [link, said, roots] = await Promise.all([
      ctx.elicitUrl('Sign in', 'https://example.com/sign-in'),
      ctx.sample({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 5 }),
      ctx.listRoots(),
    ])
    return `${link.action} ${said.model} ${roots.length}`
  })
  const capabilities = { ...WITH_TASKS, elicitation: { url: {} }, sampling: {}, roots: {} }
  const { body } = await post(url, 'tools/call', { name: 'kinds', arguments: {} }, { meta: META(capabilities) })
  const taskId = body.result.taskId
  await until(() => statusOf(url, taskId), (s) => s.status === 'input_required')
  const send = (inputResponses: object) => post(url, 'tasks/update', { taskId, inputResponses }, { meta: META(capabilities) })
  t.match((await send({ 'elicit-1': { action: 'maybe' } })).body.error.message, /^inputResponses\.elicit-1: result\.action must be one of/)
  t.match((await send({ 'sample-2': { role: 'user' } })).body.error.message, /^inputResponses\.sample-2: result\.content must be/)
  t.match((await send({ 'roots-3': { roots: 'all' } })).body.error.message, /^inputResponses\.roots-3: result\.roots must be an array/)
  t.equal((await statusOf(url, taskId)).status, 'input_required')
  await send({
    'elicit-1': { action: 'accept' },
    'sample-2': { role: 'assistant', content: { type: 'text', text: 'hello' }, model: 'm1' },
    'roots-3': { roots: [{ uri: 'file:///a' }] },
  })
  t.match(await until(() => statusOf(url, taskId), (s) => s.status === 'completed'), { result: { content: [{ text: 'accept m1 1' }] } })
})

t.test('a task id that is not one mocapi makes is unknown before the store is asked', async (t) => {
  const asked: string[] = []
  const store = new MemoryTaskStore()
  const get = store.get.bind(store)
  store.get = async (id) => { asked.push(id); return get(id) }
  const { url } = await server(t, { tasks: { store } })
  for (const taskId of ['owner:abc', 'sizes', 'A'.repeat(21), 'A'.repeat(23), `${'A'.repeat(21)}=`]) {
    const { status, body } = await post(url, 'tasks/get', { taskId })
    t.same([status, body.error.code, body.error.message], [200, -32602, 'Failed to retrieve task: Task not found'], taskId)
  }
  t.same(asked, [])
  const listen = await post(url, 'subscriptions/listen', { notifications: { taskIds: ['A'.repeat(22), 'all'] } })
  t.match(listen.body.error, { code: -32602, message: 'params.notifications.taskIds must be an array of task ids (22 base64url characters each)' },
    'nor does a listen stream take one')
})

t.test('a store writer who swaps two tasks\' states gets neither read: each state opens only as its own task', async (t) => {
  const store = new MemoryTaskStore()
  const { url, token, lines } = await server(t, { tasks: { store } })
  const ada = token({ sub: 'ada' })
  const first = (await post(url, 'tools/call', { name: 'detaching', arguments: {} }, { token: ada })).body.result.taskId
  const second = (await post(url, 'tools/call', { name: 'ask', arguments: {} }, { token: ada })).body.result.taskId
  await until(() => statusOf(url, first, ada), (s) => s.status === 'completed')
  await until(() => statusOf(url, second, ada), (s) => s.status === 'input_required')
  const a = await store.get(first) as StoredTask
  const b = await store.get(second) as StoredTask
  await store.update({ ...b, version: b.version + 1, status: 'completed', sealed: a.sealed })
  const swapped = await statusOf(url, second, ada)
  t.match(swapped, { code: -32602, message: 'Failed to retrieve task: Task not found' })
  t.ok(lines.some((line) => line.level === 40 && /does not open/.test(line.msg) && line.mcp.reason === 'authentication failed'), 'logged at warn')
})

t.test('tasks/* stays served for tasks that outlive their tool; 2025-era sessions are not offered the extension', async (t) => {
  const { app, url } = await server(t)
  const { body } = await post(url, 'tools/call', { name: 'ask', arguments: {} })
  app.mcp.removeTool('ask')
  app.mcp.removeTool('detaching')
  t.equal((await statusOf(url, body.result.taskId)).status, 'input_required', 'the task is still there')
  const unknown = await post(url, 'tasks/get', { taskId: 'B'.repeat(22) })
  t.match(unknown.body.error, { code: -32602 }, 'an unknown id is -32602, not -32601')
  const discover = await post(url, 'server/discover', {})
  t.equal(discover.body.result.capabilities.extensions?.['io.modelcontextprotocol/tasks'], undefined, 'no task tool: not declared')

  const legacy = Fastify()
  await legacy.register(mocapi, { requestState: { keys: [KEY] } })
  legacy.mcp.tool({ name: 'job', task: { support: 'optional' } }, () => 'done')
  legacy.mcp.uiResource({ uri: 'ui://card', name: 'card', html: '<p>card</p>' })
  t.teardown(() => legacy.close())
  const init = await legacy.inject({
    method: 'POST',
    url: '/mcp',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    payload: { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'old', version: '1' } } },
  })
  const extensions = JSON.parse(init.body).result.capabilities.extensions
  t.same(Object.keys(extensions), ['io.modelcontextprotocol/ui'], 'views, which a 2025 session can show; not tasks')
})

t.test('anonymous callers count by IPv4 address or IPv6 /64', async (t) => {
  t.equal(callerAddress('203.0.113.9'), '203.0.113.9')
  t.equal(callerAddress('2001:db8:1:2:aaaa::1'), '2001:db8:1:2::/64')
  t.equal(callerAddress('2001:db8:1:2:ffff:ffff:ffff:ffff'), '2001:db8:1:2::/64', 'the same /64')
  t.equal(callerAddress('2001:db8:1:3::1'), '2001:db8:1:3::/64', 'the next /64')
  t.equal(callerAddress('::ffff:192.0.2.1'), '192.0.2.1', 'an IPv4 client on a dual stack')
  t.equal(callerAddress('fe80::1%eth0'), 'fe80:0:0:0::/64')
  t.equal(callerAddress('2001:db8::10.1.2.3'), '2001:db8:0:0::/64')
  const app = Fastify()
  await app.register(mocapi, { requestState: { keys: [KEY] }, limits: { tasksPerCaller: 2 } })
  app.mcp.tool({ name: 'job', task: { support: 'optional' } }, async (_args, ctx) => { await ctx.elicit('?', requestedSchema().boolean('ok')); return 'x' })
  t.teardown(() => app.close())
  const from = (remoteAddress: string) => app.inject({
    method: 'POST',
    url: '/mcp',
    remoteAddress,
    headers: { 'content-type': 'application/json', accept: 'application/json', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'job' },
    payload: { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'job', _meta: META() } },
  }).then((response) => response.statusCode)
  t.same([await from('2001:db8:7::1'), await from('2001:db8:7::2'), await from('2001:db8:7::3'), await from('2001:db8:8::1')], [200, 200, 429, 200])
})

withRedis(t, 'RedisTaskStore bounds the whole store, over every caller, and takes no crafted id for a key', async (t) => {
  const { RedisTaskStore } = await import('../../lib/redis/index.js')
  const redis = await startRedis(t)
  const store = new RedisTaskStore({ url: redis.url, prefix: 'bound:', maxBytes: 60_000 })
  const { url, token } = await server(t, { tasks: { store } })
  const args = { blob: 'x'.repeat(20_000) }
  const statuses = []
  for (const sub of ['a', 'b', 'c', 'd']) statuses.push((await post(url, 'tools/call', { name: 'ask', arguments: args }, { token: token({ sub }) })).status)
  t.same(statuses, [200, 200, 429, 429], 'two tasks of four callers fill 60 000 characters')
  for (const taskId of ['all', 'bytes', 'owner:x']) {
    const { status, body } = await post(url, 'tasks/get', { taskId }, { token: token({ sub: 'a' }) })
    t.same([status, body.error.code], [200, -32602], taskId)
  }
})
