/**
 * The official MCP clients against mocapi over real HTTP: the TypeScript SDK v1, the v2 client on
 * its default settings (both open with `initialize`, a 2025-era session) and the v2 client pinned
 * to 2026-07-28 (stateless, elicitation by replay).
 */
import t, { type Test } from 'tap'
import type { FastifyInstance, FastifyServerOptions } from 'fastify'
import type { AddressInfo } from 'node:net'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import {
  CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema, ToolListChangedNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js'
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client'
import { clientTools } from './client-tools.js'
import { MOCAPI_VERSION, build, capturedLogs } from '../helpers.js'

/** An answer to an elicitation, as both SDKs take it. */
type Elicited = { action: 'accept', content: Record<string, string | number | boolean> } | { action: 'decline' } | { action: 'cancel' }

/** What a server asked of a client, in order. */
interface Asked { method: string, params: Record<string, unknown> }

const CAPABILITIES = { elicitation: { form: {}, url: {} }, sampling: {}, roots: { listChanged: true } }

/** What a server received: each POST's JSON-RPC method (`answer` for a response) and headers, each GET's. */
interface Received {
  posts: Array<{ method: string, version: unknown, session: boolean }>
  gets: Array<{ session: boolean, accept: unknown }>
}

/**
 * A travel desk on a free port: a plain tool, tools that ask once and twice, and one that samples
 * and lists roots at once. It records what it receives.
 */
async function desk (t: Test, options = {}, setup?: (app: FastifyInstance) => void, fastifyOptions: FastifyServerOptions = {}) {
  const received: Received = { posts: [], gets: [] }
  const app = await build(t, options, (app) => {
    app.addHook('preHandler', async (request) => {
      const body = request.body as { method?: string } | undefined
      if (request.method === 'POST') {
        received.posts.push({ method: body?.method ?? 'answer', version: request.headers['mcp-protocol-version'], session: request.headers['mcp-session-id'] !== undefined })
      }
    })
    app.addHook('onRequest', async (request) => {
      if (request.method === 'GET') received.gets.push({ session: request.headers['mcp-session-id'] !== undefined, accept: request.headers.accept })
    })
    clientTools(app)
    setup?.(app)
  }, fastifyOptions)
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, ...received, url: new URL(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`) }
}

/** The client side of every test: elicitation answers taken from a queue, fixed sampling and roots answers, and what was asked. */
function answering () {
  const queue: Elicited[] = []
  const asked: Asked[] = []
  return {
    queue,
    asked,
    elicit: (params: Record<string, unknown>): Elicited => {
      asked.push({ method: 'elicitation/create', params })
      const next = queue.shift()
      if (next === undefined) throw new Error(`nothing queued to answer ${JSON.stringify(params.message)}`)
      return next
    },
    sample: (params: Record<string, unknown>) => {
      asked.push({ method: 'sampling/createMessage', params })
      return { role: 'assistant' as const, model: 'test-model', content: { type: 'text' as const, text: 'Paris' }, stopReason: 'endTurn' }
    },
    roots: () => {
      asked.push({ method: 'roots/list', params: {} })
      return { roots: [{ uri: 'file:///home/ada', name: 'home' }] }
    },
  }
}

/** The text of a tool result. */
function textOf (result: unknown): string {
  return ((result as { content: Array<{ text: string }> }).content).map((block) => block.text).join('\n')
}

/** What each SDK's client offers these tests. */
interface Connected {
  listTools (): Promise<string[]>
  callTool (name: string, args?: Record<string, unknown>): Promise<unknown>
  close (): Promise<void>
}

/** What the tests use of either SDK's client. */
function connectedOf (client: {
  listTools (): Promise<{ tools: Array<{ name: string }> }>
  callTool (params: { name: string, arguments: Record<string, unknown> }): Promise<unknown>
  close (): Promise<void>
}): Connected {
  return {
    listTools: async () => (await client.listTools()).tools.map((tool) => tool.name),
    callTool: (name, args = {}) => client.callTool({ name, arguments: args }),
    close: () => client.close(),
  }
}

async function connectV1 (t: Test, url: URL, answers: ReturnType<typeof answering>, capabilities: object = CAPABILITIES) {
  const client = new ClientV1({ name: 'v1-test', version: '1.0.0' }, { capabilities })
  const errors: string[] = []
  client.onerror = (error) => errors.push(error.message)
  if ('elicitation' in capabilities) client.setRequestHandler(ElicitRequestSchema, async (request) => answers.elicit(request.params))
  if ('sampling' in capabilities) client.setRequestHandler(CreateMessageRequestSchema, async (request) => answers.sample(request.params))
  if ('roots' in capabilities) client.setRequestHandler(ListRootsRequestSchema, async () => answers.roots())
  const transport = new TransportV1(url)
  await client.connect(transport)
  t.teardown(() => client.close())
  const connected = connectedOf(client)
  return { client, transport, errors, ...connected }
}

async function connectV2 (t: Test, url: URL, answers: ReturnType<typeof answering>, pin?: '2026-07-28') {
  const client = new ClientV2({ name: 'v2-test', version: '2.0.0' }, {
    capabilities: CAPABILITIES,
    ...(pin === undefined ? {} : { versionNegotiation: { mode: { pin } } }),
  })
  client.setRequestHandler('elicitation/create', async (request) => answers.elicit(request.params))
  client.setRequestHandler('sampling/createMessage', async (request) => answers.sample(request.params))
  client.setRequestHandler('roots/list', async () => answers.roots())
  const transport = new TransportV2(url)
  await client.connect(transport)
  t.teardown(() => client.close())
  const connected = connectedOf(client)
  return { client, transport, ...connected }
}

/** The same calls, whichever client makes them: a plain tool, one and two questions accepted and declined, sampling and roots. */
async function conversation (t: Test, client: Connected, answers: ReturnType<typeof answering>) {
  t.same((await client.listTools()).sort(), ['assistant', 'echo', 'greet', 'trip'])
  t.equal(textOf(await client.callTool('echo', { text: 'hi' })), 'hi')

  answers.queue.push({ action: 'accept', content: { name: 'Ada' } })
  t.equal(textOf(await client.callTool('greet')), 'Hello, Ada')
  t.match(answers.asked.at(-1), { method: 'elicitation/create', params: { message: 'Your name?', requestedSchema: { properties: { name: { type: 'string', title: 'Name' } } } } })
  answers.queue.push({ action: 'decline' }, { action: 'cancel' })
  t.equal(textOf(await client.callTool('greet')), 'No name (decline)')
  t.equal(textOf(await client.callTool('greet')), 'No name (cancel)')

  answers.asked.length = 0
  answers.queue.push({ action: 'accept', content: { city: 'Lisbon' } }, { action: 'accept', content: { nights: 3 } })
  t.equal(textOf(await client.callTool('trip')), '3 nights in Lisbon')
  t.same(answers.asked.map((one) => one.params.message), ['Where to?', 'How many nights in Lisbon?'], 'two questions, one after the other')
  answers.queue.push({ action: 'accept', content: { city: 'Oslo' } }, { action: 'decline' })
  t.equal(textOf(await client.callTool('trip')), 'No stay (decline)')

  answers.asked.length = 0
  t.equal(textOf(await client.callTool('assistant')), 'Paris; file:///home/ada')
  t.same(answers.asked.map((one) => one.method).sort(), ['roots/list', 'sampling/createMessage'])
  t.match(answers.asked.find((one) => one.method === 'sampling/createMessage'), { params: { maxTokens: 20, messages: [{ role: 'user' }] } })
  t.same(answers.queue, [], 'every queued answer was asked for')
}

t.test('sdk v1: a 2025-era session lists, calls, and answers elicitations, sampling and roots on the call\'s stream', async (t) => {
  const answers = answering()
  const { posts, url } = await desk(t)
  const client = await connectV1(t, url, answers)
  t.type(client.transport.sessionId, 'string', 'the session id mocapi sealed')
  t.same(client.client.getServerVersion(), { name: 'mocapi', version: MOCAPI_VERSION })
  await conversation(t, client, answers)
  t.same(posts.slice(0, 2).map((post) => post.method), ['initialize', 'notifications/initialized'])
  t.ok(posts.slice(1).every((post) => post.session && post.version === '2025-11-25'), 'every request after initialize names the session and its version')
  t.equal(posts.filter((post) => post.method === 'answer').length, 9, 'each answer POSTed on its own')
  t.same(client.errors, [])
})

t.test('sdk v1: a URL-mode elicitation carries its elicitationId', async (t) => {
  const answers = answering()
  const { url } = await desk(t, {}, (app) => {
    app.mcp.tool({ name: 'signin' }, async (_args, ctx) => (await ctx.elicitUrl('Sign in to continue', 'https://example.com/login')).action)
  })
  const client = await connectV1(t, url, answers)
  answers.queue.push({ action: 'decline' })
  t.equal(textOf(await client.callTool('signin')), 'decline')
  t.match(answers.asked, [{ params: { mode: 'url', message: 'Sign in to continue', url: 'https://example.com/login', elicitationId: /\S/ } }])
})

t.test('sdk v2 on its default settings: the same, in a 2025-era session', async (t) => {
  const answers = answering()
  const { posts, url } = await desk(t)
  const client = await connectV2(t, url, answers)
  t.equal(client.client.getProtocolEra(), 'legacy')
  t.equal(client.client.getNegotiatedProtocolVersion(), '2025-11-25')
  t.type(client.transport.sessionId, 'string')
  await conversation(t, client, answers)
  t.equal(posts[0].method, 'initialize')
})

t.test('sdk v2 pinned to 2026-07-28: no session, and two questions answered by replay (MRTR)', async (t) => {
  const answers = answering()
  const { posts, url } = await desk(t)
  const client = await connectV2(t, url, answers, '2026-07-28')
  t.equal(client.client.getProtocolEra(), 'modern')
  t.equal(client.client.getNegotiatedProtocolVersion(), '2026-07-28')
  t.equal(client.transport.sessionId, undefined)
  answers.queue.push({ action: 'accept', content: { city: 'Oslo' } }, { action: 'accept', content: { nights: 2 } })
  t.equal(textOf(await client.callTool('trip')), '2 nights in Oslo')
  t.same(answers.asked.map((one) => one.params.message), ['Where to?', 'How many nights in Oslo?'])
  t.same(posts.map((post) => post.method), ['server/discover', 'tools/call', 'tools/call', 'tools/call'], 'three rounds of one call, no initialize')
  t.ok(posts.every((post) => post.version === '2026-07-28' && !post.session))
  answers.queue.push({ action: 'decline' })
  t.equal(textOf(await client.callTool('greet')), 'No name (decline)')
  t.equal(textOf(await client.callTool('assistant')), 'Paris; file:///home/ada')
})

t.test('sdk v1: the GET stream is accepted and hears a tool registered at run time', async (t) => {
  const { app, gets, url } = await desk(t)
  const client = await connectV1(t, url, answering())
  const heard = new Promise<unknown>((resolve) => client.client.setNotificationHandler(ToolListChangedNotificationSchema, async (notification) => resolve(notification)))
  for (let i = 0; i < 100 && gets.length === 0; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  t.same(gets, [{ session: true, accept: 'text/event-stream' }], 'the client opened its GET stream')
  app.mcp.tool({ name: 'late' }, () => 'here now')
  t.same(await heard, { method: 'notifications/tools/list_changed' })
  t.ok((await client.listTools()).includes('late'))
  t.same(client.errors, [], 'no stream error')
})

t.test('sdk v1: a client without the capability gets a clear error at once, never a hang', async (t) => {
  const { url } = await desk(t)
  const client = await connectV1(t, url, answering(), {})
  const started = Date.now()
  await t.rejects(client.client.callTool({ name: 'greet', arguments: {} }, undefined, { timeout: 10_000 }),
    { code: -32602, message: /Server requires the elicitation client capability for this request/ })
  await t.rejects(client.client.callTool({ name: 'assistant', arguments: {} }, undefined, { timeout: 10_000 }),
    { code: -32602, message: /sampling client capability/ })
  t.ok(Date.now() - started < 5_000, 'refused before the client\'s own timeout')
})

t.test('sdk v1: a client that never answers gets a clear error after session.answerTimeout', async (t) => {
  const { url } = await desk(t, { session: { answerTimeout: 300 } })
  const client = new ClientV1({ name: 'silent', version: '1.0.0' }, { capabilities: { elicitation: {} } })
  client.setRequestHandler(ElicitRequestSchema, () => new Promise(() => {}))
  await client.connect(new TransportV1(url))
  t.teardown(() => client.close())
  await t.rejects(client.callTool({ name: 'greet', arguments: {} }, undefined, { timeout: 10_000 }),
    { code: -32001, message: /tool greet waited for the client's answer longer than session.answerTimeout allows/ })
})

t.test('an answer POSTed with another session\'s id is refused; the right session\'s completes the call', async (t) => {
  const { url } = await desk(t)
  let asked!: (id: string | number) => void
  const question = new Promise<string | number>((resolve) => { asked = resolve })
  let release!: () => void
  const released = new Promise<void>((resolve) => { release = resolve })
  const client = new ClientV1({ name: 'v1-test', version: '1.0.0' }, { capabilities: { elicitation: {} } })
  client.setRequestHandler(ElicitRequestSchema, async (_request, extra) => {
    asked(extra.requestId)
    await released
    return { action: 'accept', content: { name: 'Ada' } }
  })
  const transport = new TransportV1(url)
  await client.connect(transport)
  t.teardown(() => client.close())
  const call = client.callTool({ name: 'greet', arguments: {} })
  const id = await question

  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
  const other = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'other', version: '1' } } }),
  })
  const otherSession = other.headers.get('mcp-session-id') as string
  await other.text()
  t.not(otherSession, transport.sessionId)
  const answer = JSON.stringify({ jsonrpc: '2.0', id, result: { action: 'accept', content: { name: 'Mallory' } } })
  const post = (extra: Record<string, string>) => fetch(url, { method: 'POST', headers: { ...headers, 'mcp-protocol-version': '2025-11-25', ...extra }, body: answer })
  const refused = await post({ 'mcp-session-id': otherSession })
  t.equal(refused.status, 400)
  t.match(await refused.json(), { error: { code: -32600, message: /No request of this session waits for this answer/ } })
  t.equal((await post({})).status, 400, 'without a session')
  const forged = await post({ 'mcp-session-id': `${transport.sessionId as string}x` })
  t.equal(forged.status, 404, 'a session id mocapi did not seal')
  await forged.text()

  release()
  t.equal(textOf(await call), 'Hello, Ada', 'the right session\'s answer completes the call')
})

t.test('sdk v1: a call the client cancels while it waits for an answer is no handler failure', async (t) => {
  const logs = capturedLogs()
  const { url } = await desk(t, { session: { answerTimeout: 30_000 } }, undefined, logs.options)
  const client = new ClientV1({ name: 'impatient', version: '1.0.0' }, { capabilities: { elicitation: {} } })
  client.setRequestHandler(ElicitRequestSchema, () => new Promise(() => {}))
  await client.connect(new TransportV1(url))
  t.teardown(() => client.close())
  // The client gives up first, and sends notifications/cancelled.
  await t.rejects(client.callTool({ name: 'greet', arguments: {} }, undefined, { timeout: 300 }), { code: -32001, message: /Request timed out/ })
  const ended = () => logs.lines.find((line) => line.msg === 'mcp call' && line.mcp.method === 'tools/call')
  for (let i = 0; i < 200 && ended() === undefined; i++) await new Promise((resolve) => setTimeout(resolve, 10))
  t.has(ended(), { level: 30, mcp: { name: 'greet', outcome: 'error' } }, 'the call ended when the client cancelled it, long before session.answerTimeout')
  t.same(logs.lines.filter((line) => line.level >= 50), [], 'nothing logged as an error: the tool did not fail')
})
