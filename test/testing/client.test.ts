import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { requestedSchema } from '../../lib/index.js'
import {
  McpClientError, accept, answers, byKind, cancel, createTestClient, decline, roots, sampled, textOf,
  type InputRequestView, type Notification,
} from '../../lib/testing/index.js'
import { headerValue } from '../../lib/testing/client.js'
import { KEY, build } from '../helpers.js'

type Test = Parameters<typeof build>[0]

const trip = requestedSchema()
  .boolean('confirm', { title: 'Confirm' })
  .choose('cabin', [{ value: 'economy', title: 'Economy' }, { value: 'business', title: 'Business' }], { default: 'economy' })
const seat = requestedSchema().choose('seat', ['window', 'aisle'])

/** A travel server whose tools, prompt and resource elicit. */
async function travel (t: Test, options = {}) {
  return build(t, options, (app) => {
    app.mcp.tool({ name: 'book', inputSchema: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] } }, async (args: { to: string }, ctx) => {
      const answer = await ctx.elicit(`Book a flight to ${args.to}?`, trip)
      if (answer.action !== 'accept') return `Nothing booked (${answer.action})`
      return `Booked ${answer.content.cabin} to ${args.to}`
    })
    app.mcp.tool({ name: 'book_twice' }, async (_args, ctx) => {
      const first = await ctx.elicit('Which cabin?', trip)
      const second = await ctx.elicit('Which seat?', seat, { key: 'seat' })
      return [first, second].map((a) => a.action === 'accept' ? Object.values(a.content).join('/') : a.action).join(' + ')
    })
    app.mcp.tool({ name: 'both' }, async (_args, ctx) => {
      const [a, b] = await Promise.all([
        ctx.elicit('Your name?', requestedSchema().string('name'), { key: 'name' }),
        ctx.elicit('Sign in', requestedSchema().string('unused'), { key: 'never' }).then(() => ctx.elicitUrl('Open this', 'https://example.com/login', { key: 'login' })),
      ])
      return `${a.action === 'accept' ? a.content.name : a.action} ${b.action}`
    })
    app.mcp.tool({ name: 'assistant' }, async (_args, ctx) => {
      const reply = await ctx.sample({ messages: [{ role: 'user', content: { type: 'text', text: 'Capital of France?' } }], maxTokens: 10 }, { key: 'capital' })
      const list = await ctx.listRoots({ key: 'roots' })
      return `${(reply.content as { text: string }).text} in ${list.map((r) => r.uri).join(',')}`
    })
    app.mcp.tool({ name: 'progress' }, async (_args, ctx) => {
      ctx.progress(1, 2, 'half')
      const answer = await ctx.elicit('Go on?', requestedSchema().boolean('go'))
      ctx.progress(2, 2)
      return answer.action
    })
    app.mcp.tool({ name: 'forever' }, async (_args, ctx) => {
      for (let i = 0; ; i++) await ctx.elicit(`Question ${i}`, requestedSchema().integer('n'))
    })
    app.mcp.tool({ name: 'failing' }, async () => ({ content: [{ type: 'text', text: 'it broke' }], isError: true }))
    app.mcp.prompt({ name: 'plan', arguments: [{ name: 'city', required: true }] }, async (args, ctx) => {
      const answer = await ctx.elicit('Any context?', requestedSchema().string('context'))
      return `Plan a trip to ${args.city}: ${answer.action === 'accept' ? answer.content.context : 'none'}`
    })
    app.mcp.prompt({ name: 'hello' }, () => 'Hello')
    app.mcp.resource({ uri: 'file:///secret.txt', name: 'secret', mimeType: 'text/plain' }, async (_uri, ctx) => {
      const answer = await ctx.elicit('Show the secret?', requestedSchema().boolean('show'))
      return answer.action === 'accept' && answer.content.show ? 'the secret' : 'hidden'
    })
    app.mcp.resource({ uri: 'file:///plain.txt', name: 'plain' }, () => 'plain')
  })
}

