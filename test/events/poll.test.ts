import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { MemoryEventLog, type MocapiOptions } from '../../lib/index.js'
import { build, call, capturedLogs, openSession, rpc } from '../helpers.js'
import { incident } from './incident.js'

type Test = Parameters<typeof build>[0]

const API = { name: 'incident.created', arguments: { service: 'api' } }
const asUser = (user: string) => ({ headers: { 'x-user': user } })

/** An app whose caller is the `x-user` header (anonymous without it). */
async function app (t: Test, options: MocapiOptions = {}, setup?: (app: FastifyInstance) => void): Promise<FastifyInstance> {
  return await build(t, { principal: (request) => request.headers['x-user'] as string | undefined, ...options }, (app) => {
    app.mcp.event(incident)
    setup?.(app)
  })
}

async function poll (server: FastifyInstance, params: Record<string, unknown>, user = 'ada') {
  const { body } = await call(server, 'events/poll', params, asUser(user))
  return body
}

t.test('a first poll starts now; later polls return what matches, once, in order, with the cursor after them', async (t) => {
  const server = await app(t)
  await server.mcp.emit('incident.created', { service: 'api', severity: 'P3' }, { eventId: 'before' })
  const first = (await poll(server, { ...API, cursor: null })).result
  t.same(first.events, [], 'nothing from before the first poll')
  t.equal(first.hasMore, false)
  t.equal(first.truncated, false)
  t.equal(first.nextPollMs, 5000)
  t.equal(typeof first.cursor, 'string')
  const absent = (await poll(server, API)).result
  t.same(absent.events, [], 'an absent cursor is null')
  await server.mcp.emit('incident.created', { service: 'api', severity: 'P1' }, { eventId: 'inc-1' })
  await server.mcp.emit('incident.created', { service: 'db', severity: 'P1' }, { eventId: 'inc-2' })
  await server.mcp.emit('incident.created', { service: 'api', severity: 'P2' }, { eventId: 'inc-3' })
  const second = (await poll(server, { ...API, cursor: first.cursor })).result
  t.same(second.events.map((event: any) => event.eventId), ['inc-1', 'inc-3'], 'match keeps the api incidents')
  t.same(second.events[0].data, { service: 'api', severity: 'P1' })
  t.equal(second.events[0].name, 'incident.created')
  t.match(second.events[0].timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)
  const third = (await poll(server, { ...API, cursor: second.cursor })).result
  t.same(third.events, [], 'nothing twice')
  const again = (await poll(server, { ...API, cursor: first.cursor })).result
  t.same(again.events.map((event: any) => event.eventId), ['inc-1', 'inc-3'], 'a cursor can be polled again: polling stores nothing')
})

t.test('maxEvents pages with hasMore and nextPollMs 0; a request past the cap takes the cap', async (t) => {
  const server = await app(t, { events: { maxEvents: 2 } })
  const start = (await poll(server, { ...API, cursor: null })).result.cursor
  for (let i = 0; i < 5; i++) await server.mcp.emit('incident.created', { service: 'api', severity: `P${i}` }, { eventId: `e${i}` })
  const page = (await poll(server, { ...API, cursor: start })).result
  t.same(page.events.map((event: any) => event.eventId), ['e0', 'e1'], 'events.maxEvents is the default')
  t.equal(page.hasMore, true)
  t.equal(page.nextPollMs, 0)
  const next = (await poll(server, { ...API, cursor: page.cursor, maxEvents: 2 })).result
  t.same(next.events.map((event: any) => event.eventId), ['e2', 'e3'])
  const rest = (await poll(server, { ...API, cursor: next.cursor, maxEvents: 1_000_000 })).result
  t.same(rest.events.map((event: any) => event.eventId), ['e4'])
  t.equal(rest.hasMore, false)
  for (const maxEvents of [0, -1, 1.5, '3']) {
    const refused = await poll(server, { ...API, cursor: start, maxEvents })
    t.equal(refused.error.code, -32602, `maxEvents ${JSON.stringify(maxEvents)}`)
  }
})

