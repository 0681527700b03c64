/**
 * What outside attacks on replies and heartbeats found, over real HTTP: a reply that cannot be serialised (a BigInt in
 * a content block's `_meta`, in resource contents, in prompt messages) hung its request in either framing; and a
 * scope challenge whose access checks outlasted the heartbeat arrived as an HTTP 200 event stream.
 */
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import type { MocapiOptions } from '../../lib/index.js'
import { EventStreamParser } from '../../lib/testing/transport.js'
import { jwtServer, meta, openSession } from '../helpers.js'

type Test = { teardown: (fn: () => unknown) => void }

/** Longer than the 100 ms heartbeat: the reply is switched to an event stream while it waits. */
const SLOW = 350

/** A listening server behind @fastify/jwt, with a 100 ms heartbeat. */
function server (t: Test, options: MocapiOptions, setup: (app: FastifyInstance) => void) {
  return jwtServer(t, { protectedResource: { resource: 'https://files.example.com/mcp', authorizationServers: ['https://auth.example.com'] }, heartbeat: 100, ...options }, setup)
}

/** A request over real HTTP with a 10 s bound: a reply that never comes fails the test instead of hanging it. */
async function post (url: string, method: string, params: Record<string, unknown>, headers: Record<string, string> = {}) {
  const name = params.name ?? params.uri
  const response = await fetch(url, {
    method: 'POST',
    signal: AbortSignal.timeout(10_000),
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
      ...headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method, params: { ...params, _meta: meta({}) } }),
  })
  const type = response.headers.get('content-type') ?? ''
  const text = await response.text()
  const body = type.startsWith('text/event-stream') ? (new EventStreamParser().push(text) as any[]).at(-1) : JSON.parse(text)
  return { status: response.status, type, body, challenge: response.headers.get('www-authenticate') }
}

t.test('a reply that cannot be serialised is -32603 and logged, in both framings, for every method that returns content', async (t) => {
  const wait = async (slow: boolean | undefined): Promise<void> => { if (slow === true) await sleep(SLOW) }
  const { url, lines } = await server(t, {}, (app) => {
    app.mcp.tool({ name: 'meta', inputSchema: { type: 'object', properties: { slow: { type: 'boolean' } } } }, async (args: { slow?: boolean }) => {
      await wait(args.slow)
      return [{ type: 'text' as const, text: 'hi', _meta: { count: 1n } }] as any
    })
    app.mcp.tool({ name: 'structured', inputSchema: { type: 'object', properties: { slow: { type: 'boolean' } } } }, async (args: { slow?: boolean }) => {
      await wait(args.slow)
      return { content: [{ type: 'text', text: 'hi' }], structuredContent: { total: 10n } } as any
    })
    app.mcp.resource({ uri: 'test://big', name: 'big' }, async () => [{ uri: 'test://big', text: 'x', _meta: { size: 2n } }] as any)
    app.mcp.resource({ uri: 'test://slow-big', name: 'slow-big' }, async () => {
      await sleep(SLOW)
      return [{ uri: 'test://slow-big', text: 'x', _meta: { size: 2n } }] as any
    })
    app.mcp.resourceTemplate({ uriTemplate: 'test://items/{id}', name: 'item' }, async (uri, vars) => {
      await wait(vars.id === 'slow')
      return [{ uri, text: 'x', _meta: { id: BigInt(7) } }] as any
    })
    app.mcp.prompt({ name: 'greet', arguments: [{ name: 'slow' }] }, async (args) => {
      await wait(args.slow === 'yes')
      return [{ role: 'user', content: { type: 'text', text: 'hello', _meta: { n: 3n } } }] as any
    })
  })
  const cases: Array<[string, Record<string, unknown>]> = [
    ['tools/call', { name: 'meta', arguments: {} }],
    ['tools/call', { name: 'meta', arguments: { slow: true } }],
    ['tools/call', { name: 'structured', arguments: {} }],
    ['tools/call', { name: 'structured', arguments: { slow: true } }],
    ['resources/read', { uri: 'test://big' }],
    ['resources/read', { uri: 'test://slow-big' }],
    ['resources/read', { uri: 'test://items/1' }],
    ['resources/read', { uri: 'test://items/slow' }],
    ['prompts/get', { name: 'greet', arguments: {} }],
    ['prompts/get', { name: 'greet', arguments: { slow: 'yes' } }],
  ]
  for (const [method, params] of cases) {
    const slow = JSON.stringify(params).includes('slow')
    const reply = await post(url, method, params)
    const what = `${method} ${JSON.stringify(params)}`
    t.equal(reply.type.startsWith(slow ? 'text/event-stream' : 'application/json'), true, `${what}: ${slow ? 'an event stream' : 'JSON'}`)
    t.equal(reply.status, slow ? 200 : 500, `${what}: its status`)
    t.equal(reply.body.id, 9, `${what}: the error answers the request`)
    t.equal(reply.body.error?.code, -32603, `${what}: -32603`)
    t.match(reply.body.error?.message, /could not serialize its reply/, what)
  }
  const logged = lines.filter((line) => line.level === 50 && /could not serialize a reply/.test(line.msg))
  t.equal(logged.length, cases.length, 'each is logged at error')
  // The server still serves.
  const fine = await post(url, 'resources/read', { uri: 'test://items/2' }, {})
  t.equal(fine.body.error?.code, -32603)
})

