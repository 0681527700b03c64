import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { requestedSchema } from '../../lib/index.js'
import { KEY, build, call as modernCall, MOCAPI_VERSION, VERSION } from '../helpers.js'

/** A server with a little of everything, for 2025-era requests made through inject. */
async function served (t: Parameters<typeof build>[0], options = {}) {
  return build(t, options, (app) => {
    app.mcp.tool({ name: 'echo', description: 'Echoes', inputSchema: { type: 'object', properties: { x: { type: 'string' } } } }, (args) => `echo ${args.x}`)
      .tool({ name: 'listed', description: 'Structured', outputSchema: { type: 'array', items: { type: 'number' } } }, () => [1, 2])
      .tool({ name: 'shaped', description: 'Structured object', outputSchema: { type: 'object', properties: { n: { type: 'number' } } } }, () => ({ n: 1 }))
      .tool({ name: 'ask', description: 'Asks' }, async (_args, ctx) => (await ctx.elicit('Name?', requestedSchema().string('name'))).action)
      .resource({ uri: 'test://a', name: 'a' }, () => 'A')
      .prompt({ name: 'p', description: 'A prompt' }, () => 'hello')
  })
}

/** One 2025-era JSON-RPC message through inject. */
async function post (app: FastifyInstance, body: object, headers: Record<string, string> = {}) {
  const response = await app.inject({ method: 'POST', url: '/mcp', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, payload: body })
  return { status: response.statusCode, body: response.body === '' ? undefined : response.json(), headers: response.headers }
}

async function initialize (app: FastifyInstance, version = '2025-11-25', capabilities: object = {}) {
  const reply = await post(app, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: version, capabilities, clientInfo: { name: 'c', version: '1' } } })
  const session = reply.headers['mcp-session-id'] as string
  const headers = { 'mcp-session-id': session, 'mcp-protocol-version': reply.body.result.protocolVersion }
  return { reply, session, headers }
}

t.test('initialize negotiates the version, opens a session, and answers in the 2025 shape', async (t) => {
  const app = await served(t, { instructions: 'Be brief.' })
  const { reply, session } = await initialize(app)
  t.equal(reply.status, 200)
  t.match(session, /^[\x21-\x7e]+$/, 'a session id of visible ASCII')
  t.same(reply.body, {
    jsonrpc: '2.0',
    id: 0,
    result: {
      protocolVersion: '2025-11-25',
      capabilities: { logging: {}, tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true, subscribe: true }, completions: {} },
      serverInfo: { name: 'mocapi', version: MOCAPI_VERSION },
      instructions: 'Be brief.',
    },
  })
  for (const [asked, answered] of [['2025-06-18', '2025-06-18'], ['2025-03-26', '2025-03-26'], ['2024-11-05', '2025-11-25'], ['2026-07-28', '2025-11-25'], ['nonsense', '2025-11-25']]) {
    t.equal((await initialize(app, asked)).reply.body.result.protocolVersion, answered, `${asked} → ${answered}`)
  }
  const headered = await post(app, { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } } },
    { 'mcp-protocol-version': '2025-11-25', 'mcp-method': 'initialize' })
  t.equal(headered.body.result.protocolVersion, '2025-11-25', 'an initialize with the 2025 headers is served too')
  const bad = await post(app, { jsonrpc: '2.0', id: 2, method: 'initialize', params: { protocolVersion: 5 } })
  t.same([bad.status, bad.body.error.code], [200, -32602])
  t.notOk(bad.headers['mcp-session-id'], 'no session for an initialize that failed')
})

