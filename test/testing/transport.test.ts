import t from 'tap'
import Fastify, { type FastifyReply, type FastifyRequest } from 'fastify'
import type { AddressInfo } from 'node:net'
import { createTestClient, accept, roots, type Notification } from '../../lib/testing/index.js'
import { EventStreamParser } from '../../lib/testing/transport.js'
import { build } from '../helpers.js'

type Test = Parameters<typeof build>[0]
type Script = (body: any, reply: FastifyReply, request: FastifyRequest) => unknown

/** A hand-written endpoint at /mcp, answering each request with the next step of `script`. */
async function scripted (t: Test, steps: Script[], listen = false) {
  const bodies: any[] = []
  const app = Fastify()
  app.post('/mcp', async (request, reply) => {
    bodies.push(request.body)
    const step = steps.shift()
    if (step === undefined) throw new Error('the script ran out')
    return step(request.body, reply, request)
  })
  t.teardown(() => app.close())
  if (!listen) return { target: app, bodies }
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { target: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`, bodies }
}

const result = (value: object): Script => (body) => ({ jsonrpc: '2.0', id: body.id, result: value })
const complete = result({ resultType: 'complete', content: [{ type: 'text', text: 'done' }] })

t.test('load shedding: a result with only requestState is retried at once, without inputResponses', async (t) => {
  const { target, bodies } = await scripted(t, [result({ resultType: 'input_required', requestState: 's1' }), complete])
  const { rounds } = await createTestClient(target).callTool('x')
  t.same(rounds, [{ inputRequests: {}, inputResponses: {} }])
  t.equal(bodies[1].params.requestState, 's1')
  t.notOk('inputResponses' in bodies[1].params)
  t.not(bodies[0].id, bodies[1].id, 'a retry has a new id')
})

t.test('no requestState given, none sent back; roots/list may come without params', async (t) => {
  const { target, bodies } = await scripted(t, [
    result({ resultType: 'input_required', inputRequests: { r: { method: 'roots/list' } } }),
    complete,
  ])
  await createTestClient(target).callTool('x', {}, () => roots('file:///a'))
  t.same(bodies[1].params.inputResponses, { r: { roots: [{ uri: 'file:///a' }] } })
  t.notOk('requestState' in bodies[1].params)
})

t.test('an unknown resultType or input method fails the call', async (t) => {
  const odd = await scripted(t, [result({ resultType: 'task' })])
  await t.rejects(createTestClient(odd.target).callTool('x'),
    { message: 'tools/call answered a result with resultType "task"; a 2026-07-28 server sends "complete", "input_required" or, to a client with the tasks extension, "task"' })
  const missing = await scripted(t, [result({ content: [] })])
  await t.rejects(createTestClient(missing.target).callTool('x'), { message: /resultType undefined/ })
  const method = await scripted(t, [result({ resultType: 'input_required', inputRequests: { p: { method: 'ping', params: {} } } })])
  await t.rejects(createTestClient(method.target).callTool('x', {}, () => accept()),
    { message: 'input request "p" has the method "ping", which is not one of elicitation/create, sampling/createMessage, roots/list' })
})

t.test('listTools follows 1000 pages at most: a server handing out cursors forever is cut off', async (t) => {
  const endless = await scripted(t, Array.from({ length: 1_000 }, () => result({ resultType: 'complete', tools: [], nextCursor: 'again' })))
  await t.rejects(createTestClient(endless.target).listTools(), { message: 'tools/list still had more after 1000 pages' })
  t.equal(endless.bodies.length, 1_000)
})

t.test('a task a server shows oddly fails the call with what it showed', async (t) => {
  const created = result({ resultType: 'task', taskId: 't1', status: 'working', pollIntervalMs: 0 })
  const paused = await scripted(t, [created, result({ resultType: 'complete', taskId: 't1', status: 'paused' })])
  await t.rejects(createTestClient(paused.target, { tasks: true }).callTool('x'),
    { message: 'tools/call "x": task t1 has status "paused", which the tasks extension does not know' })
  t.equal(paused.bodies[1].method, 'tasks/get')
  t.same(paused.bodies[1].params.taskId, 't1')
  t.same(paused.bodies[0].params._meta['io.modelcontextprotocol/clientCapabilities'].extensions, { 'io.modelcontextprotocol/tasks': {} },
    'tasks: true declares the extension')
  const bare = await scripted(t, [created, result({ resultType: 'complete', taskId: 't1', status: 'failed' })])
  await t.rejects(createTestClient(bare.target).callTool('x'), { code: undefined, message: 'tools/call "x": task t1 failed: the server gave no error' })
})

t.test('replies that are not JSON-RPC reject with the HTTP status', async (t) => {
  const { target } = await scripted(t, [
    (_body, reply) => reply.code(502).type('text/html').send('<h1>Bad gateway</h1>'),
    (_body, reply) => reply.code(202).send(),
    (_body, reply) => reply.code(200).type('application/json').send('{"jsonrpc":'),
    (_body, reply) => reply.code(200).send({ jsonrpc: '2.0', id: 1 }),
  ])
  const client = createTestClient(target)
  await t.rejects(client.callTool('x'), { status: 502, code: undefined, message: 'HTTP 502: <h1>Bad gateway</h1>', data: undefined })
  await t.rejects(client.callTool('x'), { status: 202, message: 'HTTP 202: the reply holds no JSON-RPC response' })
  await t.rejects(client.callTool('x'), { status: 200, message: 'HTTP 200: {"jsonrpc":' })
  await t.rejects(client.callTool('x'), { status: 200, message: 'HTTP 200: {"jsonrpc":"2.0","id":1}', data: { jsonrpc: '2.0', id: 1 } })
})

t.test('an auth hook\'s 401 rejects with its message; the token gets through', async (t) => {
  const app = await build(t, {}, (app) => {
    app.addHook('onRequest', async (request, reply) => {
      if (request.headers.authorization !== 'Bearer s3cret') return reply.code(401).send({ statusCode: 401, error: 'Unauthorized', message: 'No token' })
    })
    app.mcp.tool({ name: 'who' }, () => 'you')
  })
  await t.rejects(createTestClient(app).callTool('who'), { status: 401, code: undefined, message: 'HTTP 401: No token', data: { error: 'Unauthorized' } })
  t.same((await createTestClient(app, { token: 's3cret' }).callTool('who')).result.content, [{ type: 'text', text: 'you' }])
})

t.test('event streams from any server: CRLF, bare data:, comments, a last event without its blank line', async (t) => {
  for (const listen of [false, true]) {
    const { target } = await scripted(t, [
      (body, reply) => {
        reply.hijack()
        reply.raw.writeHead(200, { 'content-type': 'text/event-stream; charset=utf-8' })
        reply.raw.write(': keep-alive\r\n\r\n')
        reply.raw.write('event: message\r\ndata:{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hi"}}\r\n\r\n')
        reply.raw.write('data: not json\n\n')
        reply.raw.write('data: {"jsonrpc":"2.0",\ndata: "method":"notifications/progress","params":{"progress":1}}\n\n')
        reply.raw.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { resultType: 'complete', content: [] } })}`)
      },
      (_body, reply) => {
        reply.hijack()
        reply.raw.writeHead(200, { 'content-type': 'text/event-stream' })
        reply.raw.end('data: {"jsonrpc":"2.0","method":"notifications/progress","params":{"progress":1}}\n\n')
      },
    ], listen)
    const client = createTestClient(target)
    const { notifications } = await client.callTool('x')
    t.same(notifications.map((n: Notification) => n.method), ['notifications/message', 'notifications/progress'])
    await t.rejects(client.callTool('x'), { status: 200, message: 'HTTP 200: the reply holds no JSON-RPC response' })
  }
})

