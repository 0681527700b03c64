import t from 'tap'
import type { FastifyInstance } from 'fastify'
import type { AddressInfo } from 'node:net'
import { InProcessBus, requestedSchema } from '../../lib/index.js'
import {
  McpClientError, accept, answers, byKind, cancel, createTestClient, decline, roots, sampled, textOf,
  type InputRequestView, type Notification,
} from '../../lib/testing/index.js'
import { build, capturedLogs } from '../helpers.js'

type Test = Parameters<typeof build>[0]

const trip = requestedSchema().string('city', { title: 'City' })
const nights = requestedSchema().integer('nights', { minimum: 1 })

/** What the server saw: each POST's JSON-RPC method (or `answer`), with its session and version headers. */
interface Seen { what: string, session: string | undefined, version: string | undefined }

/** A travel desk whose tools ask in sequence, at once, and not at all. */
async function desk (t: Test, options = {}, seen: Seen[] = []) {
  return build(t, options, (app) => {
    app.addHook('preHandler', async (request) => {
      const body = request.body as { method?: string }
      seen.push({ what: body.method ?? 'answer', session: request.headers['mcp-session-id'] as string | undefined, version: request.headers['mcp-protocol-version'] as string | undefined })
    })
    app.mcp.tool({ name: 'plan', inputSchema: { type: 'object', properties: { hotel: { type: 'boolean' } } } }, async (args: { hotel?: boolean }, ctx) => {
      const where = await ctx.elicit('Where to?', trip)
      if (where.action !== 'accept') return `No trip (${where.action})`
      if (args.hotel !== true) return `Off to ${where.content.city}`
      const stay = await ctx.elicit(`How many nights in ${where.content.city}?`, nights, { key: 'nights' })
      return stay.action === 'accept' ? `${stay.content.nights} nights in ${where.content.city}` : `No hotel (${stay.action})`
    })
    app.mcp.tool({ name: 'assistant' }, async (_args, ctx) => {
      const [reply, list] = await Promise.all([
        ctx.sample({ messages: [{ role: 'user', content: { type: 'text', text: 'Capital of France?' } }], maxTokens: 10 }),
        ctx.listRoots(),
      ])
      return `${(reply.content as { text: string }).text} in ${list.map((root) => root.uri).join(',')}`
    })
    app.mcp.tool({ name: 'signin' }, async (_args, ctx) => (await ctx.elicitUrl('Sign in', 'https://example.com/login')).action)
    app.mcp.tool({ name: 'progress' }, async (_args, ctx) => {
      ctx.progress(1, 2)
      const go = await ctx.elicit('Go on?', requestedSchema().boolean('go'))
      ctx.progress(2, 2)
      return go.action
    })
    app.mcp.tool({ name: 'forever' }, async (_args, ctx) => {
      for (let i = 0; ; i++) await ctx.elicit(`Question ${i}`, requestedSchema().integer('n'))
    })
    app.mcp.tool({ name: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } }, (args) => args.text)
    app.mcp.prompt({ name: 'brief', arguments: [{ name: 'city', required: true }] }, async (args, ctx) => {
      const answer = await ctx.elicit('Any context?', requestedSchema().string('context'))
      return `Brief for ${args.city}: ${answer.action === 'accept' ? answer.content.context : 'none'}`
    })
    app.mcp.resource({ uri: 'file:///secret.txt', name: 'secret' }, async (_uri, ctx) => {
      const answer = await ctx.elicit('Show it?', requestedSchema().boolean('show'))
      return answer.action === 'accept' && answer.content.show ? 'the secret' : 'hidden'
    })
  })
}

/** The same desk through inject, and over HTTP on a free port. */
async function targets (t: Test, options = {}): Promise<Array<[string, FastifyInstance | string, Seen[]]>> {
  const injected: Seen[] = []
  const listened: Seen[] = []
  const app = await desk(t, options, injected)
  const listening = await desk(t, options, listened)
  await listening.listen({ host: '127.0.0.1', port: 0 })
  return [['inject', app, injected], ['url', `http://127.0.0.1:${(listening.server.address() as AddressInfo).port}/mcp`, listened]]
}

