import t from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import mocapi, { ErrorCode, McpError, requestedSchema, type McpContext } from '../../lib/index.js'
import { KEY, build, meta, rpc, SERVER_INFO } from '../helpers.js'

type Test = Parameters<typeof build>[0]
type Setup = (app: FastifyInstance) => void | Promise<void>

interface Reply { status: number, headers: http.IncomingHttpHeaders, body: string, json: any }

/** A mocapi app listening on `address`, on a free port. */
async function listen (t: Test, options = {}, setup?: Setup, address = '127.0.0.1') {
  const app = await build(t, options, setup)
  await app.listen({ host: address, port: 0 })
  return { app, port: (app.server.address() as AddressInfo).port }
}

/** One HTTP request to `/mcp`; `headers.host` replaces the Host header. */
function send (port: number, options: { address?: string, method?: string, headers?: http.OutgoingHttpHeaders, body?: unknown } = {}): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const request = http.request({
      host: options.address ?? '127.0.0.1',
      port,
      method: options.method ?? 'POST',
      path: '/mcp',
      headers: options.headers,
      agent: false,
    }, (response) => {
      let body = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => { body += chunk })
      response.on('end', () => {
        const json = /^application\/json/.test(String(response.headers['content-type'])) ? JSON.parse(body) : undefined
        resolve({ status: response.statusCode as number, headers: response.headers, body, json })
      })
    })
    request.on('error', reject)
    request.end(options.body === undefined ? undefined : JSON.stringify(options.body))
  })
}

/** A JSON-RPC request over HTTP with the headers a 2026-07-28 client sends, plus `headers`. */
function post (port: number, method: string, params: Record<string, unknown> = {}, extra: { address?: string, headers?: http.OutgoingHttpHeaders, id?: unknown, meta?: object } = {}): Promise<Reply> {
  const request = rpc(method, params, { id: extra.id, meta: extra.meta })
  return send(port, { address: extra.address, headers: { ...request.headers, ...extra.headers }, body: request.payload })
}

/** Raw bytes to the server; resolves with everything it sent back before closing. */
function raw (port: number, bytes: Buffer): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.end(bytes))
    let text = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => { text += chunk })
    socket.on('error', reject)
    socket.on('close', () => resolve(text))
  })
}

function logLines () {
  const lines: Array<Record<string, any>> = []
  const stream = new Writable({ write (chunk, _encoding, done) { lines.push(JSON.parse(chunk.toString())); done() } })
  return { lines, stream }
}

/** The refusal of a foreign Host, which names the host and the option that would let it in. */
const hostRefused = (host: string) => ({ jsonrpc: '2.0', id: null, error: { code: -32600, message: `Host not allowed: ${JSON.stringify(host)} reached a loopback address; list it in the allowedHosts option` } })

t.test('dns rebinding: a foreign host is refused on loopback', async (t) => {
  const { port } = await listen(t)
  for (const host of ['evil.example', `evil.example:${port}`, 'localhost.evil.example', '127.0.0.1.nip.io', '[::1']) {
    const reply = await post(port, 'server/discover', {}, { headers: { host } })
    t.equal(reply.status, 403, host)
    t.same(reply.json, hostRefused(host.startsWith('[') ? '' : host.replace(/:\d+$/, '')), host)
  }
  const get = await send(port, { method: 'GET', headers: { host: 'evil.example' } })
  t.equal(get.status, 403, 'get with a foreign host')
  t.same(get.json, hostRefused('evil.example'))
  t.equal((await send(port, { method: 'GET', headers: { host: `localhost:${port}` } })).status, 405, 'get with a local host')
})

t.test('dns rebinding: loopback names pass', async (t) => {
  const { port } = await listen(t)
  for (const host of [`localhost:${port}`, `127.0.0.1:${port}`, `[::1]:${port}`, '[::1]', 'localhost', `LocalHost:${port}`]) {
    const reply = await post(port, 'server/discover', {}, { headers: { host } })
    t.equal(reply.status, 200, host)
    t.same(reply.json.result._meta, SERVER_INFO)
  }
})

t.test('dns rebinding: allowedHosts entries pass, whatever their case', async (t) => {
  const { port } = await listen(t, { allowedHosts: ['MCP.Example', 'api.internal'] })
  for (const host of ['mcp.example', `Mcp.Example:${port}`, 'api.internal:8443', `localhost:${port}`]) {
    t.equal((await post(port, 'server/discover', {}, { headers: { host } })).status, 200, host)
  }
  t.equal((await post(port, 'server/discover', {}, { headers: { host: 'evil.example' } })).status, 403)
})

