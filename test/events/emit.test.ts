import t from 'tap'
import Fastify from 'fastify'
import mocapi, { MemoryEventLog, requestedSchema } from '../../lib/index.js'
import { KEY, build, call } from '../helpers.js'

const incident = {
  name: 'incident.created',
  payloadSchema: {
    type: 'object', properties: { service: { type: 'string' }, severity: { enum: ['P1', 'P2'] } }, required: ['service', 'severity'],
  },
} as const

t.test('emit checks the payload against payloadSchema and its size, naming what is wrong; nothing bad is kept', async (t) => {
  const app = await build(t, { events: { maxPayloadBytes: 100 } }, (app) => { app.mcp.event(incident) })
  const start = (await call(app, 'events/poll', { name: 'incident.created', cursor: null })).body.result.cursor
  await t.rejects(app.mcp.emit('incident.created', { service: 'api' }), /data must have required property 'severity'/)
  await t.rejects(app.mcp.emit('incident.created', { service: 'api', severity: 'P9' }), /data\.severity must be equal to one of the allowed values/)
  await t.rejects(app.mcp.emit('incident.created', [] as never), /data must be an object/)
  await t.rejects(app.mcp.emit('incident.created', { service: 'x'.repeat(200), severity: 'P1' }),
    /is 2\d\d bytes of JSON, more than the 100 an occurrence may take \(events\.maxPayloadBytes\)/)
  const circular: Record<string, unknown> = { service: 'api', severity: 'P1' }
  circular.self = circular
  await t.rejects(app.mcp.emit('incident.created', circular), /cannot be written as JSON/)
  await t.rejects(app.mcp.emit('incident.created', { service: 'api', severity: 'P1', n: 10n } as never), /cannot be written as JSON/)
  await t.rejects(app.mcp.emit('nope', {}), /no event type "nope" is registered/)
  await t.rejects(app.mcp.emit('incident.created', { service: 'api', severity: 'P1' }, { eventId: '' }), /eventId must be a string of 1 to 256/)
  await t.rejects(app.mcp.emit('incident.created', { service: 'api', severity: 'P1' }, { eventId: 'x'.repeat(257) }), /eventId/)
  await t.rejects(app.mcp.emit('incident.created', { service: 'api', severity: 'P1' }, 'id' as never), /options must be an object/)
  const read = (await call(app, 'events/poll', { name: 'incident.created', cursor: start })).body.result
  t.same(read.events, [], 'nothing refused reached the log')
})

t.test('the same eventId emitted twice is kept once; ids are random unless given', async (t) => {
  const app = await build(t, {}, (app) => { app.mcp.event(incident) })
  const start = (await call(app, 'events/poll', { name: 'incident.created', cursor: null })).body.result.cursor
  t.equal(await app.mcp.emit('incident.created', { service: 'api', severity: 'P1' }, { eventId: 'evt_1' }), 'evt_1')
  t.equal(await app.mcp.emit('incident.created', { service: 'api', severity: 'P2' }, { eventId: 'evt_1' }), 'evt_1')
  const random = await app.mcp.emit('incident.created', { service: 'api', severity: 'P2' })
  t.match(random, /^[0-9a-f-]{36}$/)
  const read = (await call(app, 'events/poll', { name: 'incident.created', cursor: start })).body.result
  t.same(read.events.map((event: any) => [event.eventId, event.data.severity]), [['evt_1', 'P1'], [random, 'P2']])
})

t.test('a tool that emits through ctx.once emits once, whatever rounds it takes', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.event(incident)
    app.mcp.tool({ name: 'open_incident' }, async (_args, ctx) => {
      const eventId = await ctx.once('emit', () => app.mcp.emit('incident.created', { service: 'api', severity: 'P1' }))
      const answer = await ctx.elicit('Page the on-call?', requestedSchema().boolean('confirmed'))
      return `${eventId} ${answer.action === 'accept' && answer.content.confirmed ? 'paged' : 'not paged'}`
    })
  })
  const start = (await call(app, 'events/poll', { name: 'incident.created', cursor: null })).body.result.cursor
  const asked = (await call(app, 'tools/call', { name: 'open_incident' })).body.result
  t.equal(asked.resultType, 'input_required', JSON.stringify(asked))
  const [key] = Object.keys(asked.inputRequests)
  const done = (await call(app, 'tools/call', {
    name: 'open_incident', requestState: asked.requestState, inputResponses: { [key]: { action: 'accept', content: { confirmed: true } } },
  })).body.result
  t.match(done.content[0].text, /paged$/)
  const read = (await call(app, 'events/poll', { name: 'incident.created', cursor: start })).body.result
  t.equal(read.events.length, 1, 'one occurrence for two rounds')
  t.equal(done.content[0].text, `${read.events[0].eventId} paged`)
})