t.test('a cursor opens only for the caller, type and arguments it was issued to', async (t) => {
  const server = await app(t, {}, (app) => { app.mcp.event({ ...incident, name: 'incident.resolved' }) })
  const cursor = (await poll(server, { ...API, cursor: null })).result.cursor
  const others = [
    [{ ...API, cursor }, 'grace'],
    [{ ...API, arguments: { service: 'db' }, cursor }, 'ada'],
    [{ ...API, name: 'incident.resolved', cursor }, 'ada'],
    [{ ...API, cursor: cursor.slice(0, -2) + (cursor.endsWith('AA') ? 'AB' : 'AA') }, 'ada'],
    [{ ...API, cursor: 'not-a-cursor' }, 'ada'],
    [{ ...API, cursor: 42 }, 'ada'],
  ] as const
  for (const [params, user] of others) {
    const refused = await poll(server, params, user)
    t.equal(refused.error.code, -32602, JSON.stringify(params).slice(0, 120))
  }
  const sameArguments = (await poll(server, { name: 'incident.created', arguments: { service: 'api' }, cursor })).result
  t.same(sameArguments.events, [], 'the same caller, type and arguments open it')
})

t.test('unknown types, modes a type does not serve, bad arguments and bad fields are clear errors', async (t) => {
  const server = await app(t, {}, (app) => {
    app.mcp.event({ name: 'push.only', delivery: ['push'] })
  })
  const unknown = await poll(server, { name: 'nope', cursor: null })
  t.equal(unknown.error.code, -32023)
  t.same(unknown.error.data, { kind: 'event' })
  const pushOnly = await poll(server, { name: 'push.only', cursor: null })
  t.equal(pushOnly.error.code, -32026)
  t.same(pushOnly.error.data, { feature: 'delivery', value: 'poll' })
  const missing = await poll(server, { name: 'incident.created', cursor: null })
  t.equal(missing.error.code, -32602)
  t.match(missing.error.message, /arguments must have required property 'service'/)
  const wrongType = await poll(server, { name: 'incident.created', arguments: { service: 3 }, cursor: null })
  t.match(wrongType.error.message, /arguments\.service must be string/)
  const extra = await poll(server, { ...API, cursor: null, since: 'yesterday' })
  t.match(extra.error.message, /Unknown field params\.since/)
  const maxAge = await poll(server, { ...API, cursor: null, maxAgeMs: -5 })
  t.equal(maxAge.error.code, -32602)
  const request = rpc('events/poll', { ...API, arguments: { service: 'x', n: 1 }, cursor: null }, asUser('ada'))
  const huge = await server.inject({ ...request, payload: JSON.stringify(request.payload).replace('"n":1', '"n":1e400') })
  t.equal(huge.json().error.code, -32602, 'a number canonical JSON cannot write')
})

t.test('maxAgeMs and the log\'s own bounds report truncated: true, never an error', async (t) => {
  let skew = 0
  const log = new MemoryEventLog({ maxAge: 60_000, now: () => Date.now() + skew })
  const server = await app(t, { events: { log } })
  const start = (await poll(server, { ...API, cursor: null })).result.cursor
  await server.mcp.emit('incident.created', { service: 'api', severity: 'P1' }, { eventId: 'old' })
  skew = 120_000
  await server.mcp.emit('incident.created', { service: 'api', severity: 'P1' }, { eventId: 'new' })
  const late = (await poll(server, { ...API, cursor: start })).result
  t.equal(late.truncated, true, 'the log dropped what came after the cursor')
  t.same(late.events.map((event: any) => event.eventId), ['new'])
  const kept = (await poll(server, { ...API, cursor: late.cursor, maxAgeMs: 3_600_000 })).result
  t.equal(kept.truncated, false, 'a floor before the cursor changes nothing')

  const plain = await app(t)
  const cursor = (await poll(plain, { ...API, cursor: null })).result.cursor
  await plain.mcp.emit('incident.created', { service: 'api', severity: 'P1' }, { eventId: 'older' })
  await new Promise((resolve) => setTimeout(resolve, 100))
  await plain.mcp.emit('incident.created', { service: 'api', severity: 'P1' }, { eventId: 'recent' })
  const floored = (await poll(plain, { ...API, cursor, maxAgeMs: 50 })).result
  t.equal(floored.truncated, true, 'a maxAgeMs floor past an occurrence the cursor had not seen')
  t.same(floored.events.map((event: any) => event.eventId), ['recent'], 'what came before the floor is left out')
  const within = (await poll(plain, { ...API, cursor, maxAgeMs: 60_000 })).result
  t.equal(within.truncated, false, 'a floor that skips nothing is no gap')
  t.same(within.events.map((event: any) => event.eventId), ['older', 'recent'])
  const caughtUp = (await poll(plain, { ...API, cursor: floored.cursor, maxAgeMs: 1 })).result
  t.equal(caughtUp.truncated, false, 'a floor past the cursor with nothing between is no gap')
})