t.test('dns rebinding: a request without a host is refused', async (t) => {
  const { port } = await listen(t)
  const request = rpc('server/discover', {}, { id: 1 })
  const body = JSON.stringify(request.payload)
  const head = Object.entries(request.headers as Record<string, string>).map(([name, value]) => `${name}: ${value}\r\n`).join('')
  const reply = await raw(port, Buffer.from(`POST /mcp HTTP/1.0\r\n${head}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`))
  t.match(reply, /^HTTP\/1\.1 403 /)
  t.match(reply, '"message":"Host not allowed: \\"\\" reached a loopback address; list it in the allowedHosts option"')
})

t.test('dns rebinding: the check covers ipv6 loopback', async (t) => {
  const { port } = await listen(t, {}, undefined, '::1')
  t.equal((await post(port, 'server/discover', {}, { address: '::1', headers: { host: 'evil.example' } })).status, 403)
  t.equal((await post(port, 'server/discover', {}, { address: '::1', headers: { host: `[::1]:${port}` } })).status, 200)
})

t.test('a foreign origin is refused with 403', async (t) => {
  const { port } = await listen(t)
  const evil = await post(port, 'server/discover', {}, { headers: { origin: 'http://evil.example.com' } })
  t.equal(evil.status, 403)
  t.same(evil.json, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Origin not allowed: http://evil.example.com is not in the allowedOrigins option' } })
  const local = await post(port, 'server/discover', {}, { headers: { origin: `http://localhost:${port}` } })
  t.equal(local.status, 200)
})

t.test('odd bytes in mcp-name are a json-rpc error, and the next request is served', async (t) => {
  const { port } = await listen(t, {}, (app) => { app.mcp.tool({ name: 'café' }, () => 'served') })
  const request = rpc('tools/call', { name: 'café' }, { id: 77 })
  const body = Buffer.from(JSON.stringify(request.payload))
  const head = Object.entries(request.headers as Record<string, string>)
    .filter(([name]) => name !== 'mcp-name').map(([name, value]) => `${name}: ${value}\r\n`).join('')
  const values = [Buffer.from('café'), Buffer.from([0x80, 0x9f, 0xff]), Buffer.from('caf\xe9', 'latin1'), Buffer.from('\xff\xfe', 'latin1')]
  for (const value of values) {
    const reply = await raw(port, Buffer.concat([
      Buffer.from(`POST /mcp HTTP/1.1\r\nhost: localhost:${port}\r\nconnection: close\r\n${head}content-length: ${body.length}\r\nmcp-name: `),
      value,
      Buffer.from('\r\n\r\n'),
      body,
    ]))
    const label = value.toString('hex')
    t.match(reply, /^HTTP\/1\.1 400 /, label)
    t.match(reply, /content-type: application\/json/, label)
    const json = JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4))
    t.match(json, { jsonrpc: '2.0', id: 77, error: { code: -32020 } }, label)
  }
  const next = await post(port, 'tools/call', { name: 'café' })
  t.equal(next.status, 200)
  t.equal(next.json.result.content[0].text, 'served')
})

t.test('a repeated mcp header does not match the body', async (t) => {
  const { port } = await listen(t)
  const reply = await post(port, 'server/discover', {}, { id: 4, headers: { 'mcp-method': ['server/discover', 'server/discover'] } })
  t.equal(reply.status, 400)
  t.same(reply.json, { jsonrpc: '2.0', id: 4, error: { code: -32020, message: 'The Mcp-Method header does not match the body\'s method' } })
})

t.test('a request without params is told _meta is required', async (t) => {
  const { port } = await listen(t)
  const reply = await send(port, {
    headers: { 'content-type': 'application/json', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'server/discover' },
    body: { jsonrpc: '2.0', id: 'bare', method: 'server/discover' },
  })
  t.equal(reply.status, 400)
  t.same(reply.json, { jsonrpc: '2.0', id: 'bare', error: { code: -32602, message: 'params._meta is required' } })
})