/** The same server reached both ways: through inject, and over HTTP on a free port. */
async function targets (t: Test, options = {}): Promise<Array<[string, FastifyInstance | string]>> {
  const app = await travel(t, options)
  const listening = await travel(t, options)
  await listening.listen({ host: '127.0.0.1', port: 0 })
  return [['inject', app], ['url', `http://127.0.0.1:${(listening.server.address() as AddressInfo).port}/mcp`]]
}

t.test('a tool that elicits once, answered by a function, through inject and over HTTP', async (t) => {
  for (const [how, target] of await targets(t)) {
    const client = createTestClient(target)
    const seen: InputRequestView[] = []
    const { result, rounds, roundTrips, notifications } = await client.callTool('book', { to: 'Lisbon' }, (request) => {
      seen.push(request)
      return accept({ confirm: true, cabin: 'business' })
    })
    t.same(result.content, [{ type: 'text', text: 'Booked business to Lisbon' }], how)
    t.equal(result.resultType, 'complete')
    t.equal(roundTrips, 2)
    t.same(notifications, [])
    t.equal(seen.length, 1)
    t.match(seen[0], { kind: 'elicit', key: 'elicit-1', message: 'Book a flight to Lisbon?', schema: trip.schema })
    t.same(rounds, [{
      inputRequests: { 'elicit-1': seen[0].request },
      inputResponses: { 'elicit-1': { action: 'accept', content: { confirm: true, cabin: 'business' } } },
    }])
  }
})

t.test('a call that needs no input takes one round trip', async (t) => {
  for (const [how, target] of await targets(t)) {
    const client = createTestClient(target)
    const { result, rounds, roundTrips } = await client.callTool('failing')
    t.same(result, { resultType: 'complete', content: [{ type: 'text', text: 'it broke' }], isError: true, _meta: result._meta }, how)
    t.same(rounds, [])
    t.equal(roundTrips, 1)
  }
})

t.test('two rounds answered by key, the second key stable; onRound sees each round first', async (t) => {
  const seen: Array<[number, string[]]> = []
  const client = createTestClient(await travel(t), { onRound: (round, inputRequests) => seen.push([round, Object.keys(inputRequests)]) })
  const { result, rounds } = await client.callTool('book_twice', undefined, {
    'elicit-1': accept({ confirm: true, cabin: 'economy' }),
    seat: (request) => request.kind === 'elicit' && 'enum' in request.schema.properties.seat ? accept({ seat: 'aisle' }) : decline(),
  })
  t.same(result.content, [{ type: 'text', text: 'true/economy + aisle' }])
  t.same(rounds.map((round) => Object.keys(round.inputRequests)), [['elicit-1'], ['seat']])
  t.same(seen, [[1, ['elicit-1']], [2, ['seat']]])
})

t.test('a key without an answer fails the call, naming the request', async (t) => {
  const client = createTestClient(await travel(t))
  await t.rejects(client.callTool('book_twice', {}, { 'elicit-1': accept({ confirm: true, cabin: 'economy' }) }),
    { message: 'no answer for input request "seat" (elicit: "Which seat?")' })
  await t.rejects(client.callTool('book', { to: 'Oslo' }),
    { message: 'no answers were given, and the server asks input request "elicit-1" (elicit: "Book a flight to Oslo?")' })
})

t.test('a queue answers in the order asked, concurrent requests included', async (t) => {
  for (const [how, target] of await targets(t)) {
    const client = createTestClient(target)
    const seen: string[] = []
    const { result, rounds } = await client.callTool('both', {}, [
      accept({ name: 'Ada' }),
      (request) => { seen.push(request.kind); return accept({ unused: 'x' }) },
      (request) => { seen.push(request.kind === 'elicitUrl' ? request.url : request.kind); return accept() },
    ])
    t.same(result.content, [{ type: 'text', text: 'Ada accept' }], how)
    t.same(rounds.map((round) => Object.keys(round.inputRequests)), [['name', 'never'], ['login']])
    t.same(seen, ['elicit', 'https://example.com/login'])
  }
})

