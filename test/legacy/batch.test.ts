import t from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import mocapi, { requestedSchema, type MocapiOptions } from '../../lib/index.js'
import { KEY, build, rpc } from '../helpers.js'
import { openSession } from './client.js'

type Test = Parameters<typeof build>[0]

const REFUSED = { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Batch requests are not supported: send one JSON-RPC message per POST' } }
const NOT_AWAITED = { jsonrpc: '2.0', error: { code: -32600, message: 'No request of this session waits for this answer: it was answered, timed out, or its server is gone' } }

/** The tools the batches call; `started` is told when `wait` begins. */
function tools (app: FastifyInstance, started: () => void = () => {}): void {
  app.mcp.tool({ name: 'echo', inputSchema: { type: 'object', properties: { x: { type: 'string' } } } }, (args) => `echo ${args.x}`)
    .tool({ name: 'slow', inputSchema: { type: 'object', properties: { x: { type: 'string' } } } }, async (args) => {
      await sleep(30)
      return `slow ${args.x}`
    })
    .tool({ name: 'greet' }, async (_args, ctx) => {
      const who = await ctx.elicit('Your name?', requestedSchema().string('name'))
      return who.action === 'accept' ? `Hello, ${who.content.name}` : `No name (${who.action})`
    })
    .tool({ name: 'wait' }, async (_args, ctx) => {
      started()
      if (!ctx.signal.aborted) await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve))
      return 'cancelled'
    })
}

async function served (t: Test, options: MocapiOptions = {}, started?: () => void) {
  return build(t, options, (app) => tools(app, started))
}

/** One POST through inject, a batch or a single message. */
async function post (app: FastifyInstance, body: unknown, headers: Record<string, string> = {}) {
  const response = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    payload: JSON.stringify(body),
  })
  return { status: response.statusCode, body: response.body === '' ? undefined : response.json(), headers: response.headers }
}

/** A session of `version`: its headers, with or without the version header (2025-03-26 clients send none). */
async function session (app: FastifyInstance, version = '2025-03-26') {
  const reply = await post(app, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: version, capabilities: { elicitation: {} }, clientInfo: { name: 'c', version: '1' } } })
  const id = reply.headers['mcp-session-id'] as string
  return { headers: { 'mcp-session-id': id, 'mcp-protocol-version': version }, bare: { 'mcp-session-id': id } }
}

const toolCall = (id: string | number, name: string, args: object = {}) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } })
const ping = (id: string | number) => ({ jsonrpc: '2.0', id, method: 'ping' })
const text = (response: any) => response.result.content[0].text

t.test('a batch of two tools/call on a 2025-03-26 session is answered as one JSON array, in the order of the requests', async (t) => {
  const app = await served(t)
  const { headers, bare } = await session(app)
  const reply = await post(app, [toolCall('a', 'slow', { x: '1' }), toolCall('b', 'echo', { x: '2' })], headers)
  t.equal(reply.status, 200)
  t.match(reply.headers['content-type'], /application\/json/)
  t.same(reply.body.map((response: any) => [response.id, text(response)]), [['a', 'slow 1'], ['b', 'echo 2']], 'the slow one first, as asked')
  t.notOk('resultType' in reply.body[0].result, 'each result in the 2025 shape')
  const headerless = await post(app, [toolCall(1, 'echo', { x: '3' }), ping(2)], bare)
  t.same([headerless.status, text(headerless.body[0]), headerless.body[1]], [200, 'echo 3', { jsonrpc: '2.0', id: 2, result: {} }],
    'the session alone says 2025-03-26, as its clients send no version header')
})

t.test('a batch of a notification and a request is answered with the request\'s response alone', async (t) => {
  const app = await served(t)
  const { headers } = await session(app)
  const reply = await post(app, [{ jsonrpc: '2.0', method: 'notifications/initialized' }, toolCall(7, 'echo', { x: 'n' })], headers)
  t.equal(reply.status, 200)
  t.equal(reply.body.length, 1)
  t.same([reply.body[0].id, text(reply.body[0])], [7, 'echo n'])
})

t.test('a batch of notifications and answers only is 202 with no body, or 400 with the answers no request waits for', async (t) => {
  const app = await served(t)
  const { headers } = await session(app)
  const taken = await post(app, [{ jsonrpc: '2.0', method: 'notifications/initialized' }, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 5 } }], headers)
  t.same([taken.status, taken.body], [202, undefined])
  const refused = await post(app, [{ jsonrpc: '2.0', method: 'notifications/initialized' }, { jsonrpc: '2.0', id: 'a.b.c', result: {} }], headers)
  t.same([refused.status, refused.body], [400, [NOT_AWAITED]])
})