t.test('requests of a session come back in the 2025 shapes', async (t) => {
  const app = await served(t)
  const { headers } = await initialize(app)
  t.same((await post(app, { jsonrpc: '2.0', method: 'notifications/initialized' }, headers)).status, 202)
  t.same((await post(app, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: { odd: true } } }, headers)).status, 202, 'a cancel naming no request id is taken, and does nothing')
  t.same((await post(app, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 42 } }, headers)).status, 202)
  const list = await post(app, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} }, headers)
  t.notOk('resultType' in list.body.result)
  t.notOk('ttlMs' in list.body.result)
  t.notOk('cacheScope' in list.body.result)
  t.notOk('_meta' in list.body.result, 'no 2026 _meta keys')
  const tools = Object.fromEntries(list.body.result.tools.map((tool: any) => [tool.name, tool]))
  t.notOk('outputSchema' in tools.listed, 'an output schema whose root is not an object is not one this revision knows')
  t.same(tools.shaped.outputSchema, { type: 'object', properties: { n: { type: 'number' } } })
  const listed = await post(app, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'listed' } }, headers)
  t.same(listed.body.result, { content: [{ type: 'text', text: '[1,2]' }] }, 'structured content that is not an object is left out')
  const shaped = await post(app, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'shaped', arguments: {} } }, headers)
  t.same(shaped.body.result, { content: [{ type: 'text', text: '{"n":1}' }], structuredContent: { n: 1 } })
  t.same((await post(app, { jsonrpc: '2.0', id: 4, method: 'ping' }, headers)).body, { jsonrpc: '2.0', id: 4, result: {} })
  t.same((await post(app, { jsonrpc: '2.0', id: 5, method: 'logging/setLevel', params: { level: 'debug' } }, headers)).body.result, {})
  t.same((await post(app, { jsonrpc: '2.0', id: 6, method: 'logging/setLevel', params: { level: 'loud' } }, headers)).body.error.code, -32602)
  t.same((await post(app, { jsonrpc: '2.0', id: 7, method: 'resources/subscribe', params: { uri: 'test://a' } }, headers)).body.result, {})
  t.same((await post(app, { jsonrpc: '2.0', id: 8, method: 'resources/unsubscribe', params: { uri: 'test://a' } }, headers)).body.result, {})
  const missing = await post(app, { jsonrpc: '2.0', id: 9, method: 'resources/read', params: { uri: 'test://missing' } }, headers)
  t.same([missing.status, missing.body.error], [200, { code: -32002, message: 'Resource not found', data: { uri: 'test://missing' } }])
  const unknown = await post(app, { jsonrpc: '2.0', id: 10, method: 'no/such' }, headers)
  t.same([unknown.status, unknown.body.error.code], [200, -32601], 'in-band: a 404 would tell the client its session is gone')
  const removed = await post(app, { jsonrpc: '2.0', id: 11, method: 'server/discover', params: {} }, headers)
  t.equal(removed.body.error.code, -32602, 'server/discover is a 2026 request: this one lacks its _meta')
  const prompt = await post(app, { jsonrpc: '2.0', id: 12, method: 'prompts/get', params: { name: 'p' } }, headers)
  t.same(prompt.body.result, { messages: [{ role: 'user', content: { type: 'text', text: 'hello' } }] })
})

t.test('a session id that is not a live session of this caller is 404, so the client starts over', async (t) => {
  const app = await served(t)
  const { session, headers } = await initialize(app)
  const tampered = session.slice(0, -4) + (session.endsWith('AAAA') ? 'BBBB' : 'AAAA')
  for (const [label, id] of [['tampered', tampered], ['garbage', 'not-a-session'], ['too long', 'A'.repeat(5000)]]) {
    const reply = await post(app, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { ...headers, 'mcp-session-id': id })
    t.equal(reply.status, 404, label)
    t.equal(reply.body.id, 1, `${label}: the error echoes the id`)
  }
  const other = await build(t, { requestState: { keys: ['jZVmkahq8PNdNfz5TNkjALzqEAb4U3/rthWbjDmDxoQ='] } })
  t.equal((await post(other, { jsonrpc: '2.0', id: 1, method: 'ping' }, headers)).status, 404, 'a session sealed under other keys')
  const token = (await modernCall(app, 'tools/call', { name: 'ask' })).body.result.requestState
  t.equal((await post(app, { jsonrpc: '2.0', id: 1, method: 'ping' }, { ...headers, 'mcp-session-id': token })).status, 404, 'a requestState token is no session id')
  const mismatch = await post(app, { jsonrpc: '2.0', id: 1, method: 'ping' }, { ...headers, 'mcp-protocol-version': '2025-06-18' })
  t.same([mismatch.status, mismatch.body.error.code], [400, -32600], 'a version header other than the session\'s')
  const noHeader = await post(app, { jsonrpc: '2.0', id: 1, method: 'ping' }, { 'mcp-session-id': session })
  t.equal(noHeader.status, 200, 'without a version header, the session says which (as 2025-03-26 clients send it)')
})

t.test('a session belongs to its caller', async (t) => {
  const app = await build(t, {}, (app) => {
    app.addHook('onRequest', async (request) => { (request as any).user = request.headers['x-user'] === undefined ? null : { sub: request.headers['x-user'] } })
    app.mcp.tool({ name: 'echo' }, () => 'e')
  })
  const reply = await post(app, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } } }, { 'x-user': 'alice' })
  const headers = { 'mcp-session-id': reply.headers['mcp-session-id'] as string, 'mcp-protocol-version': '2025-11-25' }
  t.equal((await post(app, { jsonrpc: '2.0', id: 1, method: 'ping' }, { ...headers, 'x-user': 'alice' })).status, 200)
  t.equal((await post(app, { jsonrpc: '2.0', id: 2, method: 'ping' }, { ...headers, 'x-user': 'bob' })).status, 404, 'another principal')
  t.equal((await post(app, { jsonrpc: '2.0', id: 3, method: 'ping' }, headers)).status, 404, 'anonymous')
})