t.test('a shared queue spreads over calls and says when it runs dry', async (t) => {
  const client = createTestClient(await travel(t))
  const queue = answers([accept({ confirm: true, cabin: 'economy' }), decline()])
  t.same((await client.callTool('book', { to: 'Rome' }, queue)).result.content, [{ type: 'text', text: 'Booked economy to Rome' }])
  t.same((await client.callTool('book', { to: 'Rome' }, queue)).result.content, [{ type: 'text', text: 'Nothing booked (decline)' }])
  await t.rejects(client.callTool('book', { to: 'Rome' }, queue),
    { message: 'the answer queue is empty; nothing left to answer input request "elicit-1" (elicit: "Book a flight to Rome?")' })
})

t.test('decline and cancel reach the handler as values', async (t) => {
  const client = createTestClient(await travel(t))
  t.same((await client.callTool('book', { to: 'Paris' }, () => decline())).result.content, [{ type: 'text', text: 'Nothing booked (decline)' }])
  t.same((await client.callTool('book', { to: 'Paris' }, () => cancel())).result.content, [{ type: 'text', text: 'Nothing booked (cancel)' }])
})

t.test('sampling and roots, answered by kind', async (t) => {
  for (const [how, target] of await targets(t)) {
    const client = createTestClient(target)
    const { result, rounds } = await client.callTool('assistant', {}, byKind({
      sample: (request) => sampled(request.params.messages.length === 1 ? 'Paris' : '?'),
      roots: () => roots('file:///home/ada', { uri: 'file:///tmp', name: 'tmp' }),
    }))
    t.same(result.content, [{ type: 'text', text: 'Paris in file:///home/ada,file:///tmp' }], how)
    t.same(rounds[0].inputResponses, { capital: { role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'mocapi-test-model', stopReason: 'endTurn' } })
    t.same(rounds[1].inputResponses, { roots: { roots: [{ uri: 'file:///home/ada' }, { uri: 'file:///tmp', name: 'tmp' }] } })
  }
  const client = createTestClient(await travel(t))
  await t.rejects(client.callTool('assistant', {}, byKind({ elicit: () => decline() })),
    { message: 'no sample handler for input request "capital" (sample)' })
  t.same(sampled('x', 'gpt').model, 'gpt')
})

t.test('undeclared capabilities come back as the -32021 error', async (t) => {
  const client = createTestClient(await travel(t), { capabilities: { elicitation: {} } })
  const error = await t.rejects(client.callTool('assistant', {}, () => sampled('Paris')), McpClientError) as unknown as McpClientError
  t.equal(error.code, -32021)
  t.equal(error.status, 400)
  t.same(error.data, { requiredCapabilities: { sampling: {} } })
  t.equal(error.message, 'Server requires the sampling client capability for this request')
})

t.test('a prompt and a resource that elicit', async (t) => {
  for (const [how, target] of await targets(t)) {
    const client = createTestClient(target)
    const prompt = await client.getPrompt('plan', { city: 'Kyoto' }, () => accept({ context: 'in spring' }))
    t.same(prompt.result.messages, [{ role: 'user', content: { type: 'text', text: 'Plan a trip to Kyoto: in spring' } }], how)
    t.equal(prompt.rounds.length, 1)
    const hello = await client.getPrompt('hello')
    t.same(hello.result.messages, [{ role: 'user', content: { type: 'text', text: 'Hello' } }])
    const secret = await client.readResource('file:///secret.txt', () => accept({ show: true }))
    t.same(secret.result.contents, [{ uri: 'file:///secret.txt', mimeType: 'text/plain', text: 'the secret' }])
    t.type(secret.result.ttlMs, 'number')
    const plain = await client.readResource('file:///plain.txt')
    t.same(plain.result.contents, [{ uri: 'file:///plain.txt', text: 'plain' }])
  }
})

