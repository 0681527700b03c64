/**
 * Behind a load balancer's idle limit: a real nginx with a short `proxy_read_timeout` in front of mocapi, and every
 * connection mocapi holds kept talking by its heartbeat (SSE comments), so none is cut: a long call, an idle listen
 * stream, an idle 2025-era GET stream, a 2025-era call whose user answers after the proxy's limit, the official SDK
 * v2 client's long call, and the defaults against a 20 s proxy. With `heartbeat: false` the proxy cuts the call.
 */
import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client'
import mocapi, { requestedSchema, type MocapiOptions } from '../../lib/index.js'
import { accept, createTestClient, textOf } from '../../lib/testing/index.js'
import { EventStreamParser } from '../../lib/testing/transport.js'
import { KEY, listen } from '../helpers.js'
import { findNginx, startNginx } from '../nginx.js'

const nginx = findNginx()
if (nginx === null) {
  if (process.env.MOCAPI_REQUIRE_SERVERS === '1') t.fail('nginx is not installed, and MOCAPI_REQUIRE_SERVERS=1 requires it: install nginx-light')
  else t.plan(0, 'nginx is not installed: the idle-limit tests need it (set MOCAPI_REQUIRE_SERVERS=1 to fail instead)')
}

/** Longer than the proxy's 2 s limit, three times over. */
const LONG = 6_000

async function server (t: Test, options: MocapiOptions = {}): Promise<{ app: FastifyInstance, port: number }> {
  const app = Fastify({ forceCloseConnections: true })
  await app.register(mocapi, { requestState: { keys: [KEY] }, ...options })
  app.mcp.tool({ name: 'slow', inputSchema: { type: 'object', properties: { ms: { type: 'integer' } }, required: ['ms'] } },
    async (args: { ms: number }) => {
      await sleep(args.ms)
      return `waited ${args.ms} ms`
    })
  app.mcp.tool({ name: 'ask' }, async (_args, ctx) => {
    const answer = await ctx.elicit('Your name?', requestedSchema().string('name'))
    return answer.action === 'accept' ? `Hello, ${answer.content.name}` : answer.action
  })
  app.mcp.resource({ uri: 'test://watched', name: 'watched' }, () => 'w')
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  return { app, port: (app.server.address() as AddressInfo).port }
}

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'idle-test', version: '1.0.0' },
}

/** A 2026-07-28 `tools/call` of `slow` over real HTTP; the whole body as it came, with its SSE messages read. */
async function slowCall (url: string, ms: number, accept = 'application/json, text/event-stream') {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'slow' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'slow', arguments: { ms }, _meta: META } }),
  })
  const text = await response.text()
  const messages = new EventStreamParser().push(text) as any[]
  return { status: response.status, type: response.headers.get('content-type') ?? '', text, messages }
}

/** A 2025-era session through `url`: its id. */
async function initialize (url: string): Promise<string> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'idle-test', version: '1.0.0' } } }),
  })
  await response.text()
  return response.headers.get('mcp-session-id') as string
}

if (nginx !== null) {
  t.test('behind nginx with a 2 s idle limit, a heartbeat of 500 ms keeps every held connection open', async (t) => {
    const { app, port } = await server(t, { heartbeat: 500 })
    const url = await startNginx(t, nginx as string, port, 2)

    const calls = (async () => {
      const raw = await slowCall(url, LONG)
      t.equal(raw.status, 200, 'a 6 s tools/call: answered, not 504')
      t.match(raw.type, /^text\/event-stream/, 'on an event stream')
      t.ok(raw.text.split('\n').filter((line) => line === ': keep-alive').length >= 8, 'carrying a comment every half second or so')
      t.match(raw.messages, [{ id: 7, result: { content: [{ text: `waited ${LONG} ms` }] } }], 'and its response last')
      const client = createTestClient(url)
      t.equal(textOf((await client.callTool('slow', { ms: LONG })).result), `waited ${LONG} ms`, 'mocapi/testing skips the comments')
    })()

    const official = (async () => {
      const client = new ClientV2({ name: 'v2-idle', version: '2.0.0' }, { capabilities: {} })
      await client.connect(new TransportV2(new URL(url)))
      t.teardown(() => client.close())
      const result = await client.callTool({ name: 'slow', arguments: { ms: LONG } }, { timeout: 20_000 })
      t.equal(textOf(result as never), `waited ${LONG} ms`, 'the official SDK v2 client completes a 6 s call')
    })()

    const listening = (async () => {
      const stream = await listen(url, 41, { toolsListChanged: true })
      t.match(await stream.next(), { method: 'notifications/subscriptions/acknowledged' })
      await sleep(LONG)
      app.mcp.notifyListChanged('tools')
      t.match(await stream.next(), { method: 'notifications/tools/list_changed' }, 'a listen stream idle for 6 s hears the change after')
      stream.close()
    })()

    const getStream = (async () => {
      const session = await initialize(url)
      const controller = new AbortController()
      const response = await fetch(url, { headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }, signal: controller.signal })
      t.equal(response.status, 200)
      const reader = response.body!.getReader()
      const parser = new EventStreamParser()
      await sleep(LONG)
      app.mcp.notifyResourceUpdated('test://watched')
      app.mcp.notifyListChanged('resources')
      // The listen stream's tools change, made at about the same moment, reaches this session too: read past it.
      const heard: any[] = []
      while (!heard.some((message) => message.method === 'notifications/resources/list_changed')) {
        const { value, done } = await reader.read()
        if (done) break
        heard.push(...parser.push(Buffer.from(value).toString()))
      }
      t.ok(heard.some((message) => message.method === 'notifications/resources/list_changed'), 'a 2025-era GET stream idle for 6 s is still open, and hears the change')
      controller.abort()
    })()

    const lateAnswer = (async () => {
      const client = createTestClient(url, { protocolVersion: '2025-11-25' })
      const started = Date.now()
      const { result } = await client.callTool('ask', {}, async () => {
        await sleep(LONG)
        return accept({ name: 'Ada' })
      })
      t.equal(textOf(result), 'Hello, Ada', 'a 2025-era call whose user answers after 6 s completes')
      t.ok(Date.now() - started >= LONG)
    })()

    await Promise.all([calls, official, listening, getStream, lateAnswer])
  })

  t.test('with heartbeat: false, the same proxy cuts a 6 s call: the heartbeat is what keeps it', async (t) => {
    const { port } = await server(t, { heartbeat: false })
    const url = await startNginx(t, nginx as string, port, 2)
    const raw = await slowCall(url, LONG)
    t.equal(raw.status, 504, 'nginx gave up on the silent upstream')
  })

  t.test('the defaults: a heartbeat of 15 s keeps a 25 s call alive behind a 20 s idle limit', async (t) => {
    const { port } = await server(t)
    const url = await startNginx(t, nginx as string, port, 20)
    const raw = await slowCall(url, 25_000)
    t.equal(raw.status, 200)
    t.equal(raw.text.split('\n').filter((line) => line === ': keep-alive').length, 1, 'one comment, 15 s in')
    t.match(raw.messages, [{ result: { content: [{ text: 'waited 25000 ms' }] } }])
  })
}

t.test('a client that takes only JSON keeps JSON, however long the call', async (t) => {
  const { port } = await server(t, { heartbeat: 200 })
  const raw = await slowCall(`http://127.0.0.1:${port}/mcp`, 1_500, 'application/json')
  t.equal(raw.status, 200)
  t.match(raw.type, /^application\/json/)
  t.match(JSON.parse(raw.text), { result: { content: [{ text: 'waited 1500 ms' }] } })
})
