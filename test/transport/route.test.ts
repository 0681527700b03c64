import t from 'tap'
import { build, call, meta, rpc, VERSION } from '../helpers.js'

const echo = { name: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } }

async function withEcho (t: Parameters<typeof build>[0], options = {}) {
  return build(t, options, (app) => {
    app.after(() => app.mcp.tool(echo, (args: { text: string }) => args.text))
  })
}

t.test('a result carries resultType and serverInfo, and echoes the id', async (t) => {
  const app = await build(t, { serverInfo: { name: 'travel', version: '1.2.3' } })
  const { status, body, response } = await call(app, 'server/discover', {}, { id: 'abc' })
  t.equal(status, 200)
  t.match(response.headers['content-type'], /application\/json/)
  t.equal(body.jsonrpc, '2.0')
  t.equal(body.id, 'abc')
  t.equal(body.result.resultType, 'complete')
  t.same(body.result._meta, { 'io.modelcontextprotocol/serverInfo': { name: 'travel', version: '1.2.3' } })
})

t.test('get without a session and delete answer 405', async (t) => {
  for (const [legacy, allow] of [['serve', 'GET, POST'], ['reject', 'POST']] as const) {
    const app = await build(t, { legacy })
    for (const method of ['GET', 'DELETE'] as const) {
      const response = await app.inject({ method, url: '/mcp' })
      t.equal(response.statusCode, 405)
      t.equal(response.headers.allow, allow)
      t.equal(response.json().error.code, -32600)
    }
  }
})

t.test('a notification answers 202 with no body', async (t) => {
  const app = await build(t)
  const response = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: { 'content-type': 'application/json' },
    payload: { jsonrpc: '2.0', method: 'notifications/initialized' },
  })
  t.equal(response.statusCode, 202)
  t.equal(response.body, '')
})