t.test('a JSON-RPC error rejects with its code, data, status and the rounds before it', async (t) => {
  const client = createTestClient(await travel(t))
  const unknown = await t.rejects(client.callTool('nope'), McpClientError) as unknown as McpClientError
  t.match(unknown, { code: -32602, status: 200, message: 'Unknown tool: nope', rounds: [] })
  const invalid = await t.rejects(client.callTool('book', { to: 'Bern' }, () => accept({ confirm: 'yes' as unknown as boolean, cabin: 'economy' })), McpClientError) as unknown as McpClientError
  t.equal(invalid.code, -32602)
  t.equal(invalid.rounds.length, 1)
  t.match(invalid.message, /content\.confirm must be boolean/)
  const missing = await t.rejects(client.readResource('file:///none'), McpClientError) as unknown as McpClientError
  t.same(missing.data, { uri: 'file:///none' })
})

t.test('maxRounds bounds the rounds of one call', async (t) => {
  const client = createTestClient(await travel(t), { maxRounds: 3 })
  let asked = 0
  await t.rejects(client.callTool('forever', {}, () => { asked++; return accept({ n: asked }) }),
    { message: 'tools/call "forever" still needs input after 3 rounds (maxRounds)' })
  t.equal(asked, 3)
  const resource = createTestClient(await travel(t), { maxRounds: 0 })
  await t.rejects(resource.readResource('file:///secret.txt', () => accept({ show: true })),
    { message: 'resources/read "file:///secret.txt" still needs input after 0 rounds (maxRounds)' })
})

t.test('the default maxRounds is 10', async (t) => {
  const client = createTestClient(await travel(t, { requestState: { keys: [KEY], maxRounds: 50 } }))
  let asked = 0
  await t.rejects(client.callTool('forever', {}, () => accept({ n: ++asked })), { message: /after 10 rounds/ })
  t.equal(asked, 10)
})

t.test('notifications of a streamed reply are collected and passed on as they come', async (t) => {
  for (const [how, target] of await targets(t)) {
    const live: Notification[] = []
    const client = createTestClient(target, { onNotification: (n) => live.push(n) })
    const { result, notifications } = await client.callTool('progress', {}, () => accept({ go: true }), { meta: { progressToken: 'p' } })
    t.same(result.content, [{ type: 'text', text: 'accept' }], how)
    t.same(notifications.map((n) => [n.method, n.params?.progress]), [
      ['notifications/progress', 1], ['notifications/progress', 1], ['notifications/progress', 2],
    ])
    t.same(live, notifications)
  }
  const quiet = createTestClient(await travel(t))
  const { notifications } = await quiet.callTool('progress', {}, () => accept({ go: false }), { meta: { progressToken: 7 } })
  t.equal(notifications.length, 3)
})