t.test('over HTTP: a reply with no body and no content type', async (t) => {
  const { target } = await scripted(t, [
    (_body, reply) => { reply.hijack(); reply.raw.writeHead(204).end() },
    (_body, reply) => { reply.hijack(); reply.raw.writeHead(500).end('oops') },
  ], true)
  const client = createTestClient(new URL(target as string))
  await t.rejects(client.request('server/discover'), { status: 204, message: 'HTTP 204: the reply holds no JSON-RPC response' })
  await t.rejects(client.request('server/discover'), { status: 500, message: 'HTTP 500: oops' })
})

t.test('the event stream parser, chunk by chunk', async (t) => {
  const parser = new EventStreamParser()
  t.same(parser.push('data: {"a"'), [])
  t.same(parser.push(':1}\r'), [])
  t.same(parser.push('\n\r\ndata: 2\n'), [{ a: 1 }])
  t.same(parser.push('\n'), [2])
  t.same(parser.end(), [])
})

t.test('the event stream parser skips comments: heartbeat blocks, and comment lines inside an event', async (t) => {
  const parser = new EventStreamParser()
  t.same(parser.push(': keep-alive\n\n'), [], 'a block of comments alone is no message')
  t.same(parser.push(':\n\n: keep-alive\n\nevent: message\n: a note\ndata: {"a":1}\n\n'), [{ a: 1 }])
  t.same(parser.push(': keep'), [])
  t.same(parser.push('-alive\r\n\r\ndata: 2\n\n'), [2], 'split across chunks, with CRLF')
})