t.test('a batch whose tool elicits asks on the batch\'s event stream, and ends it with every response once answered', async (t) => {
  const app = Fastify({ forceCloseConnections: true })
  await app.register(mocapi, { requestState: { keys: [KEY] } })
  tools(app)
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/mcp`
  const client = await openSession(url, { version: '2025-03-26' })
  t.equal(client.negotiated, '2025-03-26')
  const reply = await client.send([toolCall('g', 'greet'), toolCall('e', 'echo', { x: 'too' })], () => ({ action: 'accept', content: { name: 'Ada' } }))
  t.equal(reply.status, 200)
  t.equal(reply.requests.length, 1)
  t.equal(reply.requests[0].method, 'elicitation/create')
  t.equal(reply.requests[0].params.message, 'Your name?')
  t.same(reply.answerStatuses, [202], 'the answer, a single message of its own, reached the waiting call')
  t.same(reply.responses.map((response) => [response.id, text(response)]), [['g', 'Hello, Ada'], ['e', 'echo too']], 'one response event per request, in order')
})

t.test('answers in a batch reach the calls that wait for them', async (t) => {
  const app = Fastify({ forceCloseConnections: true })
  // An answer that never arrives ends the call in seconds, not minutes.
  await app.register(mocapi, { requestState: { keys: [KEY] }, session: { answerTimeout: 2000 } })
  tools(app)
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const client = await openSession(`http://127.0.0.1:${(app.server.address() as { port: number }).port}/mcp`, { version: '2025-03-26' })
  const batches: Array<[number, string]> = []
  const call = await client.call('tools/call', { name: 'greet' }, async (request) => {
    const reply = await client.post([{ jsonrpc: '2.0', id: request.id, result: { action: 'accept', content: { name: 'Bo' } } }, { jsonrpc: '2.0', method: 'notifications/initialized' }])
    batches.push([reply.status, await reply.text()])
    return undefined
  })
  t.same(batches, [[202, '']])
  t.equal(text(call.response), 'Hello, Bo')
})

t.test('limits.batchSize bounds a batch: at the bound it is served, one past it is 400 -32600 naming the limit', async (t) => {
  const app = await served(t, { limits: { batchSize: 3 } })
  const { headers } = await session(app)
  const full = await post(app, [ping(1), ping(2), { jsonrpc: '2.0', method: 'notifications/initialized' }], headers)
  t.same([full.status, full.body.map((response: any) => response.id)], [200, [1, 2]])
  const over = await post(app, [ping(1), ping(2), ping(3), ping(4)], headers)
  t.same([over.status, over.body], [400, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'A batch may hold at most 3 messages (limits.batchSize); this one holds 4' } }])
})

t.test('limits.batchSize is 32 by default', async (t) => {
  const app = await served(t)
  const { headers } = await session(app)
  const full = await post(app, Array.from({ length: 32 }, (_, i) => ping(i)), headers)
  t.same([full.status, full.body.length], [200, 32])
  const over = await post(app, Array.from({ length: 33 }, (_, i) => ping(i)), headers)
  t.same([over.status, over.body.error], [400, { code: -32600, message: 'A batch may hold at most 32 messages (limits.batchSize); this one holds 33' }])
})

t.test('an empty batch is 400 -32600', async (t) => {
  const app = await served(t)
  const { headers } = await session(app)
  const reply = await post(app, [], headers)
  t.same([reply.status, reply.body], [400, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'A batch must hold at least one message' } }])
})