t.test('a read looks at 5000 occurrences at most, then answers hasMore with the cursor where it stopped', async (t) => {
  const server = await app(t)
  const start = (await poll(server, { ...API, cursor: null })).result.cursor
  for (let i = 0; i < 5200; i++) await server.mcp.emit('incident.created', { service: 'db', severity: 'P4' })
  await server.mcp.emit('incident.created', { service: 'api', severity: 'P1' }, { eventId: 'needle' })
  const first = (await poll(server, { ...API, cursor: start })).result
  t.same(first.events, [], 'none of the first 5000 match')
  t.equal(first.hasMore, true)
  const second = (await poll(server, { ...API, cursor: first.cursor })).result
  t.same(second.events.map((event: any) => event.eventId), ['needle'])
  t.equal(second.hasMore, false)
})

t.test('a match that throws leaves the occurrence out, logged once per read', async (t) => {
  const { lines, options } = capturedLogs()
  const server = await build(t, { principal: () => 'ada' }, (app) => {
    app.mcp.event({ name: 'fragile', match: (_args, data) => { if (data.bad === true) throw new Error('boom'); return true } })
  }, options)
  const start = (await poll(server, { name: 'fragile', cursor: null })).result.cursor
  await server.mcp.emit('fragile', { bad: true })
  await server.mcp.emit('fragile', { bad: true })
  await server.mcp.emit('fragile', { bad: false }, { eventId: 'fine' })
  const read = (await poll(server, { name: 'fragile', cursor: start })).result
  t.same(read.events.map((event: any) => event.eventId), ['fine'])
  t.equal(lines.filter((line) => /match threw/.test(line.msg)).length, 1)
})

t.test('a hidden type answers as an absent one; a scope it needs is a challenge', async (t) => {
  const server = await app(t, {}, (app) => {
    app.mcp.event({ name: 'secret.audit', canAccess: (ctx) => ctx.principal === 'ada' })
    app.mcp.event({ name: 'billing.paid', scopes: ['billing:read'] })
  })
  const listed = async (user: string) => (await call(server, 'events/list', {}, asUser(user))).body.result
  t.same((await listed('grace')).events.map((event: any) => event.name), ['incident.created', 'billing.paid'])
  t.equal((await listed('grace')).cacheScope, 'private', 'a list that varies by caller is private')
  t.same((await listed('ada')).events.map((event: any) => event.name), ['incident.created', 'secret.audit', 'billing.paid'])
  t.equal((await poll(server, { name: 'secret.audit', cursor: null }, 'grace')).error.code, -32023)
  t.equal(typeof (await poll(server, { name: 'secret.audit', cursor: null }, 'ada')).result.cursor, 'string')
  const challenged = await call(server, 'events/poll', { name: 'billing.paid', cursor: null }, asUser('ada'))
  t.equal(challenged.status, 401, 'no token at all: a 401 naming the scope to ask for')
  t.match(challenged.response.headers['www-authenticate'], /scope="billing:read"/)
})

t.test('events/list lists what each type declares, and pages', async (t) => {
  const server = await app(t, { pageSize: 1 }, (app) => {
    app.mcp.event({ name: 'upstream', check: async () => ({ events: [], cursor: 'u0' }), _meta: { 'example.com/team': 'sre' } })
  })
  const first = (await call(server, 'events/list')).body.result
  t.same(first.events, [{
    name: 'incident.created',
    delivery: ['poll', 'push', 'webhook'],
    inputSchema: incident.inputSchema,
    payloadSchema: incident.payloadSchema,
    description: 'A new incident on one service',
  }])
  const second = (await call(server, 'events/list', { cursor: first.nextCursor })).body.result
  t.same(second.events, [{
    name: 'upstream', delivery: ['poll', 'push'], inputSchema: { type: 'object' }, payloadSchema: { type: 'object' }, _meta: { 'example.com/team': 'sre' },
  }])
  t.equal(second.nextCursor, undefined)
  t.same(server.mcp.listEvents().map((event: any) => event.name), ['incident.created', 'upstream'])
  t.equal(server.mcp.removeEvent('upstream'), true)
  t.equal(server.mcp.removeEvent('upstream'), false)
  t.equal((await poll(server, { name: 'upstream', cursor: null })).error.code, -32023)
})

t.test('without event types the methods are -32601 and no capability is declared', async (t) => {
  const server = await build(t)
  t.equal((await call(server, 'events/list')).body.error.code, -32601)
  const discovered = (await call(server, 'server/discover')).body.result.capabilities
  t.equal(discovered.events, undefined)
  t.equal(discovered.extensions?.['io.modelcontextprotocol/events'], undefined)
})