t.test('listTools follows the pages; request makes one round trip', async (t) => {
  const client = createTestClient(await travel(t, { pageSize: 3 }))
  const tools = await client.listTools()
  t.same(tools.map((tool) => tool.name), ['book', 'book_twice', 'both', 'assistant', 'progress', 'forever', 'failing'])
  const discover = await client.request('server/discover')
  t.same(discover.supportedVersions, ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'])
  const raw = await client.request('tools/call', { name: 'book', arguments: { to: 'Nice' } })
  t.equal(raw.resultType, 'input_required')
  t.type(raw.requestState, 'string')
})

t.test('options: protocol version, client info, token and headers reach the server', async (t) => {
  const seen: Array<{ headers: Record<string, unknown>, meta: unknown }> = []
  const app = await build(t, {}, (app) => {
    app.addHook('preHandler', async (request) => {
      seen.push({ headers: request.headers, meta: (request.body as { params: { _meta: unknown } }).params._meta })
    })
    app.mcp.tool({ name: 'café' }, () => 'ok')
  })
  const client = createTestClient(app, {
    clientInfo: { name: 'suite', version: '2.0.0' },
    capabilities: {},
    token: 'T0K',
    headers: { 'x-tenant': 'acme' },
  })
  t.same((await client.callTool('café', {}, undefined, { headers: { 'x-call': '1' }, meta: { 'io.modelcontextprotocol/logLevel': 'info' } })).result.content,
    [{ type: 'text', text: 'ok' }])
  t.match(seen[0].headers, {
    authorization: 'Bearer T0K',
    'x-tenant': 'acme',
    'x-call': '1',
    'mcp-name': `=?base64?${Buffer.from('café').toString('base64')}?=`,
    'mcp-method': 'tools/call',
  })
  t.same(seen[0].meta, {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': {},
    'io.modelcontextprotocol/clientInfo': { name: 'suite', version: '2.0.0' },
    'io.modelcontextprotocol/logLevel': 'info',
  })
  const unknown = createTestClient(app, { protocolVersion: '1900-01-01' })
  await t.rejects(unknown.request('tools/list'), { code: -32022, status: 400, data: { requested: '1900-01-01' } })
})

t.test('headers the user sets win, whatever their case, host included, through inject and over HTTP', async (t) => {
  const seen: Array<Record<string, unknown>> = []
  const server = () => build(t, { allowedHosts: ['mcp.example.com'] }, (app) => {
    app.addHook('onRequest', async (request) => { seen.push(request.headers) })
    app.mcp.tool({ name: 'where' }, (_args, ctx) => ctx.request.host)
  })
  const listening = await server()
  await listening.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(listening.server.address() as AddressInfo).port}/mcp`
  for (const [how, target] of [['inject', await server()], ['url', url]] as const) {
    seen.length = 0
    const client = createTestClient(target, { token: 'T0K', headers: { Host: 'mcp.example.com', Authorization: 'Basic YTpi', 'X-Tenant': 'acme' } })
    const { result } = await client.callTool('where', {}, undefined, { headers: { 'x-tenant': 'beta' } })
    t.same(result.content, [{ type: 'text', text: 'mcp.example.com' }], how)
    t.match(seen[0], { host: 'mcp.example.com', authorization: 'Basic YTpi', 'x-tenant': 'beta' })
  }
  // So a test of the Host check over a real socket can play a DNS-rebinding page.
  await t.rejects(createTestClient(url, { headers: { host: 'evil.example' } }).callTool('where'),
    { status: 403, message: /^Host not allowed: "evil.example"/ })
})

t.test('an https URL is reached over TLS', async (t) => {
  const app = await build(t)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const client = createTestClient(`https://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`)
  await t.rejects(client.request('server/discover'), { code: 'EPROTO' }, 'a plain HTTP server cannot answer a TLS handshake')
})

/** A node of a small fleet, recording in `served` each request it serves; nodes share the requestState key unless given another. */
async function node (t: Test, name: string, served: string[], key = KEY) {
  return build(t, { requestState: { keys: [key] } }, (app) => {
    app.addHook('onRequest', async () => { served.push(name) })
    app.mcp.tool({ name: 'book' }, async (_args, ctx) => {
      const answer = await ctx.elicit('Which cabin?', trip)
      return `${answer.action === 'accept' ? answer.content.cabin : answer.action}, finished on ${name}`
    })
    app.mcp.tool({ name: 'book_twice' }, async (_args, ctx) => {
      const first = await ctx.elicit('Which cabin?', trip)
      const second = await ctx.elicit('Which seat?', seat)
      const answers = [first, second].map((a) => a.action === 'accept' ? Object.values(a.content).join('/') : a.action)
      return `${answers.join(' + ')}, finished on ${name}`
    })
  })
}

t.test('two apps sharing a key take the rounds of one call in turn', async (t) => {
  const served: string[] = []
  const client = createTestClient([await node(t, 'a', served), await node(t, 'b', served)])
  const { result, rounds } = await client.callTool('book', {}, [accept({ confirm: true, cabin: 'business' })])
  t.same(served, ['a', 'b'], 'round 1 asked by a, round 2 served by b')
  t.equal(rounds.length, 1)
  t.same(result.content, [{ type: 'text', text: 'business, finished on b' }], 'b read the answer a asked for from the token')
  const again = await client.callTool('book', {}, [decline()])
  t.same(served, ['a', 'b', 'a', 'b'], 'the turn goes on across calls')
  t.same(again.result.content, [{ type: 'text', text: 'decline, finished on b' }])
})

