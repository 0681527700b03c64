import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import { randomBytes } from 'node:crypto'
import mocapi, { MemoryEventLog, type EventLog, type MocapiOptions } from '../../lib/index.js'
import { webhookReceiver, type WebhookReceiver } from '../../lib/testing/index.js'
import { KEY, call, capturedLogs, openStream } from '../helpers.js'

const tick = { name: 'tick', payloadSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } } as const
const secret = (): string => `whsec_${randomBytes(32).toString('base64')}`
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

/** An app whose caller is `ada`, logging into `lines`. */
async function server (t: Test, options: MocapiOptions = {}, key = KEY) {
  const { lines, options: logging } = capturedLogs()
  const app: FastifyInstance = Fastify(logging)
  await app.register(mocapi, {
    requestState: { keys: [key] },
    principal: () => 'ada',
    ...options,
    events: { webhooks: { allow: ['http://127.0.0.1:*'], retryDelays: [30, 30] }, ...options.events },
  })
  app.mcp.event({ ...tick, match: (_args, data) => { if (data.n < 0) throw new Error('negative'); return true } })
  t.teardown(() => app.close())
  return { app, lines }
}

async function receiver (t: Test, respond?: Parameters<typeof webhookReceiver>[0]['respond']) {
  const key = secret()
  const hook = await webhookReceiver({ secret: key, respond })
  t.teardown(() => hook.close())
  return { hook, key }
}

async function subscribe (app: FastifyInstance, hook: WebhookReceiver, key: string) {
  const { body } = await call(app, 'events/subscribe', { name: 'tick', delivery: { mode: 'webhook', url: hook.url, secret: key } })
  if (body.result === undefined) throw new Error(JSON.stringify(body))
  return body.result
}

/** `memory` with some of its methods replaced. */
function wrapped (memory: MemoryEventLog, overrides: Partial<EventLog>): EventLog {
  return new Proxy(memory, {
    get: (target, key) => {
      const own = (overrides as Record<PropertyKey, unknown>)[key] ?? Reflect.get(target, key)
      return typeof own === 'function' ? own.bind(target) : own
    },
  })
}

const events = (hook: WebhookReceiver) => hook.deliveries.filter((delivery) => delivery.body.type === undefined)

t.test('a match that throws in the fan-out leaves that subscription out, logged at warn', async (t) => {
  const { app, lines } = await server(t)
  const { hook, key } = await receiver(t)
  await subscribe(app, hook, key)
  await app.mcp.emit('tick', { n: -1 })
  await app.mcp.emit('tick', { n: 1 }, { eventId: 'fine' })
  t.equal((await hook.next()).id, 'fine')
  t.equal(events(hook).length, 1)
  t.ok(lines.some((line) => line.level === 40 && /match threw/.test(line.msg)))
})

t.test('a subscription removed while its delivery waits for a retry is not delivered again', async (t) => {
  const { app } = await server(t, { events: { webhooks: { allow: ['http://127.0.0.1:*'], retryDelays: [300, 300] } } })
  const { hook, key } = await receiver(t, () => 500)
  await subscribe(app, hook, key)
  await app.mcp.emit('tick', { n: 1 })
  await hook.next()
  const gone = await call(app, 'events/unsubscribe', { name: 'tick', delivery: { url: hook.url } })
  t.same(gone.body.result.resultType, 'complete')
  await wait(900)
  t.equal(events(hook).length, 1, 'its retry found no subscription and stopped')
})

t.test('each delivery passes the guard again: a callback another node may not reach is retried, then given up', async (t) => {
  const log = new MemoryEventLog()
  const first = await server(t, { events: { log } })
  const { hook, key } = await receiver(t)
  await subscribe(first.app, hook, key)
  await first.app.close()
  // The second node shares the log but allows no plain-http callback.
  const second = await server(t, { events: { log, webhooks: { allow: [], retryDelays: [20, 20] } } })
  await second.app.ready()
  await second.app.mcp.emit('tick', { n: 1 })
  await wait(600)
  t.equal(events(hook).length, 0, 'never reached')
  const given = second.lines.find((line) => /failed every attempt/.test(line.msg))
  t.ok(given, JSON.stringify(second.lines.map((line) => line.msg)))
  t.match(given, { level: 40, mcp: { reason: 'not_https', attempts: 3 } })
})

t.test('a subscription whose record this node cannot open (a retired key) is skipped', async (t) => {
  const log = new MemoryEventLog()
  const first = await server(t, { events: { log } })
  const { hook, key } = await receiver(t)
  await subscribe(first.app, hook, key)
  await first.app.close()
  const second = await server(t, { events: { log } }, randomBytes(32).toString('base64'))
  await second.app.mcp.emit('tick', { n: 1 })
  await wait(300)
  t.equal(events(hook).length, 0)
})