/** A server whose `wait` tool reports progress, then waits for the client to go away. */
async function waiting (t: Test) {
  const seen = { aborted: false, reason: '', lateWrites: 0 }
  let done!: () => void
  const doneP = new Promise<void>((resolve) => { done = resolve })
  const { port } = await listen(t, {}, (app) => {
    app.addHook('onRequest', async (_request, reply) => {
      const res = reply.raw
      let closed = false
      res.once('close', () => { closed = true })
      const write = res.write.bind(res) as (...args: unknown[]) => boolean
      const end = res.end.bind(res) as (...args: unknown[]) => typeof res
      res.write = ((...args: unknown[]) => { if (closed) seen.lateWrites++; return write(...args) }) as typeof res.write
      res.end = ((...args: unknown[]) => { if (closed) seen.lateWrites++; return end(...args) }) as typeof res.end
    })
    app.mcp.tool({ name: 'wait' }, async (_args, ctx: McpContext) => {
      ctx.progress(1, undefined, 'waiting for the client')
      const gone = new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }))
      await Promise.race([gone, new Promise((resolve) => setTimeout(resolve, 5000))])
      seen.aborted = ctx.signal.aborted
      seen.reason = (ctx.signal.reason as Error | undefined)?.name ?? ''
      ctx.progress(2, undefined, 'nobody listens')
      ctx.log('error', 'nobody listens')
      setImmediate(done)
      return 'too late'
    })
  })
  return { port, seen, done: doneP }
}

t.test('ctx.signal aborts when the client closes a stream mid-call, and nothing more is written', async (t) => {
  const { port, seen, done } = await waiting(t)
  const request = rpc('tools/call', { name: 'wait' }, { meta: meta({}, { progressToken: 'w', 'io.modelcontextprotocol/logLevel': 'debug' }) })
  const first = await new Promise<string>((resolve, reject) => {
    const client = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/mcp', headers: request.headers, agent: false }, (response) => {
      t.equal(response.headers['content-type'], 'text/event-stream')
      response.setEncoding('utf8')
      response.once('data', (chunk: string) => {
        client.destroy()
        resolve(chunk)
      })
    })
    client.on('error', () => undefined)
    client.on('close', () => reject(new Error('closed before the first event')))
    client.end(JSON.stringify(request.payload))
  })
  t.match(first, /^event: message\ndata: .*"notifications\/progress".*"waiting for the client"/)
  await done
  t.equal(seen.aborted, true, 'the handler saw the abort')
  t.equal(seen.reason, 'AbortError')
  t.equal(seen.lateWrites, 0, 'nothing written after the client left')
  t.equal((await post(port, 'server/discover')).status, 200, 'the server still serves')
})

t.test('ctx.signal is already aborted when read after the client left', async (t) => {
  let started!: () => void
  const startedP = new Promise<void>((resolve) => { started = resolve })
  let finished!: (value: boolean) => void
  const finishedP = new Promise<boolean>((resolve) => { finished = resolve })
  const { port } = await listen(t, {}, (app) => {
    app.mcp.tool({ name: 'slow' }, async (_args, ctx: McpContext) => {
      started()
      const socket = ctx.request.raw.socket
      if (!socket.destroyed) await new Promise((resolve) => socket.once('close', resolve))
      finished(ctx.signal.aborted)
      return 'too late'
    })
  })
  const request = rpc('tools/call', { name: 'slow' })
  const client = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/mcp', headers: request.headers, agent: false })
  let answered = false
  client.on('response', () => { answered = true })
  client.on('error', () => undefined)
  client.end(JSON.stringify(request.payload))
  await startedP
  client.destroy()
  t.equal(await finishedP, true)
  t.equal(answered, false)
  t.equal((await post(port, 'server/discover')).status, 200, 'the server still serves')
})

const confirm = requestedSchema().boolean('confirm', { title: 'Confirm' }).choose('cabin', ['economy', 'business'])

