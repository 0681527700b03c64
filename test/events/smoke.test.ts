import t from 'tap'
import { build, call, jwtServer, openStream } from '../helpers.js'
import { incident } from './incident.js'

t.test('poll smoke', async (t) => {
  const app = await build(t, {}, (app) => { app.mcp.event(incident) })
  const list = await call(app, 'events/list')
  t.same(list.body.result.events.map((e: any) => e.name), ['incident.created'])
  const first = await call(app, 'events/poll', { name: 'incident.created', arguments: { service: 'api' }, cursor: null })
  t.same(first.body.result.events, [])
  await app.mcp.emit('incident.created', { service: 'api', severity: 'P1' }, { eventId: 'inc-1' })
  await app.mcp.emit('incident.created', { service: 'db', severity: 'P2' })
  const second = await call(app, 'events/poll', { name: 'incident.created', arguments: { service: 'api' }, cursor: first.body.result.cursor })
  t.equal(second.body.result.events.length, 1, JSON.stringify(second.body))
  t.equal(second.body.result.events[0].eventId, 'inc-1')
  const discover = await call(app, 'server/discover')
  t.same(discover.body.result.capabilities.events, {})
})

t.test('stream smoke', async (t) => {
  const { app, url } = await jwtServer(t, { events: { heartbeat: 200 } }, (app) => { app.mcp.event(incident) })
  const stream = await openStream(url, 7, 'events/stream', { name: 'incident.created', arguments: { service: 'api' } })
  const active = await stream.next()
  t.equal(active.method, 'notifications/events/active', JSON.stringify(active))
  await app.mcp.emit('incident.created', { service: 'api', severity: 'P1' }, { eventId: 'inc-9' })
  const event = await stream.next()
  t.equal(event.method, 'notifications/events/event')
  t.equal(event.params.eventId, 'inc-9')
  t.equal(event.params._meta['io.modelcontextprotocol/subscriptionId'], 7)
  const beat = await stream.next()
  t.equal(beat.method, 'notifications/events/heartbeat')
  stream.close()
})