t.test('a 2025-era client opens a session, then elicits over its call\'s stream, through inject and over HTTP', async (t) => {
  for (const [how, target, seen] of await targets(t)) {
    const client = createTestClient(target, { protocolVersion: '2025-11-25' })
    const views: InputRequestView[] = []
    const { result, rounds, roundTrips, notifications } = await client.callTool('plan', {}, (request) => {
      views.push(request)
      return accept({ city: 'Lisbon' })
    })
    t.same(result, { content: [{ type: 'text', text: 'Off to Lisbon' }] }, `${how}: the result as the 2025 revisions shape it`)
    t.notOk('resultType' in result)
    t.match(views, [{ kind: 'elicit', key: 'elicit-1', message: 'Where to?', schema: trip.schema }])
    t.same(rounds, [{ inputRequests: { 'elicit-1': views[0].request }, inputResponses: { 'elicit-1': { action: 'accept', content: { city: 'Lisbon' } } } }])
    t.same(views[0].request, { method: 'elicitation/create', params: { mode: 'form', message: 'Where to?', requestedSchema: trip.schema } })
    t.equal(roundTrips, 2, 'the call, and one answer')
    t.same(notifications, [])
    t.same(seen.map((one) => one.what), ['initialize', 'notifications/initialized', 'tools/call', 'answer'])
    const session = seen[1].session as string
    t.ok(session.length > 100, 'the session id the server sealed')
    t.notOk(seen[0].session)
    t.notOk(seen[0].version, 'initialize names its version in its params only')
    t.same(seen.slice(1).map((one) => [one.session, one.version]), Array(3).fill([session, '2025-11-25']))
    await client.listTools()
    t.equal(seen.filter((one) => one.what === 'initialize').length, 1, 'one session for the client\'s lifetime')
  }
})

t.test('two rounds answered by key, the default keys counting the call\'s requests', async (t) => {
  const rounds: Array<[number, string[]]> = []
  const client = createTestClient(await desk(t), { protocolVersion: '2025-11-25', onRound: (round, inputRequests) => rounds.push([round, Object.keys(inputRequests)]) })
  const outcome = await client.callTool('plan', { hotel: true }, { 'elicit-1': accept({ city: 'Oslo' }), 'elicit-2': accept({ nights: 3 }) })
  t.equal(textOf(outcome.result), '3 nights in Oslo')
  t.same(outcome.rounds.map((round) => Object.keys(round.inputRequests)), [['elicit-1'], ['elicit-2']], 'a handler\'s own key does not reach a 2025-era client')
  t.same(rounds, [[1, ['elicit-1']], [2, ['elicit-2']]])
  t.equal(outcome.roundTrips, 3)
  await t.rejects(client.callTool('plan', { hotel: true }, { 'elicit-1': accept({ city: 'Oslo' }), nights: accept({ nights: 3 }) }),
    { message: 'no answer for input request "elicit-2" (elicit: "How many nights in Oslo?")' })
})

t.test('decline and cancel, from a queue', async (t) => {
  const client = createTestClient(await desk(t), { protocolVersion: '2025-11-25' })
  const queue = answers([decline(), accept({ city: 'Rome' }), cancel()])
  t.equal(textOf((await client.callTool('plan', {}, queue)).result), 'No trip (decline)')
  t.equal(textOf((await client.callTool('plan', { hotel: true }, queue)).result), 'No hotel (cancel)')
})

