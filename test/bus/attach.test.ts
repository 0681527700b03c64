import t, { type Test } from 'tap'
import Fastify, { type FastifyServerOptions } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import mocapi, { type BusEvent, type NotificationBus } from '../../lib/index.js'
import { BusLink, type EventRoutes } from '../../lib/bus/link.js'
import { KEY, call, capturedLogs } from '../helpers.js'

/** Routes that do nothing but count the streams' catch-ups. */
function routes (resumed: () => void = () => {}): EventRoutes {
  return {
    session: { receive: () => {} },
    tasks: { changed: async () => {} },
    streams: { notify: () => {}, notifyTask: () => {}, catchUp: resumed },
  }
}

/** A bus whose subscribe resolves when `up()` is called, or rejects with `fail()`. */
function slowBus () {
  let up: () => void = () => {}
  let fail: (error: Error) => void = () => {}
  const published: BusEvent[] = []
  let unsubscribed = 0
  const bus: NotificationBus = {
    publish: (event) => { published.push(event) },
    subscribe: () => new Promise((resolve, reject) => {
      up = () => resolve(() => { unsubscribed++ })
      fail = reject
    }),
  }
  return { bus, published, up: () => up(), fail: (error: Error) => fail(error), unsubscribed: () => unsubscribed }
}

/** An app on `bus` with one tool that needs no bus, closed after the test. */
async function appOn (t: Test, bus: NotificationBus, options: FastifyServerOptions) {
  const app = Fastify(options)
  await app.register(mocapi, { requestState: { keys: [KEY] }, bus })
  app.mcp.tool({ name: 'work' }, () => 'done')
  t.teardown(() => app.close())
  return app
}

t.test('a bus that is down never keeps the server from starting or serving, and the operator hears of it until it is up', async (t) => {
  const logs = capturedLogs()
  const slow = slowBus()
  const app = await appOn(t, slow.bus, logs.options)
  const started = Date.now()
  await app.ready()
  const waited = Date.now() - started
  t.ok(waited >= 1900 && waited < 4000, `ready waited ${waited} ms for the bus, then went on`)
  t.same((await call(app, 'tools/call', { name: 'work' })).body.result.content, [{ type: 'text', text: 'done' }], 'tools/call needs no bus')
  const down = logs.lines.filter((line) => /notification bus is not connected/.test(line.msg))
  t.equal(down.length, 1, 'logged once so far')
  t.equal(down[0].level, 50, 'at error level')
  slow.up()
  await sleep(20)
  t.ok(logs.lines.some((line) => /notification bus is up/.test(line.msg) && line.level === 30))
})

t.test('a bus that fails to subscribe is logged, and the server keeps serving', async (t) => {
  const logs = capturedLogs()
  const slow = slowBus()
  const app = await appOn(t, slow.bus, logs.options)
  setTimeout(() => slow.fail(new Error('redis gave up')), 10)
  await app.ready()
  t.ok(logs.lines.some((line) => /notification bus failed/.test(line.msg) && line.err?.message === 'redis gave up'))
  t.equal((await call(app, 'tools/call', { name: 'work' })).status, 200)
})

t.test('while the bus stays down, the operator is told again at each interval', async (t) => {
  const logs = capturedLogs()
  const slow = slowBus()
  const link = new BusLink(slow.bus, Fastify(logs.options).log, 'node-1', { late: 20, nag: 30 })
  link.attach(routes())
  await sleep(120)
  const down = logs.lines.filter((line) => /not connected/.test(line.msg))
  t.ok(down.length >= 3, `told ${down.length} times in 120 ms`)
  t.ok(down.every((line, i) => i === 0 || line.mcp.downForMs > down[i - 1].mcp.downForMs))
  slow.up()
  await sleep(10)
  const count = logs.lines.length
  await sleep(60)
  t.equal(logs.lines.length, count, 'silent once up')
  await link.close()
})

t.test('failures to publish are counted, and logged at most once per interval', async (t) => {
  const logs = capturedLogs()
  const bus: NotificationBus = { publish: async () => { throw new Error('bus down') }, subscribe: () => () => {} }
  const link = new BusLink(bus, Fastify(logs.options).log, 'node-1')
  link.attach(routes())
  await link.ready()
  t.equal(link.up, true)
  for (let i = 0; i < 500; i++) link.publish({ kind: 'tools' })
  await sleep(20)
  t.equal(link.failed, 500)
  t.equal(logs.lines.filter((line) => line.msg === 'mocapi could not publish a change event').length, 1)
  t.equal(logs.lines[0].mcp.failedChanges, 1)
  await link.close()
})

t.test('a link closed before its bus came up unsubscribes once it does, and says nothing', async (t) => {
  const logs = capturedLogs()
  const slow = slowBus()
  const link = new BusLink(slow.bus, Fastify(logs.options).log, 'node-1')
  link.attach(routes())
  await link.close()
  slow.up()
  await sleep(10)
  t.equal(slow.unsubscribed(), 1)
  t.equal(link.up, false)
  const failing = slowBus()
  const other = new BusLink(failing.bus, Fastify(logs.options).log, 'node-1')
  other.attach(routes())
  await other.close()
  failing.fail(new Error('late'))
  await sleep(10)
  t.same(logs.lines, [], 'nothing logged for a closed link')
})

t.test('a bus that reports its outages is logged once per change, and each return resumes the streams', async (t) => {
  const logs = capturedLogs()
  let report: (state: 'down' | 'up', cause?: unknown) => void = () => {}
  let unwatched = 0
  const bus: NotificationBus = {
    publish: () => {},
    subscribe: () => () => {},
    watch: (listener) => {
      report = listener
      return () => { unwatched++ }
    },
  }
  const link = new BusLink(bus, Fastify(logs.options).log, 'node-1')
  let resumed = 0
  link.attach(routes(() => { resumed++ }))
  await link.ready()
  report('up')
  t.equal(resumed, 0, 'a bus that was not down has nothing to resume')
  report('down', new Error('gone'))
  report('down', new Error('still gone'))
  report('up')
  report('up')
  t.same(logs.lines.map((line) => [line.level, /bus is (down|back)/.exec(line.msg)?.[1]]), [[50, 'down'], [40, 'back']], 'a bus that repeats itself is logged once per change')
  t.equal(logs.lines[0].err.message, 'gone')
  t.equal(resumed, 1)
  await link.close()
  t.equal(unwatched, 1, 'closing stops watching')
})