t.test('event definitions are checked at registration, naming the field', async (t) => {
  const app = await build(t)
  const bad: Array<[unknown, RegExp]> = [
    [{ name: '' }, /event name must be 1-128 characters/],
    [{ name: 'has space' }, /event name/],
    [{ name: 'x', extra: 1 }, /extra/],
    [{ name: 'x', inputSchema: { type: 'string' } }, /inputSchema must be an object schema/],
    [{ name: 'x', payloadSchema: { type: 'object', properties: { a: { type: 'nope' } } } }, /payloadSchema/],
    [{ name: 'x', inputSchema: { type: 'object', properties: { a: { type: 'nope' } } } }, /inputSchema/],
    [{ name: 'x', match: 'yes' }, /match/],
    [{ name: 'x', check: 1 }, /check/],
    [{ name: 'x', check: () => ({}), match: () => true }, /match or check, not both/],
    [{ name: 'x', delivery: [] }, /delivery must be a non-empty array/],
    [{ name: 'x', delivery: ['email'] }, /delivery must be/],
    [{ name: 'x', check: () => ({}), delivery: ['webhook'] }, /serves poll and push, not webhook/],
    [{ name: 'x', description: 5 }, /description must be a string/],
    [{ name: 'x', _meta: 'm' }, /_meta/],
    [{ name: 'x', scopes: 'a' }, /scopes/],
    [{ name: 'x', canAccess: 'yes' }, /canAccess/],
    ['x', /an event definition/],
  ]
  for (const [definition, message] of bad) t.throws(() => app.mcp.event(definition as never), message, JSON.stringify(definition))
  app.mcp.event({ name: 'x' })
  t.throws(() => app.mcp.event({ name: 'x' }), /already registered/)
  t.same(app.mcp.listEvents().map((event: any) => event.name), ['x'], 'nothing half-registered')
})

t.test('events options are checked at registration, naming the bad value', async (t) => {
  const bad: Array<[unknown, RegExp]> = [
    [{ log: {} }, /events\.log must be an EventLog/],
    [{ heartbeat: 50 }, /events\.heartbeat must be at least 100/],
    [{ heartbeat: 60_000 }, /events\.heartbeat must be at most 30000/],
    [{ pollInterval: 0 }, /events\.pollInterval/],
    [{ maxEvents: 5000 }, /events\.maxEvents must be at most 1000/],
    [{ maxPayloadBytes: -1 }, /events\.maxPayloadBytes/],
    [{ subscriptionsPerPrincipal: 1.5 }, /events\.subscriptionsPerPrincipal/],
    [{ webhooks: { allow: 'http://127.0.0.1:*' } }, /events\.webhooks\.allow must be an array/],
    [{ webhooks: { allow: ['ftp://x'] } }, /events\.webhooks\.allow\[0\]/],
    [{ webhooks: { retryDelays: [] } }, /retryDelays must be 1 to 10 integers/],
    [{ webhooks: { retryDelays: [5] } }, /retryDelays/],
    [{ webhooks: { retryDelays: new Array(11).fill(100) } }, /retryDelays/],
    [{ webhooks: { timeout: 0 } }, /events\.webhooks\.timeout/],
    [{ webhooks: { verificationsPerMinute: 0 } }, /events\.webhooks\.verificationsPerMinute/],
    [{ webhooks: { secret: 'x' } }, /events\.webhooks\.secret/],
    [{ ttl: 5 }, /events\.ttl/],
  ]
  for (const [events, message] of bad) {
    const app = Fastify()
    await t.rejects(async () => { await app.register(mocapi, { requestState: { keys: [KEY] }, events: events as never }) }, message, JSON.stringify(events))
    await app.close()
  }
  const app = Fastify()
  await app.register(mocapi, { requestState: { keys: [KEY] }, events: { log: new MemoryEventLog({ maxAge: 1000 }), webhooks: { retryDelays: [10] } } })
  await app.close()
  t.throws(() => new MemoryEventLog({ maxAge: 0 }), /MemoryEventLog maxAge/)
  t.throws(() => new MemoryEventLog({ maxBytes: -1 }), /MemoryEventLog maxBytes/)
})