t.test('sampling and roots asked at once make one round, answered by kind', async (t) => {
  for (const [how, target] of await targets(t)) {
    const client = createTestClient(target, { protocolVersion: '2025-06-18' })
    const { result, rounds, roundTrips } = await client.callTool('assistant', {}, byKind({
      sample: (request) => sampled(request.params.maxTokens === 10 ? 'Paris' : '?'),
      roots: () => roots('file:///home/ada'),
    }))
    t.equal(textOf(result), 'Paris in file:///home/ada', how)
    t.same(rounds.map((round) => Object.keys(round.inputRequests)), [['sample-1', 'roots-2']])
    t.same(rounds[0].inputResponses['roots-2'], { roots: [{ uri: 'file:///home/ada' }] })
    t.equal(roundTrips, 3)
  }
})

t.test('each 2025 revision: the session speaks the version asked, and elicitations have its shape', async (t) => {
  for (const protocolVersion of ['2025-11-25', '2025-06-18', '2025-03-26'] as const) {
    const seen: Seen[] = []
    const client = createTestClient(await desk(t, {}, seen), { protocolVersion })
    const { rounds } = await client.callTool('plan', {}, () => accept({ city: 'Rome' }))
    t.equal(seen[2].version, protocolVersion)
    t.equal('mode' in rounds[0].inputRequests['elicit-1'].params, protocolVersion === '2025-11-25', `${protocolVersion}: form mode named from 2025-11-25`)
  }
  const client = createTestClient(await desk(t), { protocolVersion: '2025-11-25' })
  const { rounds, result } = await client.callTool('signin', {}, (request) => request.kind === 'elicitUrl' ? accept() : decline())
  t.equal(textOf(result), 'accept')
  t.match(rounds[0].inputRequests['elicit-1'].params, { mode: 'url', url: 'https://example.com/login', elicitationId: /^[\w-]+\.[\w-]+\.0$/ })
})

t.test('progress reported before a question: each replay of the handler reports again, the client hears it once', async (t) => {
  const heard: Notification[] = []
  const app = await desk(t)
  let header: unknown
  app.addHook('onRequest', async (request) => { header ??= request.headers['x-trace'] })
  const client = createTestClient(app, { protocolVersion: '2025-11-25', onNotification: (notification) => heard.push(notification) })
  const { result, notifications } = await client.callTool('progress', {}, () => accept({ go: true }), { meta: { progressToken: 'p1' }, headers: { 'X-Trace': 't1' } })
  t.equal(textOf(result), 'accept')
  t.same(notifications.map((n) => n.params?.progress), [1, 2], 'progress only ever increases on the stream')
  t.same(heard, notifications)
  t.equal(header, 't1')
})

t.test('a prompt and a resource that elicit', async (t) => {
  const client = createTestClient(await desk(t), { protocolVersion: '2025-11-25' })
  const prompt = await client.getPrompt('brief', { city: 'Kyoto' }, () => accept({ context: 'in spring' }))
  t.same(prompt.result.messages, [{ role: 'user', content: { type: 'text', text: 'Brief for Kyoto: in spring' } }])
  const secret = await client.readResource('file:///secret.txt', () => accept({ show: true }))
  t.same(secret.result.contents, [{ uri: 'file:///secret.txt', text: 'the secret' }])
  t.notOk('ttlMs' in secret.result)
})

t.test('a request of the session, and one the server answers with questions', async (t) => {
  const client = createTestClient(await desk(t), { protocolVersion: '2025-11-25' })
  t.same(await client.request('ping'), {})
  t.same((await client.request('tools/call', { name: 'echo', arguments: { text: 'hi' } })).content, [{ type: 'text', text: 'hi' }])
  await t.rejects(client.request('tools/call', { name: 'plan' }),
    { message: 'no answers were given, and the server asks input request "elicit-1" (elicit: "Where to?")' })
})