t.test('requests without a session are served as far as a session is not needed', async (t) => {
  const app = await served(t)
  const headers = { 'mcp-protocol-version': '2025-06-18' }
  const list = await post(app, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, headers)
  t.equal(list.body.result.tools.length, 4)
  t.same((await post(app, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { x: 'y' } } }, headers)).body.result.content, [{ type: 'text', text: 'echo y' }])
  const asks = await post(app, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'ask' } }, headers)
  t.same(asks.body.error, { code: -32602, message: 'Server requires the elicitation client capability for this request', data: { requiredCapabilities: { elicitation: {} } } },
    'without a session the client declared nothing: the error names the capability')
  t.same((await post(app, { jsonrpc: '2.0', id: 4, method: 'logging/setLevel', params: { level: 'info' } }, headers)).body.result, {})
  t.same((await post(app, { jsonrpc: '2.0', id: 5, method: 'resources/subscribe', params: { uri: 'test://a' } }, headers)).body.result, {})
  t.equal((await post(app, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }, headers)).status, 202)
})

t.test('answers that no call waits for are refused with 400', async (t) => {
  const app = await served(t)
  const { headers } = await initialize(app)
  for (const id of ['x', 'a.b.c', 'a.b', 7]) {
    const reply = await post(app, { jsonrpc: '2.0', id, result: { action: 'accept' } }, headers)
    t.equal(reply.status, 400, String(id))
    t.equal(reply.body.error.code, -32600)
    t.notOk('id' in reply.body)
  }
})

t.test('legacy: "reject" refuses 2025-era requests with -32022 naming the versions served, and leaves 2026-07-28 alone', async (t) => {
  const app = await served(t, { legacy: 'reject' })
  const init = await post(app, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' } } })
  t.same([init.status, init.body.error], [400, { code: -32022, message: 'Unsupported protocol version', data: { supported: [VERSION], requested: '2025-06-18' } }])
  t.notOk(init.headers['mcp-session-id'])
  const headered = await post(app, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, { 'mcp-protocol-version': '2025-11-25' })
  t.same([headered.status, headered.body.error.data], [400, { supported: [VERSION], requested: '2025-11-25' }])
  const withSession = await post(app, { jsonrpc: '2.0', id: 2, method: 'tools/list' }, { 'mcp-session-id': 'whatever' })
  t.same([withSession.status, withSession.body.error.data.requested], [400, '2025-03-26'])
  t.equal((await app.inject({ method: 'GET', url: '/mcp', headers: { 'mcp-session-id': 'x' } })).statusCode, 405)
  t.equal((await modernCall(app, 'tools/list')).status, 200)
})

t.test('a GET stream needs a live session and an event-stream Accept', async (t) => {
  const app = await served(t)
  const { headers } = await initialize(app)
  t.equal((await app.inject({ method: 'GET', url: '/mcp', headers: { ...headers, accept: 'application/json' } })).statusCode, 406)
  const noAccept: Record<string, string> = { ...headers as Record<string, string> }
  delete noAccept.accept
  t.equal((await app.inject({ method: 'GET', url: '/mcp', headers: noAccept })).statusCode, 406, 'no Accept at all')
  t.equal((await app.inject({ method: 'GET', url: '/mcp', headers: { ...headers, accept: 'text/event-stream', 'mcp-session-id': 'nope' } })).statusCode, 404)
  t.equal((await app.inject({ method: 'GET', url: '/mcp', headers: { accept: 'text/event-stream' } })).statusCode, 405, 'without a session, nothing to stream')
  t.equal((await app.inject({ method: 'DELETE', url: '/mcp', headers })).statusCode, 405, 'a sealed session cannot be revoked')
})

t.test('session options are checked at registration', async (t) => {
  const { InvalidOptionError } = await import('../../lib/errors.js')
  const Fastify = (await import('fastify')).default
  const mocapi = (await import('../../lib/index.js')).default
  for (const [options, message] of [
    [{ legacy: 'sometimes' }, "legacy must be 'serve' or 'reject', got \"sometimes\""],
    [{ session: { ttl: 0 } }, 'session.ttl must be a positive integer, got 0'],
    [{ session: { answerTimeout: '5m' } }, 'session.answerTimeout must be a positive integer, got "5m"'],
    [{ session: { idle: 1 } }, 'unknown option session.idle'],
  ] as const) {
    const app = Fastify()
    const error = await app.register(mocapi, { requestState: { keys: [KEY] }, ...options } as never).then(() => undefined, (e: Error) => e)
    t.ok(error instanceof InvalidOptionError)
    t.equal(error?.message, `mocapi: ${message}`)
    await app.close()
  }
})

t.test('a 2025-era request\'s _meta is an object, and its progress token a string or a number', async (t) => {
  const app = await served(t)
  const { headers } = await initialize(app)
  for (const meta of ['str', [1, 2], 5, null]) {
    const reply = await post(app, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { x: 'a' }, _meta: meta } }, headers)
    t.same(reply.body, { jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'params._meta must be an object' } }, `_meta ${JSON.stringify(meta)}`)
  }
  for (const progressToken of [null, true, { a: 1 }, [1]]) {
    const reply = await post(app, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { x: 'a' }, _meta: { progressToken } } }, headers)
    t.same(reply.body.error, { code: -32602, message: 'params._meta.progressToken must be a string or a number' }, `progressToken ${JSON.stringify(progressToken)}`)
  }
  const initialized = await post(app, { jsonrpc: '2.0', id: 3, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' }, _meta: 7 } })
  t.equal(initialized.body.error.code, -32602, 'initialize too')
  for (const progressToken of ['p', 7]) {
    const reply = await post(app, { jsonrpc: '2.0', id: 4, method: 'tools/call', params: { name: 'echo', arguments: { x: 'a' }, _meta: { progressToken } } }, headers)
    t.same(reply.body.result.content, [{ type: 'text', text: 'echo a' }], `progressToken ${JSON.stringify(progressToken)} is taken`)
  }
})