t.test('a 2025-era reply that cannot be serialised is -32603 too', async (t) => {
  const { url } = await server(t, {}, (app) => {
    app.mcp.tool({ name: 'meta' }, async () => [{ type: 'text' as const, text: 'hi', _meta: { count: 1n } }] as any)
  })
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
  const session = await openSession(url)
  const response = await fetch(url, {
    method: 'POST',
    signal: AbortSignal.timeout(10_000),
    headers: { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'meta', arguments: {} } }),
  })
  const body = await response.json() as any
  t.equal(response.status, 500)
  t.equal(body.id, 4)
  t.equal(body.error.code, -32603)
})

t.test('in a 2025-03-26 batch, the member that cannot be serialised is -32603 in its place and the rest is sent', async (t) => {
  const { url } = await server(t, {}, (app) => {
    app.mcp.tool({ name: 'meta' }, async () => [{ type: 'text' as const, text: 'hi', _meta: { count: 1n } }] as any)
    app.mcp.tool({ name: 'fine' }, async () => 'fine')
  })
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
  const session = await openSession(url, '2025-03-26')
  const response = await fetch(url, {
    method: 'POST',
    signal: AbortSignal.timeout(10_000),
    headers: { ...headers, 'mcp-session-id': session },
    body: JSON.stringify([
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'meta', arguments: {} } },
      { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'fine', arguments: {} } },
    ]),
  })
  const body = await response.json() as any[]
  t.equal(response.status, 200)
  t.same(body.map((each) => [each.id, each.error?.code]), [[1, -32603], [2, undefined]])
  t.same(body[1].result.content, [{ type: 'text', text: 'fine' }])
})

t.test('a scope challenge after access checks slower than the heartbeat is still HTTP 401/403 with its challenge', async (t) => {
  const slowCheck = async (): Promise<boolean> => {
    await sleep(SLOW)
    return true
  }
  const { url, token } = await server(t, {}, (app) => {
    app.mcp.tool({ name: 'erase', scopes: ['files:write'], canAccess: slowCheck }, async () => 'erased')
    app.mcp.tool({ name: 'slow', canAccess: slowCheck }, async () => {
      await sleep(SLOW)
      return 'done'
    })
  })
  const anonymous = await post(url, 'tools/call', { name: 'erase', arguments: {} })
  t.equal(anonymous.status, 401)
  t.equal(anonymous.type.startsWith('application/json'), true)
  t.match(anonymous.challenge, /^Bearer scope="files:write", resource_metadata="/)
  const lacking = await post(url, 'tools/call', { name: 'erase', arguments: {} }, { authorization: `Bearer ${token({ scope: 'files:read' })}` })
  t.equal(lacking.status, 403)
  t.match(lacking.challenge, /^Bearer error="insufficient_scope", scope="files:write"/)
  t.equal(lacking.body.error.code, -32600)
  // Once the handler runs, a slow reply is still switched to an event stream.
  const slow = await post(url, 'tools/call', { name: 'slow', arguments: {} })
  t.equal(slow.status, 200)
  t.equal(slow.type.startsWith('text/event-stream'), true)
  t.same(slow.body.result.content, [{ type: 'text', text: 'done' }])
})