t.test('URLs, and a mix of apps and URLs, in turn', async (t) => {
  const served: string[] = []
  const urls: string[] = []
  for (const name of ['a', 'b', 'c']) {
    const app = await node(t, name, served)
    await app.listen({ host: '127.0.0.1', port: 0 })
    urls.push(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`)
  }
  const answers = [accept({ confirm: true, cabin: 'economy' }), accept({ seat: 'window' })]
  const fleet = await createTestClient(urls).callTool('book_twice', {}, answers)
  t.same(served, ['a', 'b', 'c'])
  t.same(fleet.result.content, [{ type: 'text', text: 'true/economy + window, finished on c' }])
  served.length = 0
  const mixed = await createTestClient([await node(t, 'inject', served), new URL(urls[1])]).callTool('book_twice', {}, answers)
  t.same(served, ['inject', 'b', 'inject'])
  t.same(mixed.result.content, [{ type: 'text', text: 'true/economy + window, finished on inject' }])
})

t.test('apps with different keys refuse each other\'s requestState', async (t) => {
  const served: string[] = []
  const client = createTestClient([await node(t, 'a', served), await node(t, 'b', served, randomBytes(32).toString('base64'))])
  await t.rejects(client.callTool('book', {}, [accept({ confirm: true, cabin: 'economy' })]), { code: -32602, rounds: [{}] })
  t.same(served, ['a', 'b'])
})

t.test('a list of targets needs at least one, and only apps and URLs', async (t) => {
  t.throws(() => createTestClient([]), new TypeError('createTestClient needs at least one Fastify app or URL'))
  t.throws(() => createTestClient([3000 as unknown as string]), new TypeError('createTestClient takes Fastify apps and URLs, got 3000'))
  t.throws(() => createTestClient(null as unknown as string), { name: 'TypeError', message: 'createTestClient takes Fastify apps and URLs, got null' })
})

t.test('a mocapi app mounted elsewhere is reached with the path option', async (t) => {
  const app = await build(t, { path: '/api/mcp' }, (app) => { app.mcp.tool({ name: 'ping' }, () => 'pong') })
  t.same((await createTestClient(app, { path: '/api/mcp' }).callTool('ping')).result.content, [{ type: 'text', text: 'pong' }])
  await t.rejects(createTestClient(app).callTool('ping'), { code: undefined, status: 404, message: 'HTTP 404: Route POST:/mcp not found' })
})

t.test('an Mcp-Name that would not survive as it is goes base64-encoded', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: '=?base64?SGk=?=' }, () => 'sentinel-shaped').tool({ name: '=?base64?SGk=' }, () => 'prefix only')
  })
  const { port } = await app.listen({ host: '127.0.0.1', port: 0 }).then(() => app.server.address() as AddressInfo)
  for (const client of [createTestClient(app), createTestClient(`http://127.0.0.1:${port}/mcp`)]) {
    t.same((await client.callTool('=?base64?SGk=?=')).result.content, [{ type: 'text', text: 'sentinel-shaped' }])
    t.same((await client.callTool('=?base64?SGk=')).result.content, [{ type: 'text', text: 'prefix only' }])
  }
  t.equal(headerValue('a b\tc'), 'a b\tc')
  t.equal(headerValue(''), '')
  for (const name of [' lead', 'trail ', '\ttab', 'café', 'line\nbreak', '=?base64?SGk=?=']) {
    t.equal(headerValue(name), `=?base64?${Buffer.from(name).toString('base64')}?=`, JSON.stringify(name))
  }
})

t.test('an idempotency key: the same call again gets the first\'s reply, in either era', async (t) => {
  let runs = 0
  const app = await build(t, {}, (app) => { app.mcp.tool({ name: 'ticket' }, () => `ticket #${++runs}`) })
  for (const protocolVersion of ['2026-07-28', '2025-11-25'] as const) {
    const client = createTestClient(app, { protocolVersion })
    const first = await client.callTool('ticket', {}, undefined, { idempotencyKey: `t-${protocolVersion}` })
    const again = await client.callTool('ticket', {}, undefined, { idempotencyKey: `t-${protocolVersion}` })
    t.same(textOf(again.result), textOf(first.result), protocolVersion)
  }
  t.equal(runs, 2, 'once per era\'s key')
})