t.test('malformed json is -32700 and the next request is served', async (t) => {
  const app = await build(t)
  const bad = await app.inject({ method: 'POST', url: '/mcp', headers: { 'content-type': 'application/json' }, payload: '{"jsonrpc":' })
  t.equal(bad.statusCode, 400)
  t.same(bad.json(), { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the body is not valid JSON' } })
  const good = await call(app, 'server/discover')
  t.equal(good.status, 200)
})

t.test('an empty json body is a parse error that says so', async (t) => {
  const app = await build(t)
  const response = await app.inject({ method: 'POST', url: '/mcp', headers: { 'content-type': 'application/json' }, payload: '' })
  t.equal(response.statusCode, 400)
  t.same(response.json(), { jsonrpc: '2.0', id: null, error: { code: -32700, message: 'Parse error: the body is empty' } })
})

t.test('a body over the limit is a json-rpc error with 413', async (t) => {
  const app = await build(t, { bodyLimit: 1024 })
  const response = await app.inject(rpc('server/discover', { pad: 'x'.repeat(2048) }))
  t.equal(response.statusCode, 413)
  t.same(response.json().error, { code: -32600, message: 'The request body is larger than the server accepts' })
  t.equal((await call(app, 'server/discover')).status, 200)
})

t.test('a body that is not json is refused with 415', async (t) => {
  const app = await build(t)
  const response = await app.inject({ method: 'POST', url: '/mcp', headers: { 'content-type': 'text/plain' }, payload: 'hello' })
  t.equal(response.statusCode, 415)
  t.equal(response.json().error.code, -32600)
})

t.test('a batch is refused', async (t) => {
  const app = await build(t)
  const response = await app.inject({ method: 'POST', url: '/mcp', headers: { 'content-type': 'application/json' }, payload: [rpc('server/discover').payload] })
  t.equal(response.statusCode, 400)
  t.match(response.json(), { id: null, error: { code: -32600, message: /Batch/ } })
})

t.test('malformed envelopes are invalid requests', async (t) => {
  const app = await build(t)
  const cases: Array<[unknown, RegExp]> = [
    ['"text"', /request object/],
    [{ jsonrpc: '1.0', id: 1, method: 'server/discover' }, /jsonrpc/],
    [{ jsonrpc: '2.0', id: 1, result: {} }, /must not POST responses/],
    [{ jsonrpc: '2.0', id: 1 }, /method must be a non-empty string/],
    [{ jsonrpc: '2.0', id: 1, result: {}, error: {} }, /either result or error/],
    [{ jsonrpc: '2.0', id: null, result: {} }, /id must be/],
    [{ jsonrpc: '2.0', method: 'x', id: null }, /id must be/],
    [{ jsonrpc: '2.0', id: { a: 1 }, method: 'server/discover' }, /id must be/],
    [{ jsonrpc: '2.0', id: 1, method: 'server/discover', params: [1] }, /params must be an object/],
  ]
  for (const [payload, message] of cases) {
    const response = await app.inject({ method: 'POST', url: '/mcp', headers: { 'content-type': 'application/json' }, payload: payload as string })
    t.equal(response.statusCode, 400)
    t.match(response.json().error, { code: -32600, message })
  }
})

t.test('removed and unknown methods answer 404 -32601 with the id', async (t) => {
  const app = await build(t)
  for (const method of ['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe', 'no/such']) {
    const { status, body } = await call(app, method, {}, { id: 7 })
    t.equal(status, 404, method)
    t.same(body, { jsonrpc: '2.0', id: 7, error: { code: -32601, message: `Method not found: ${method}` } })
  }
})

t.test('a capability that is not advertised is -32601', async (t) => {
  const app = await build(t)
  const { status, body } = await call(app, 'tools/list')
  t.equal(status, 404)
  t.equal(body.error.code, -32601)
})

t.test('the protocol version header is required and must match _meta', async (t) => {
  const app = await build(t)
  const missing = rpc('server/discover', {}, { id: 3 })
  delete (missing.headers as Record<string, string>)['mcp-protocol-version']
  const a = await app.inject(missing)
  t.equal(a.statusCode, 400)
  t.match(a.json(), { id: 3, error: { code: -32020 } })
  const b = await call(app, 'server/discover', {}, { headers: { 'mcp-protocol-version': '2025-11-25' } })
  t.equal(b.status, 400)
  t.equal(b.body.error.code, -32020)
})

t.test('_meta and its required keys are checked with 400 -32602', async (t) => {
  const app = await build(t)
  const cases: Array<[unknown, RegExp]> = [
    [undefined, /_meta is required/],
    [{ 'io.modelcontextprotocol/clientCapabilities': {} }, /protocolVersion/],
    [{ 'io.modelcontextprotocol/protocolVersion': VERSION }, /clientCapabilities/],
    [{ ...meta({}), 'io.modelcontextprotocol/clientInfo': 'me' }, /clientInfo/],
    [{ ...meta({}), 'io.modelcontextprotocol/logLevel': 'loud' }, /logLevel/],
    [{ ...meta({}), progressToken: { a: 1 } }, /progressToken/],
  ]
  for (const [value, message] of cases) {
    const request = rpc('server/discover', {}, { id: 9 })
    const payload = request.payload as { params: Record<string, unknown> }
    payload.params._meta = value
    const response = await app.inject(request)
    t.equal(response.statusCode, 400)
    t.match(response.json(), { id: 9, error: { code: -32602, message } })
  }
})

t.test('a missing clientInfo is still served', async (t) => {
  const app = await build(t)
  const { status } = await call(app, 'server/discover', {}, { meta: { 'io.modelcontextprotocol/protocolVersion': VERSION, 'io.modelcontextprotocol/clientCapabilities': {} } })
  t.equal(status, 200)
})

t.test('an unsupported version is -32022 naming every version served, and the one requested', async (t) => {
  for (const [legacy, supported] of [['serve', [VERSION, '2025-11-25', '2025-06-18', '2025-03-26']], ['reject', [VERSION]]] as const) {
    const app = await build(t, { legacy })
    for (const method of ['server/discover', 'tools/list']) {
      const { status, body } = await call(app, method, {}, {
        headers: { 'mcp-protocol-version': '1900-01-01' },
        meta: { ...meta({}), 'io.modelcontextprotocol/protocolVersion': '1900-01-01' },
      })
      t.equal(status, 400)
      t.same(body.error, { code: -32022, message: 'Unsupported protocol version', data: { supported, requested: '1900-01-01' } })
    }
    const discovered = await call(app, 'server/discover')
    t.same(discovered.body.result.supportedVersions, supported, 'server/discover lists the same versions')
  }
})

t.test('server/discover at a 2025 version is -32022 saying it is a 2026-07-28 method, and lists 2026-07-28 only', async (t) => {
  for (const legacy of ['serve', 'reject'] as const) {
    const app = await build(t, { legacy })
    for (const version of ['2025-11-25', '2025-06-18', '2025-03-26']) {
      const { status, body } = await call(app, 'server/discover', {}, {
        id: 4,
        headers: { 'mcp-protocol-version': version },
        meta: { ...meta({}), 'io.modelcontextprotocol/protocolVersion': version },
      })
      t.same([status, body], [400, {
        jsonrpc: '2.0',
        id: 4,
        error: {
          code: -32022,
          message: `Unsupported protocol version for server/discover: it is a 2026-07-28 method, which ${version} does not have`,
          data: { supported: [VERSION], requested: version },
        },
      }], `${version}, legacy: ${legacy}`)
    }
  }
})

t.test('mcp-method must be present and match the body', async (t) => {
  const app = await build(t)
  const missing = rpc('server/discover')
  delete (missing.headers as Record<string, string>)['mcp-method']
  const a = await app.inject(missing)
  t.equal(a.statusCode, 400)
  t.equal(a.json().error.code, -32020)
  const b = await call(app, 'server/discover', {}, { headers: { 'mcp-method': 'tools/list' } })
  t.equal(b.status, 400)
  t.equal(b.body.error.code, -32020)
})

t.test('mcp-name must be present, match, and is decoded from base64', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'café_tool' }, () => 'ok').tool({ name: 'plain' }, () => 'plain')
  })
  const encoded = await call(app, 'tools/call', { name: 'café_tool' })
  t.equal(encoded.status, 200)
  t.equal(encoded.body.result.content[0].text, 'ok')
  const ascii = await call(app, 'tools/call', { name: 'plain' }, { headers: { 'mcp-name': `=?base64?${Buffer.from('plain').toString('base64')}?=` } })
  t.equal(ascii.body.result.content[0].text, 'plain')

  const missing = rpc('tools/call', { name: 'café_tool' })
  delete (missing.headers as Record<string, string>)['mcp-name']
  t.equal((await app.inject(missing)).json().error.code, -32020)

  const other = await call(app, 'tools/call', { name: 'café_tool' }, { headers: { 'mcp-name': 'other' } })
  t.equal(other.status, 400)
  t.equal(other.body.error.code, -32020)

  const malformed = await call(app, 'tools/call', { name: 'café_tool' }, { headers: { 'mcp-name': '=?base64?***?=' } })
  t.equal(malformed.status, 400)
  t.match(malformed.body.error, { code: -32020, message: /malformed/ })
})