t.test('an answer that fails gives up on the call: its reply is closed, through inject and over HTTP', async (t) => {
  for (const [how, target] of await targets(t)) {
    const client = createTestClient(target, { protocolVersion: '2025-11-25' })
    await t.rejects(client.callTool('plan', {}, () => { throw new Error('no such answer') }), { message: 'no such answer' }, how)
    await t.rejects(client.callTool('plan', {}, async () => { throw new Error('no answer later') }), { message: 'no answer later' }, how)
  }
  const logs = capturedLogs()
  const app = await build(t, { session: { answerTimeout: 60_000 } }, (app) => {
    app.mcp.tool({ name: 'ask' }, async (_args, ctx) => (await ctx.elicit('Name?', requestedSchema().string('name'))).action)
  }, logs.options)
  const client = createTestClient(app, { protocolVersion: '2025-11-25' })
  await t.rejects(client.callTool('ask', {}, []), { message: /the answer queue is empty/ })
  const ended = () => logs.lines.some((line) => line.mcp?.method === 'tools/call')
  for (let i = 0; i < 100 && !ended(); i++) await new Promise((resolve) => setTimeout(resolve, 10))
  t.ok(ended(), 'the call stopped waiting for its answer long before session.answerTimeout')
})

t.test('a call asking past maxRounds fails, and the rounds before it are kept', async (t) => {
  const client = createTestClient(await desk(t), { protocolVersion: '2025-11-25', maxRounds: 2 })
  await t.rejects(client.callTool('forever', {}, () => accept({ n: 1 })), { message: 'tools/call "forever" still needs input after 2 rounds (maxRounds)' })
})

t.test('a capability the session lacks comes back as an in-band error', async (t) => {
  const client = createTestClient(await desk(t), { protocolVersion: '2025-11-25', capabilities: { elicitation: {} } })
  const error = await t.rejects(client.callTool('assistant', {}, () => sampled('x')), McpClientError) as unknown as McpClientError
  t.equal(error.code, -32602)
  t.equal(error.status, 200)
  t.equal(error.message, 'Server requires the sampling client capability for this request')
})

t.test('across nodes sharing a bus, answers reach the node whose call waits; without one they are refused', async (t) => {
  const bus = new InProcessBus()
  const [a, b] = [await desk(t, { bus }), await desk(t, { bus })]
  const client = createTestClient([a, b], { protocolVersion: '2025-11-25' })
  const { result } = await client.callTool('plan', { hotel: true }, [accept({ city: 'Porto' }), accept({ nights: 2 })])
  t.equal(textOf(result), '2 nights in Porto')
  const apart = createTestClient([await desk(t), await desk(t)], { protocolVersion: '2025-11-25' })
  const error = await t.rejects(apart.callTool('plan', {}, [accept({ city: 'Porto' })]), McpClientError) as unknown as McpClientError
  t.equal(error.status, 400)
  t.match(error.message, /^the server refused the answer to input request "elicit-1" \(elicit: "Where to\?"\): HTTP 400: No request of this session waits for this answer/)
  t.equal(error.code, -32600)
  t.equal(error.rounds.length, 1)
})

t.test('a server that refuses 2025-era clients fails the call; the next one tries to open the session again', async (t) => {
  const seen: Seen[] = []
  const client = createTestClient(await desk(t, { legacy: 'reject' }, seen), { protocolVersion: '2025-06-18' })
  for (let i = 0; i < 2; i++) {
    const error = await t.rejects(client.callTool('echo', { text: 'x' }), McpClientError) as unknown as McpClientError
    t.equal(error.code, -32022)
    t.equal(error.status, 400)
  }
  t.same(seen.map((one) => one.what), ['initialize', 'initialize'], 'each call tries initialize, which is refused')
})

t.test('the client\'s token and headers go on every request of the session', async (t) => {
  const seen: Array<[string | undefined, string | undefined]> = []
  const app = await desk(t)
  app.addHook('onRequest', async (request) => { seen.push([request.headers.authorization, request.headers['x-tenant'] as string | undefined]) })
  const client = createTestClient(app, { protocolVersion: '2025-11-25', token: 'tok', headers: { 'X-Tenant': 'acme' } })
  await client.callTool('plan', {}, () => accept({ city: 'Nice' }))
  t.same(seen, Array(4).fill(['Bearer tok', 'acme']))
})