t.test('initialize in a batch is refused with -32600 in its place, and the rest is served', async (t) => {
  const app = await served(t)
  const { headers } = await session(app)
  const initialize = { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-03-26', capabilities: {}, clientInfo: { name: 'c', version: '1' } } }
  const reply = await post(app, [initialize, ping(2)], headers)
  t.equal(reply.status, 200)
  t.same(reply.body, [
    { jsonrpc: '2.0', id: 1, error: { code: -32600, message: 'initialize must not be part of a batch: send it alone' } },
    { jsonrpc: '2.0', id: 2, result: {} },
  ])
  t.notOk(reply.headers['mcp-session-id'], 'no session opened')
})

t.test('a malformed message in a batch gets its error in its place, and the rest is served', async (t) => {
  const app = await served(t)
  const { headers } = await session(app)
  const reply = await post(app, [
    1,
    'text',
    null,
    [ping(0)],
    { jsonrpc: '1.0', id: 1, method: 'ping' },
    { jsonrpc: '2.0', id: { a: 1 }, method: 'ping' },
    ping(2),
    { jsonrpc: '2.0', id: 3, method: 'tools/call', params: [1] },
    { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'echo', arguments: { x: 'm' }, _meta: 5 } },
    { jsonrpc: '2.0', id: 5, method: 'no/such' },
    { jsonrpc: '2.0', id: null, result: {} },
    { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'echo', arguments: { x: 'v' }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28' } } },
    toolCall(6, 'echo', { x: 'last' }),
  ], headers)
  t.equal(reply.status, 200)
  const invalid = (id: number | null, message: string) => ({ jsonrpc: '2.0', id, error: { code: -32600, message } })
  t.same(reply.body.slice(0, 8), [
    invalid(null, 'The body must be a JSON-RPC request object'),
    invalid(null, 'The body must be a JSON-RPC request object'),
    invalid(null, 'The body must be a JSON-RPC request object'),
    invalid(null, 'Batch requests are not supported: send one JSON-RPC message per POST'),
    invalid(1, 'jsonrpc must be "2.0"'),
    invalid(null, 'id must be a string or a number'),
    { jsonrpc: '2.0', id: 2, result: {} },
    invalid(3, 'params must be an object'),
  ])
  t.same(reply.body.slice(8, 11), [
    { jsonrpc: '2.0', id: 4, error: { code: -32602, message: 'params._meta must be an object' } },
    { jsonrpc: '2.0', id: 5, error: { code: -32601, message: 'Method not found: no/such' } },
    invalid(null, 'id must be a string or a number'),
  ])
  t.same([reply.body[11].id, reply.body[11].error.code], [7, -32020], 'a _meta naming another version than the session\'s')
  t.same([reply.body.length, reply.body[12].id, text(reply.body[12])], [13, 6, 'echo last'])
  const only = await post(app, [1, { jsonrpc: '2.0' }], headers)
  t.same([only.status, only.body.map((response: any) => response.error.code)], [400, [-32600, -32600]], 'a batch of nothing valid is 400, each message answered')
})

t.test('a batch is served on 2025-03-26 only: refused as before on 2025-06-18 and 2025-11-25 sessions, in 2026-07-28 and with no era', async (t) => {
  const app = await served(t)
  const served2025 = await session(app)
  t.equal((await post(app, [ping(1)], served2025.headers)).status, 200)
  for (const version of ['2025-06-18', '2025-11-25']) {
    const { headers, bare } = await session(app, version)
    t.same(await post(app, [ping(1)], headers).then((reply) => [reply.status, reply.body]), [400, REFUSED], `a ${version} session`)
    t.same(await post(app, [ping(1)], bare).then((reply) => [reply.status, reply.body]), [400, REFUSED], `a ${version} session, no version header`)
    t.same(await post(app, [ping(1)], { 'mcp-protocol-version': version }).then((reply) => [reply.status, reply.body]), [400, REFUSED], `${version}, no session`)
  }
  const modern = rpc('tools/list')
  t.same(await post(app, [modern.payload], modern.headers as Record<string, string>).then((reply) => [reply.status, reply.body]), [400, REFUSED], '2026-07-28')
  t.same(await post(app, [ping(1)]).then((reply) => [reply.status, reply.body]), [400, REFUSED], 'no version header, no session')
  t.same(await post(app, [ping(1)], { ...served2025.headers, 'mcp-protocol-version': '2026-07-28' }).then((reply) => [reply.status, reply.body]), [400, REFUSED],
    'a 2026-07-28 header on a 2025-03-26 session')
})

t.test('a batch without a session, on a 2025-03-26 version header, is served as far as a session is not needed', async (t) => {
  const app = await served(t)
  const headers = { 'mcp-protocol-version': '2025-03-26' }
  const reply = await post(app, [toolCall(1, 'echo', { x: 's' }), { jsonrpc: '2.0', id: 'a.b.c', result: {} }, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }], headers)
  t.equal(reply.status, 200)
  t.same([reply.body.length, text(reply.body[0]), reply.body[1]], [2, 'echo s', NOT_AWAITED], 'no call waits for an answer without a session')
  const asks = await post(app, [toolCall(2, 'greet')], headers)
  t.equal(asks.body[0].error.code, -32602, 'without a session the client declared nothing')
  const unknown = await post(app, [ping(3)], { 'mcp-session-id': 'not-a-session' })
  t.same([unknown.status, unknown.body.error.code], [404, -32600], 'a session id that is not a session is 404, so the client starts over')
})

t.test('notifications/cancelled ends one request of a batch, and leaves the others', async (t) => {
  let onStart: () => void = () => {}
  const app = await served(t, {}, () => onStart())
  const { headers } = await session(app)
  const within = await post(app, [toolCall('w', 'wait'), toolCall('e', 'echo', { x: 'kept' }), { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'w' } }], headers)
  t.same(within.body.map((response: any) => [response.id, text(response)]), [['w', 'cancelled'], ['e', 'echo kept']], 'a cancel in the same batch')
  const started = new Promise<void>((resolve) => { onStart = resolve })
  const running = post(app, [toolCall('w2', 'wait'), toolCall('e2', 'slow', { x: 'kept' })], headers)
  await started
  t.equal((await post(app, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'w2' } }, headers)).status, 202)
  t.same((await running).body.map((response: any) => [response.id, text(response)]), [['w2', 'cancelled'], ['e2', 'slow kept']], 'a cancel while the batch runs')
})