t.test('mcp-name base64 is decoded strictly; a half sentinel is the name itself', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'Hello' }, () => 'hello').tool({ name: '=?base64?SGVsbG8=' }, () => 'prefix').tool({ name: 'SGVsbG8=?=' }, () => 'suffix')
  })
  for (const [name, header] of [['Hello', '=?base64?SGVsbG8?='], ['Hello', '=?base64?SGVs!!!bG8=?='], ['Hello', '=?base64?SGVsbG9=?=']]) {
    const reply = await call(app, 'tools/call', { name }, { headers: { 'mcp-name': header } })
    t.equal(reply.status, 400, header)
    t.same(reply.body.error, { code: -32020, message: 'The Mcp-Name header is malformed' }, header)
  }
  t.equal((await call(app, 'tools/call', { name: 'Hello' }, { headers: { 'mcp-name': '=?base64?SGVsbG8=?=' } })).body.result.content[0].text, 'hello')
  t.equal((await call(app, 'tools/call', { name: 'Hello' }, { headers: { 'mcp-name': '  Hello\t' } })).body.result.content[0].text, 'hello')
  t.equal((await call(app, 'tools/call', { name: '=?base64?SGVsbG8=' })).body.result.content[0].text, 'prefix')
  t.equal((await call(app, 'tools/call', { name: 'SGVsbG8=?=' })).body.result.content[0].text, 'suffix')
})

t.test('unknown params fields and wrong types are -32602', async (t) => {
  const app = await withEcho(t)
  const unknown = await call(app, 'tools/list', { colour: 'red' })
  t.match(unknown.body.error, { code: -32602, message: 'Unknown field params.colour for tools/list' })
  const wrong = await call(app, 'tools/list', { cursor: 5 })
  t.match(wrong.body.error, { code: -32602, message: 'params.cursor must be a string' })
  const args = await call(app, 'tools/call', { name: 'echo', arguments: [1] })
  t.match(args.body.error, { code: -32602, message: 'params.arguments must be an object' })
  const required = await call(app, 'tools/call', {}, { headers: { 'mcp-name': 'x' } })
  t.match(required.body.error, { code: -32602, message: 'params.name is required for tools/call' })
  const state = await call(app, 'tools/call', { name: 'echo', arguments: { text: 'a' }, requestState: 5 })
  t.match(state.body.error, { code: -32602, message: 'params.requestState must be a string' })
  t.equal((await call(app, 'tools/call', { name: 'echo', arguments: { text: 'still here' } })).body.result.content[0].text, 'still here')
})

t.test('origins: localhost by default, an allow-list when given', async (t) => {
  const app = await build(t)
  const evil = await call(app, 'server/discover', {}, { headers: { origin: 'https://evil.example' } })
  t.equal(evil.status, 403)
  t.equal(evil.body.error.code, -32600)
  const garbage = await call(app, 'server/discover', {}, { headers: { origin: 'not a url' } })
  t.equal(garbage.status, 403)
  const local = await call(app, 'server/discover', {}, { headers: { origin: 'http://localhost:5173' } })
  t.equal(local.status, 200)

  const listed = await build(t, { allowedOrigins: ['https://app.example'] })
  t.equal((await call(listed, 'server/discover', {}, { headers: { origin: 'https://app.example' } })).status, 200)
  t.equal((await call(listed, 'server/discover', {}, { headers: { origin: 'http://localhost' } })).status, 403)
  const any = await build(t, { allowedOrigins: ['*'] })
  t.equal((await call(any, 'server/discover', {}, { headers: { origin: 'https://anything.example' } })).status, 200)
})