t.test('a log that fails its claims is logged once at error, and once at warn when it answers again', async (t) => {
  const memory = new MemoryEventLog()
  let failing = false
  const log = wrapped(memory, {
    claim: (max: number, lease: number) => failing ? Promise.reject(new Error('log down')) : memory.claim(max, lease),
  })
  const { app, lines } = await server(t, { events: { log, webhooks: { allow: ['http://127.0.0.1:*'], retryDelays: [20] } } })
  const { hook, key } = await receiver(t)
  await subscribe(app, hook, key)
  failing = true
  await app.mcp.emit('tick', { n: 1 }, { eventId: 'late' })
  await wait(200)
  t.equal(lines.filter((line) => line.level === 50 && /event log is not reachable/.test(line.msg)).length, 1)
  failing = false
  t.equal((await hook.next()).id, 'late', 'delivered once the log answers')
  t.ok(lines.some((line) => line.level === 40 && /reachable again/.test(line.msg)))
})

t.test('a job that fails midway is logged and left to its lease', async (t) => {
  const memory = new MemoryEventLog()
  let failures = 1
  const log = wrapped(memory, {
    subscription: (id: string) => failures-- > 0 ? Promise.reject(new Error('flaky')) : memory.subscription(id),
  })
  const { app, lines } = await server(t, { events: { log, webhooks: { allow: ['http://127.0.0.1:*'], retryDelays: [20], timeout: 100 } } })
  const { hook, key } = await receiver(t)
  failures = 0
  await subscribe(app, hook, key)
  failures = 1
  await app.mcp.emit('tick', { n: 1 }, { eventId: 'after-lease' })
  t.equal((await hook.next(10_000)).id, 'after-lease', 'delivered after its claim lapsed')
  t.ok(lines.some((line) => line.level === 50 && /webhook job failed/.test(line.msg)))
})

t.test('a stream with more than one batch waiting sends it all, in order', async (t) => {
  const { app } = await server(t)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/mcp`
  const cursor = (await call(app, 'events/poll', { name: 'tick', cursor: null })).body.result.cursor
  for (let n = 0; n < 250; n++) await app.mcp.emit('tick', { n })
  const stream = await openStream(url, 1, 'events/stream', { name: 'tick', cursor })
  await stream.next()
  const seen: number[] = []
  while (seen.length < 250) {
    const frame = await stream.next()
    if (frame.method === 'notifications/events/event') seen.push(frame.params.data.n)
  }
  t.same(seen, Array.from({ length: 250 }, (_, n) => n))
  stream.close()
})

t.test('an unknown type named at length is cut in the error', async (t) => {
  const { app } = await server(t)
  const { body } = await call(app, 'events/poll', { name: 'x'.repeat(300), cursor: null })
  t.equal(body.error.code, -32023)
  t.equal(body.error.message, `Unknown event type: ${'x'.repeat(200)}…`)
})

t.test('an occurrence the log dropped before its retry is given up; the rest are delivered', async (t) => {
  const { app } = await server(t, { events: { log: new MemoryEventLog({ maxBytes: 40 }), webhooks: { allow: ['http://127.0.0.1:*'], retryDelays: [200, 200] } } })
  await app.ready()
  const { hook, key } = await receiver(t, (delivery) => delivery.id === 'dropped' ? 500 : 204)
  await subscribe(app, hook, key)
  await app.mcp.emit('tick', { n: 0 }, { eventId: 'dropped' })
  await hook.next()
  for (let n = 1; n <= 8; n++) await app.mcp.emit('tick', { n }, { eventId: `later-${n}` })
  await wait(800)
  t.equal(events(hook).filter((delivery) => delivery.id === 'dropped').length, 1, 'tried once: by its retry it was gone')
  const later = events(hook).filter((delivery) => delivery.id.startsWith('later-')).map((delivery) => delivery.id)
  // The log keeps five of these at a time: what it dropped before its turn is gone too, the newest never.
  t.ok(later.includes('later-8') && later.length >= 5, later.join(' '))
  t.equal(new Set(later).size, later.length, 'none twice')
})

t.test('emit names a type by string', async (t) => {
  const { app } = await server(t)
  await t.rejects(app.mcp.emit(5 as never, { n: 1 }), /no event type 5 is registered/)
})

t.test('a subscribe that names no delivery mode asks for a webhook', async (t) => {
  const { app } = await server(t)
  const { hook, key } = await receiver(t)
  const { body } = await call(app, 'events/subscribe', { name: 'tick', delivery: { url: hook.url, secret: key } })
  t.match(body.result.id, /^sub_/)
})

t.test('an event log with close() is closed with the app, after its worker stops', async (t) => {
  let closed = 0
  const log = wrapped(new MemoryEventLog(), { close: async () => { closed++ } })
  const { app } = await server(t, { events: { log } })
  await app.ready()
  await app.close()
  t.equal(closed, 1)
})