t.test('a 2025 request whose _meta names another protocol version is 400 -32020 naming both, and runs nothing', async (t) => {
  let runs = 0
  const app = await build(t, {}, (app) => { app.mcp.tool({ name: 'count' }, () => `run ${++runs}`) })
  const { session } = await initialize(app)
  const named = (version: unknown) => ({ _meta: { 'io.modelcontextprotocol/protocolVersion': version } })
  const toolCall = (version: unknown) => ({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'count', ...named(version) } })
  const header = 'the MCP-Protocol-Version header is 2025-11-25'
  const refused: Array<[string, object, Record<string, string>, string]> = [
    ['a version header, no session', toolCall(VERSION), { 'mcp-protocol-version': '2025-11-25' }, `${header}, params._meta["io.modelcontextprotocol/protocolVersion"] is "${VERSION}"`],
    ['a session and its version header', toolCall(VERSION), { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }, `${header}, params._meta["io.modelcontextprotocol/protocolVersion"] is "${VERSION}"`],
    ['a session alone', toolCall(VERSION), { 'mcp-session-id': session }, `the session's version is 2025-11-25, params._meta["io.modelcontextprotocol/protocolVersion"] is "${VERSION}"`],
    ['another 2025 version', toolCall('2025-06-18'), { 'mcp-session-id': session }, 'the session\'s version is 2025-11-25, params._meta["io.modelcontextprotocol/protocolVersion"] is "2025-06-18"'],
    ['a version that is no string', toolCall(20260728), { 'mcp-protocol-version': '2025-11-25' }, `${header}, params._meta["io.modelcontextprotocol/protocolVersion"] is 20260728`],
    ['a long version, shown cut', toolCall('9'.repeat(5000)), { 'mcp-protocol-version': '2025-11-25' }, `${header}, params._meta["io.modelcontextprotocol/protocolVersion"] is "${'9'.repeat(40)}"`],
    ['an initialize', { jsonrpc: '2.0', id: 7, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' }, ...named(VERSION) } },
      { 'mcp-protocol-version': '2025-11-25' }, `${header}, params._meta["io.modelcontextprotocol/protocolVersion"] is "${VERSION}"`],
  ]
  for (const [label, body, headers, detail] of refused) {
    const reply = await post(app, body, headers)
    t.same([reply.status, reply.body], [400, { jsonrpc: '2.0', id: 7, error: { code: -32020, message: `The request headers and body disagree: ${detail}` } }], label)
    t.notOk(reply.headers['mcp-session-id'], `${label}: no session opened`)
  }
  t.equal(runs, 0, 'no refused request ran the tool')
  const taken: Array<[string, object, Record<string, string>]> = [
    ['the version of the header, no session', toolCall('2025-06-18'), { 'mcp-protocol-version': '2025-06-18' }],
    ['the version of the session', toolCall('2025-11-25'), { 'mcp-session-id': session }],
    ['the version of the session and its header', toolCall('2025-11-25'), { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }],
    ['no version named', { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'count', _meta: {} } }, { 'mcp-session-id': session }],
  ]
  for (const [index, [label, body, headers]] of taken.entries()) {
    const reply = await post(app, body, headers)
    t.same([reply.status, reply.body.result.content[0].text], [200, `run ${index + 1}`], label)
  }
  for (const [label, headers] of [['with the header of its version', { 'mcp-protocol-version': '2025-06-18' }], ['with an empty header', { 'mcp-protocol-version': '' }]] as const) {
    const init = await post(app, { jsonrpc: '2.0', id: 8, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'c', version: '1' }, ...named('2025-06-18') } }, headers)
    t.equal(init.body.result.protocolVersion, '2025-06-18', `an initialize ${label} naming its version in _meta is served`)
  }
})