t.test('both capability keys are declared, in server/discover and a 2025-era initialize, and a session polls', async (t) => {
  const server = await app(t)
  const discovered = (await call(server, 'server/discover')).body.result.capabilities
  t.same(discovered.events, {})
  t.same(discovered.extensions['io.modelcontextprotocol/events'], {})
  await server.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(server.server.address() as { port: number }).port}/mcp`
  const session = await openSession(url)
  const headers = {
    'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25',
  }
  const init = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'x', version: '1' } } }),
  })
  const initialized = JSON.parse((await init.text()).replace(/^[^{]*/, '').replace(/\n\n$/, ''))
  t.same(initialized.result.capabilities.events, {})
  const polled = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'events/poll', params: { ...API, cursor: null } }) })
  const text = await polled.text()
  t.match(text, /"cursor":"/, 'a 2025-era session polls')
})

t.test('an upstream type: check keeps the position, mocapi seals it; what check returns is checked', async (t) => {
  const seen: Array<string | null> = []
  let answer: any = { events: [], cursor: 'u1' }
  const { lines, options } = capturedLogs()
  const server = await build(t, { principal: () => 'ada' }, (app) => {
    app.mcp.event({
      name: 'upstream',
      payloadSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
      check: async (_args, cursor) => {
        seen.push(cursor)
        if (answer instanceof Error) throw answer
        return typeof answer === 'function' ? answer() : answer
      },
    })
  }, options)
  const first = (await poll(server, { name: 'upstream', cursor: null })).result
  t.same(first.events, [])
  answer = { events: [{ eventId: 'u-1', data: { n: 1 }, timestamp: 0 }, { data: { n: 2 }, timestamp: new Date(5000) }], cursor: 'u2' }
  const second = (await poll(server, { name: 'upstream', cursor: first.cursor })).result
  t.same(seen, [null, 'u1'], 'check sees its own cursor back')
  t.same(second.events.map((event: any) => event.data.n), [1, 2])
  t.equal(second.events[0].eventId, 'u-1')
  t.equal(second.events[0].timestamp, '1970-01-01T00:00:00.000Z')
  t.equal(second.events[1].timestamp, '1970-01-01T00:00:05.000Z')
  t.match(second.events[1].eventId, /^[0-9a-f-]{36}$/, 'an id when the upstream gives none')
  const bad = [
    [{ events: [{ data: { n: 'one' } }], cursor: 'u3' }, /does not match its payloadSchema/],
    [{ events: [5], cursor: 'u3' }, /not an object/],
    [{ events: [{ data: { n: 1 }, timestamp: 'soon' }], cursor: 'u3' }, /timestamp that is no date/],
    [{ events: 'none', cursor: 'u3' }, /must return \{ events: \[\], cursor: string \}/],
    [{ events: Array.from({ length: 1001 }, () => ({ data: { n: 1 } })), cursor: 'u3' }, /1001 events, more than 1000/],
    [{ events: [], cursor: 'x'.repeat(5000) }, /cursor too long/],
    [new Error('upstream down'), /UpstreamError: upstream down/],
  ] as const
  for (const [value, message] of bad) {
    answer = value
    const refused = await poll(server, { name: 'upstream', cursor: second.cursor })
    t.equal(refused.error.code, -32603)
    t.match(refused.error.message, message)
  }
  t.ok(lines.some((line) => line.level === 50 && /check threw/.test(line.msg)), 'a check that throws is logged at error')
  await t.rejects(server.mcp.emit('upstream', { n: 1 }), /has check/)
})

t.test('a refused cursor is logged at warn with why, as a refused requestState is; never its text', async (t) => {
  const { lines, options } = capturedLogs()
  const server = await build(t, { principal: (request) => request.headers['x-user'] as string | undefined }, (app) => {
    app.mcp.event(incident)
  }, options)
  const cursor = (await poll(server, { ...API, cursor: null })).result.cursor
  t.equal((await poll(server, { ...API, cursor }, 'grace')).error.code, -32602)
  t.equal((await poll(server, { ...API, cursor: 'x'.repeat(5000) })).error.code, -32602)
  const refused = lines.filter((line) => line.msg === 'mocapi refused an events cursor')
  t.same(refused.map((line) => [line.level, line.mcp]), [
    [40, { event: 'incident.created', reason: 'authentication failed' }],
    [40, { event: 'incident.created', reason: 'too long' }],
  ])
  t.notOk(JSON.stringify(lines).includes(cursor), 'the cursor itself is not logged')
})
