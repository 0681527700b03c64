import t from 'tap'
import Fastify, { type FastifyReply } from 'fastify'
import type { AddressInfo } from 'node:net'
import { McpClientError, accept, createTestClient } from '../../lib/testing/index.js'
import { build } from '../helpers.js'

type Test = Parameters<typeof build>[0]

/** The call's event stream, as a scripted server writes it. */
interface Stream {
  send (message: object): void
  end (message?: object): void
  reply: FastifyReply
}

interface Script {
  /** Answers initialize; default: 2025-11-25 with the session id `s-1`. */
  initialize?: (body: any, reply: FastifyReply) => unknown
  /** Answers notifications/initialized; default 202. */
  initialized?: (reply: FastifyReply) => unknown
  /** Answers each JSON-RPC response the client posts; default 202. */
  answer?: (body: any, reply: FastifyReply) => unknown
  /** Serves the call on its event stream. */
  call: (body: any, stream: Stream, answered: () => Promise<any>) => unknown
}

/** A hand-written 2025-era endpoint at /mcp, over HTTP on a free port; it records the headers and body of each POST. */
async function scripted (t: Test, script: Script) {
  const posts: Array<{ body: any, session: unknown, version: unknown }> = []
  const waiting: Array<(body: any) => void> = []
  const answers: any[] = []
  const answered = () => new Promise((resolve) => {
    const next = answers.shift()
    if (next !== undefined) resolve(next)
    else waiting.push(resolve)
  })
  const app = Fastify()
  app.post('/mcp', async (request, reply) => {
    const body = request.body as any
    posts.push({ body, session: request.headers['mcp-session-id'], version: request.headers['mcp-protocol-version'] })
    if (body.method === 'initialize') {
      if (script.initialize !== undefined) return script.initialize(body, reply)
      return reply.header('mcp-session-id', 's-1').send({ jsonrpc: '2.0', id: body.id, result: { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 's', version: '1' } } })
    }
    if (body.method === 'notifications/initialized') return script.initialized === undefined ? reply.code(202).send() : script.initialized(reply)
    if (body.method === undefined) {
      const waiter = waiting.shift()
      if (waiter !== undefined) waiter(body)
      else answers.push(body)
      return script.answer === undefined ? reply.code(202).send() : script.answer(body, reply)
    }
    reply.hijack()
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream' })
    const stream: Stream = {
      send: (message) => reply.raw.write(`data: ${JSON.stringify(message)}\n\n`),
      end: (message) => reply.raw.end(message === undefined ? undefined : `data: ${JSON.stringify(message)}\n\n`),
      reply,
    }
    script.call(body, stream, answered)
  })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`, posts }
}

const done = (id: unknown) => ({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text: 'done' }] } })
const elicit = (id: string, message = 'Name?') => ({ jsonrpc: '2.0', id, method: 'elicitation/create', params: { message, requestedSchema: { type: 'object', properties: {} } } })

t.test('a ping from the server is answered and asks nothing of the test; notifications are heard as they come', async (t) => {
  const log = { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'working' } }
  const heard: unknown[] = []
  const { url, posts } = await scripted(t, {
    call: async (body, stream, answered) => {
      stream.send(log)
      stream.send({ jsonrpc: '2.0', id: 7, method: 'ping' })
      t.same(await answered(), { jsonrpc: '2.0', id: 7, result: {} })
      t.same(heard, [log], 'heard before the call ends')
      stream.end(done(body.id))
    },
  })
  const client = createTestClient(url, { protocolVersion: '2025-11-25', onNotification: (notification) => heard.push(notification) })
  const { rounds, roundTrips, notifications } = await client.callTool('x', {}, undefined, { meta: { progressToken: 'p' } })
  t.same(posts[2].body.params, { name: 'x', arguments: {}, _meta: { progressToken: 'p' } }, 'the call\'s _meta goes out, with nothing of 2026-07-28\'s')
  t.same(notifications, [log])
  t.same(rounds, [])
  t.equal(roundTrips, 2)
  t.same(posts.map((post) => [post.session, post.version]), [[undefined, undefined], ['s-1', '2025-11-25'], ['s-1', '2025-11-25'], ['s-1', '2025-11-25']])
})

t.test('a request no client can be asked fails the call, and what comes after it is not answered', async (t) => {
  const { url, posts } = await scripted(t, {
    call: (_body, stream) => {
      stream.send({ jsonrpc: '2.0', id: 'a', method: 'tasks/get', params: {} })
      stream.send(elicit('b'))
    },
  })
  await t.rejects(createTestClient(url, { protocolVersion: '2025-11-25' }).callTool('x', {}, () => accept({})),
    { message: 'input request "request-1" has the method "tasks/get", which is not one of elicitation/create, sampling/createMessage, roots/list' })
  t.equal(posts.length, 3, 'no answer posted')
})

t.test('a failure while an answer is being worked out: the answer is not sent', async (t) => {
  const { url, posts } = await scripted(t, {
    call: (_body, stream) => {
      stream.send(elicit('a'))
      setTimeout(() => stream.send({ jsonrpc: '2.0', id: 'b', method: 'nope' }), 20)
    },
  })
  await t.rejects(createTestClient(url, { protocolVersion: '2025-11-25' }).callTool('x', {}, async () => {
    await new Promise((resolve) => setTimeout(resolve, 100))
    return accept({})
  }), { message: /"nope"/ })
  t.equal(posts.length, 3, 'no answer posted')
})

t.test('a session without an id, a version of the server\'s choosing, and an initialize answered on a stream', async (t) => {
  const { url, posts } = await scripted(t, {
    initialize: (body, reply) => {
      reply.hijack()
      reply.raw.writeHead(200, { 'content-type': 'text/event-stream' })
      reply.raw.write('data: {"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"hello"}}\n\n')
      reply.raw.end(`data: ${JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { protocolVersion: '2025-06-18', capabilities: {} } })}\n\n`)
    },
    call: async (body, stream, answered) => {
      stream.send(elicit('e'))
      await answered()
      stream.end(done(body.id))
    },
  })
  const client = createTestClient(url, { protocolVersion: '2025-11-25' })
  t.equal((await client.callTool('x', {}, () => accept({}))).rounds.length, 1)
  t.same(posts.slice(1).map((post) => [post.session, post.version]), Array(3).fill([undefined, '2025-06-18']))
  const kept = await scripted(t, {
    initialize: (body, reply) => reply.send({ jsonrpc: '2.0', id: body.id, result: {} }),
    call: (body, stream) => stream.end(done(body.id)),
  })
  await createTestClient(kept.url, { protocolVersion: '2025-03-26' }).callTool('x')
  t.equal(kept.posts[2].version, '2025-03-26', 'a server that names no version keeps the one asked')
})

t.test('a refused notifications/initialized fails the call, whatever the refusal looks like', async (t) => {
  const refusals: Array<[(reply: FastifyReply) => unknown, { message: string, status: number, code?: number, data?: unknown }]> = [
    [(reply) => reply.code(400).send({ jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Bad session', data: { x: 1 } } }),
      { status: 400, code: -32600, data: { x: 1 }, message: 'the server refused notifications/initialized: HTTP 400: Bad session' }],
    [(reply) => reply.code(500).type('text/plain').send('oops'), { status: 500, code: undefined, message: 'the server refused notifications/initialized: HTTP 500: oops' }],
    [(reply) => reply.code(404).send(), { status: 404, message: 'the server refused notifications/initialized: HTTP 404' }],
  ]
  for (const [initialized, error] of refusals) {
    const { url } = await scripted(t, { initialized, call: (body, stream) => stream.end(done(body.id)) })
    await t.rejects(createTestClient(url, { protocolVersion: '2025-11-25' }).callTool('x'), error)
  }
})

t.test('a stream that ends without the response, or breaks', async (t) => {
  const ended = await scripted(t, { call: (_body, stream) => stream.end() })
  await t.rejects(createTestClient(ended.url, { protocolVersion: '2025-11-25' }).callTool('x'),
    { status: 200, message: 'HTTP 200: the reply holds no JSON-RPC response' })
  const broken = await scripted(t, { call: (_body, stream) => { stream.send(elicit('e')); setTimeout(() => stream.reply.raw.destroy(), 20) } })
  await t.rejects(createTestClient(broken.url, { protocolVersion: '2025-11-25' }).callTool('x', {}, async () => new Promise(() => {})), { message: /aborted|premature|ECONNRESET/ })
})

t.test('an answer whose POST fails on the way fails the call', async (t) => {
  const { url } = await scripted(t, {
    answer: (_body, reply) => { reply.hijack(); reply.raw.socket?.destroy() },
    call: (_body, stream) => stream.send(elicit('e')),
  })
  const error = await t.rejects(createTestClient(url, { protocolVersion: '2025-11-25' }).callTool('x', {}, () => accept({})))
  t.notOk(error instanceof McpClientError)
})