t.test('an elicitation round trip over http', async (t) => {
  let runs = 0
  const { port } = await listen(t, {}, (app) => {
    // The schema leaves stops and traveller optional; the test always sends them.
    app.mcp.tool<{ to: string, stops: string[], traveller: { name: string } }>({
      name: 'book_flight',
      inputSchema: {
        type: 'object',
        properties: {
          to: { type: 'string' },
          stops: { type: 'array', items: { type: 'string' } },
          traveller: { type: 'object' },
          seat: { type: ['string', 'null'] },
        },
        required: ['to'],
      },
    }, async (args: { to: string, stops: string[], traveller: { name: string } }, ctx: McpContext) => {
      runs++
      const answer = await ctx.elicit(`Book ${args.traveller.name} a flight to ${args.to}?`, confirm)
      if (answer.action !== 'accept') return 'Nothing booked'
      return `Booked ${answer.content.cabin} to ${args.to} via ${args.stops.join(', ')}`
    })
  })
  const args = { to: 'Lisbon', stops: ['MAD', 'OPO'], traveller: { name: 'Ada', loyalty: { tier: 'gold', since: 2020 } }, seat: null }
  const first = await post(port, 'tools/call', { name: 'book_flight', arguments: args }, { id: 1 })
  t.equal(first.status, 200)
  t.match(first.headers['content-type'], /^application\/json/)
  t.equal(first.json.result.resultType, 'input_required')
  t.same(first.json.result.inputRequests['elicit-1'].params.message, 'Book Ada a flight to Lisbon?')

  const reordered = { seat: null, traveller: { loyalty: { since: 2020, tier: 'gold' }, name: 'Ada' }, stops: ['MAD', 'OPO'], to: 'Lisbon' }
  const retry = await post(port, 'tools/call', {
    name: 'book_flight',
    arguments: reordered,
    requestState: first.json.result.requestState,
    inputResponses: { 'elicit-1': { action: 'accept', content: { confirm: true, cabin: 'business' } } },
  }, { id: 2 })
  t.equal(retry.status, 200)
  t.same(retry.json, {
    jsonrpc: '2.0',
    id: 2,
    result: { resultType: 'complete', content: [{ type: 'text', text: 'Booked business to Lisbon via MAD, OPO' }], _meta: SERVER_INFO },
  })
  t.equal(runs, 2)

  const otherStops = await post(port, 'tools/call', {
    name: 'book_flight',
    arguments: { ...args, stops: ['OPO', 'MAD'] },
    requestState: first.json.result.requestState,
    inputResponses: { 'elicit-1': { action: 'accept', content: { confirm: true, cabin: 'business' } } },
  })
  t.same(otherStops.json.error, { code: -32602, message: 'Invalid or expired requestState', data: { reason: 'invalid_request_state' } })
  t.equal(runs, 2, 'a token for other arguments runs nothing')
})

t.test('a token is bound to its method', async (t) => {
  const city = requestedSchema().string('city')
  const runs = { tool: 0, prompt: 0 }
  const { port } = await listen(t, {}, (app) => {
    app.mcp.tool({ name: 'trip' }, async (_args, ctx: McpContext) => {
      runs.tool++
      const answer = await ctx.elicit('From where?', city)
      return answer.action
    })
    app.mcp.prompt({ name: 'trip' }, async (_args, ctx: McpContext) => {
      runs.prompt++
      const answer = await ctx.elicit('From where?', city)
      return answer.action
    })
  })
  const first = await post(port, 'tools/call', { name: 'trip' })
  const replayed = await post(port, 'prompts/get', {
    name: 'trip', requestState: first.json.result.requestState, inputResponses: { 'elicit-1': { action: 'accept', content: { city: 'Porto' } } },
  })
  t.equal(replayed.status, 200)
  t.same(replayed.json.error, { code: -32602, message: 'Invalid or expired requestState', data: { reason: 'invalid_request_state' } })
  t.same(runs, { tool: 1, prompt: 0 }, 'the prompt never ran')
})

t.test('an elicit made after the round ended is asked in the next round', async (t) => {
  const city = requestedSchema().string('city')
  const { port } = await listen(t, {}, (app) => {
    app.mcp.tool({ name: 'trip' }, async (_args, ctx: McpContext) => {
      const from = ctx.elicit('From where?', city, { key: 'from' })
      await new Promise((resolve) => setTimeout(resolve, 10))
      const to = await ctx.elicit('To where?', city, { key: 'to' })
      const origin = await from
      return origin.action === 'accept' && to.action === 'accept' ? `${origin.content.city} to ${to.content.city}` : 'no'
    })
  })
  const first = await post(port, 'tools/call', { name: 'trip' })
  t.same(Object.keys(first.json.result.inputRequests), ['from'])
  const second = await post(port, 'tools/call', {
    name: 'trip', requestState: first.json.result.requestState, inputResponses: { from: { action: 'accept', content: { city: 'Porto' } } },
  })
  t.same(Object.keys(second.json.result.inputRequests), ['to'])
  const third = await post(port, 'tools/call', {
    name: 'trip', requestState: second.json.result.requestState, inputResponses: { to: { action: 'accept', content: { city: 'Faro' } } },
  })
  t.equal(third.json.result.content[0].text, 'Porto to Faro')
})

t.test('a tool sees the caller\'s version and client, and logs through the request', async (t) => {
  const { lines, stream } = logLines()
  const app = Fastify({ logger: { level: 'info', stream } })
  await app.register(mocapi, { requestState: { keys: [KEY] } })
  app.mcp.tool({ name: 'whoami' }, (_args, ctx: McpContext) => {
    ctx.logger.info({ tool: 'whoami' }, 'whoami ran')
    return `${ctx.clientInfo?.name} ${ctx.clientInfo?.version} on ${ctx.protocolVersion}`
  })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const port = (app.server.address() as AddressInfo).port
  const reply = await post(port, 'tools/call', { name: 'whoami' })
  t.equal(reply.json.result.content[0].text, 'test-client 1.0.0 on 2026-07-28')
  const ran = lines.find((line) => line.msg === 'whoami ran')
  t.equal(ran?.tool, 'whoami')
  t.equal(ran?.reqId, lines.find((line) => line.msg === 'incoming request')?.reqId, 'on the request logger')
})

t.test('an app hook that throws is 500 internal error, logged, its message not leaked', async (t) => {
  const { lines, stream } = logLines()
  const app = Fastify({ logger: { level: 'error', stream } })
  app.addHook('onRequest', async () => { throw new Error('database password is hunter2') })
  await app.register(mocapi, { requestState: { keys: [KEY] } })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const reply = await post((app.server.address() as AddressInfo).port, 'server/discover')
  t.equal(reply.status, 500)
  t.same(reply.json, { jsonrpc: '2.0', id: null, error: { code: -32603, message: 'Internal error' } })
  t.notMatch(reply.body, 'hunter2')
  const logged = lines.find((line) => line.msg === 'mocapi internal error')
  t.equal(logged?.level, 50)
  t.equal(logged?.err.message, 'database password is hunter2')
})

t.test('a 4xx from an app hook keeps its status and headers', async (t) => {
  const { port } = await listen(t, {}, (app) => {
    app.addHook('onRequest', async (request, reply) => {
      if (request.headers.authorization === 'Bearer good') return
      reply.header('www-authenticate', 'Bearer realm="mcp"')
      throw Object.assign(new Error('A bearer token is required'), { statusCode: 401 })
    })
  })
  const refused = await post(port, 'server/discover', {}, { id: 3 })
  t.equal(refused.status, 401)
  t.equal(refused.headers['www-authenticate'], 'Bearer realm="mcp"')
  t.same(refused.json, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'A bearer token is required' } })
  t.equal((await post(port, 'server/discover', {}, { headers: { authorization: 'Bearer good' } })).status, 200)
})

t.test('an mcp error a tool throws is sent as is, and a 5xx one is logged with its cause', async (t) => {
  const { lines, stream } = logLines()
  const app = Fastify({ logger: { level: 'error', stream } })
  await app.register(mocapi, { requestState: { keys: [KEY] } })
  const cause = new Error('connection refused')
  app.mcp.tool({ name: 'book' }, () => {
    throw new McpError(ErrorCode.InternalError, 'The booking backend is unavailable', { statusCode: 503, cause, data: { retryAfter: 30 } })
  })
  app.mcp.tool({ name: 'picky' }, () => { throw new McpError(ErrorCode.InvalidParams, 'Pick a date first') })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const port = (app.server.address() as AddressInfo).port
  const reply = await post(port, 'tools/call', { name: 'book' }, { id: 8 })
  t.equal(reply.status, 503)
  t.same(reply.json, { jsonrpc: '2.0', id: 8, error: { code: -32603, message: 'The booking backend is unavailable', data: { retryAfter: 30 } } })
  t.notMatch(reply.body, 'connection refused')
  const logged = lines.find((line) => line.msg === 'mocapi internal error')
  t.match(logged?.err.message, 'connection refused', 'the cause is logged')
  const picky = await post(port, 'tools/call', { name: 'picky' }, { id: 9 })
  t.equal(picky.status, 200)
  t.same(picky.json, { jsonrpc: '2.0', id: 9, error: { code: -32602, message: 'Pick a date first' } })
  t.equal(lines.filter((line) => line.msg === 'mocapi internal error').length, 1, 'a 4xx error is not logged as internal')
})
