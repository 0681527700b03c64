import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import { createClient } from 'redis'
import mocapi, { type BusEvent } from '../../lib/index.js'
import { KEY, listen } from '../helpers.js'
import { freePort, missingRedis, startRedis } from '../redis-server.js'

/** What `fn` throws; fails the test when it returns. */
function thrown (fn: () => unknown): unknown {
  try {
    fn()
  } catch (error) {
    return error
  }
  throw new Error('expected a throw')
}

async function until (condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (let attempt = 0; !(await condition()); attempt++) {
    if (attempt === 200) throw new Error(`timed out waiting until ${what}`)
    await sleep(25)
  }
}

const missing = missingRedis()
const required = process.env.MOCAPI_REQUIRE_SERVERS === '1'
if (missing !== undefined && required) t.fail(`MOCAPI_REQUIRE_SERVERS=1 but ${missing}: install Debian's redis-server package`)
// The bus module is imported only in here, so a skipped run does not count it as uncovered.
else t.test('RedisBus over a real redis-server', { skip: missing }, redisTests)

async function redisTests (t: Test): Promise<void> {
  const { RedisBus } = await import('../../lib/redis/index.js')
  const redis = await startRedis(t)
  const admin = createClient({ url: redis.url })
  admin.on('error', () => {})
  await admin.connect()
  t.teardown(() => admin.close())
  const connections = async (): Promise<number> => String(await admin.sendCommand(['CLIENT', 'LIST'])).trim().split('\n').length
  let channels = 0
  const channel = (): string => `mocapi:test:${++channels}`

  /** A mocapi app on its own loopback port, its bus on the shared server. */
  async function node (t: Test, options: ConstructorParameters<typeof RedisBus>[0], setup: (app: FastifyInstance) => void = () => {}) {
    const app = Fastify()
    await app.register(mocapi, { requestState: { keys: [KEY] }, bus: new RedisBus(options) })
    setup(app)
    t.teardown(() => app.close())
    await app.listen({ host: '127.0.0.1', port: 0 })
    const { port } = app.server.address() as { port: number }
    return { app, url: `http://127.0.0.1:${port}/mcp` }
  }

  t.test('a change announced on node A reaches the matching listeners on node B', async (t) => {
    // The default channel, to cover it; every other test uses a channel of its own.
    const a = await node(t, { url: redis.url }, (app) => { app.mcp.tool({ name: 'boot' }, () => 'b').prompt({ name: 'p' }, () => 'p') })
    // Updates reach a listener only for resources its caller may read on its node.
    const b = await node(t, { url: redis.url }, (app) => { app.mcp.resource({ uri: 'test://watched', name: 'watched' }, () => 'w') })
    const tools = await listen(b.url, 41, { toolsListChanged: true, resourceSubscriptions: ['test://watched'] })
    const prompts = await listen(b.url, 42, { promptsListChanged: true })
    t.equal((await tools.next()).method, 'notifications/subscriptions/acknowledged')
    t.equal((await prompts.next()).method, 'notifications/subscriptions/acknowledged')

    a.app.mcp.tool({ name: 'late' }, () => 'l')
    t.same(await tools.next(), { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 41 } } })
    a.app.mcp.notifyResourceUpdated('test://other')
    a.app.mcp.notifyResourceUpdated('test://watched')
    t.same(await tools.next(), {
      jsonrpc: '2.0',
      method: 'notifications/resources/updated',
      params: { uri: 'test://watched', _meta: { 'io.modelcontextprotocol/subscriptionId': 41 } },
    })
    // Redis keeps one publisher's messages in order, so by now the tools change has passed the prompts listener by.
    a.app.mcp.removePrompt('p')
    t.same(await prompts.next(), { jsonrpc: '2.0', method: 'notifications/prompts/list_changed', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 42 } } })
    t.same(prompts.frames.map((frame) => frame.method), ['notifications/subscriptions/acknowledged', 'notifications/prompts/list_changed'],
      'the prompts-only listener heard nothing of the tools change')
    tools.close()
    prompts.close()
  })

  t.test('every bus on the channel, the publishing one included, delivers a change once', async (t) => {
    const name = channel()
    const one = new RedisBus({ url: redis.url, channel: name })
    const two = new RedisBus({ url: redis.url, channel: name })
    t.teardown(() => Promise.all([one.close(), two.close()]))
    const heard: Array<[string, BusEvent]> = []
    await one.subscribe((event) => heard.push(['one', event]))
    const unsubscribe = await two.subscribe((event) => heard.push(['two', event]))
    await one.publish({ kind: 'tools' })
    await until(() => heard.length === 2, 'both buses heard the change')
    unsubscribe()
    await one.publish({ kind: 'resource', uri: 'test://r' })
    await until(() => heard.length === 3, 'the change reached the remaining listener')
    await sleep(50)
    t.same(heard.sort(([a], [b]) => a.localeCompare(b)), [['one', { kind: 'tools' }], ['one', { kind: 'resource', uri: 'test://r' }], ['two', { kind: 'tools' }]])
  })

  t.test('malformed messages are counted and ignored; the bus keeps delivering', async (t) => {
    const name = channel()
    const errors: unknown[] = []
    const bus = new RedisBus({ url: redis.url, channel: name, onError: (error) => errors.push(error) })
    t.teardown(() => bus.close())
    const heard: BusEvent[] = []
    await bus.subscribe(() => { throw new Error('listener broke') })
    await bus.subscribe((event) => heard.push(event))
    const junk = ['not json', '42', 'null', '"tools"', '[]', '{}', '{"kind":5}', '{"kind":"nope"}', '{"kind":"resource"}', '{"kind":"resource","uri":5}', '{"kind":"__proto__"}',
      '{"kind":"session","op":"level","level":"info"}', '{"kind":"session","session":"s","op":"level","level":"loud"}',
      '{"kind":"session","session":"s","op":"subscribe"}', '{"kind":"session","session":"s","op":"cancel","requestId":{}}',
      '{"kind":"session","session":"s","op":"other"}', '{"kind":"task","id":"t"}', '{"kind":"task","id":5,"node":"n"}']
    for (const message of junk) await admin.publish(name, message)
    const valid: Array<Record<string, unknown>> = [
      { kind: 'resource', uri: 'test://r', extra: true },
      { kind: 'prompts', uri: 'ignored' },
      { kind: 'session', session: 's', op: 'level', level: 'debug', uri: 'ignored' },
      { kind: 'session', session: 's', op: 'unsubscribe', uri: 'test://r', from: 5 },
      { kind: 'session', session: 's', op: 'subscribe', uri: 'test://r', from: 'hub-1' },
      { kind: 'session', session: 's', op: 'cancel', requestId: 7, level: 'ignored' },
      { kind: 'task', id: 't', node: 'n', status: 'ignored' },
    ]
    for (const event of valid) await admin.publish(name, JSON.stringify(event))
    await until(() => heard.length === valid.length, 'the valid events arrived')
    t.same(heard, [
      { kind: 'resource', uri: 'test://r' },
      { kind: 'prompts' },
      { kind: 'session', session: 's', op: 'level', level: 'debug' },
      { kind: 'session', session: 's', op: 'unsubscribe', uri: 'test://r' },
      { kind: 'session', session: 's', op: 'subscribe', uri: 'test://r', from: 'hub-1' },
      { kind: 'session', session: 's', op: 'cancel', requestId: 7 },
      { kind: 'task', id: 't', node: 'n' },
    ], 'only the fields of an event are passed on (a subscription\'s origin when it is a string)')
    t.equal(bus.malformed, junk.length)
    t.same(errors.map((error) => (error as Error).message), valid.map(() => 'listener broke'), 'a throwing listener is reported, and the others still hear')
  })

  t.test('app.close() closes both connections of each bus', async (t) => {
    await until(async () => (await connections()) === 1, 'earlier tests let go of their connections')
    const name = channel()
    const a = await node(t, { url: redis.url, channel: name })
    const b = await node(t, { url: redis.url, channel: name })
    t.equal(await connections(), 5, 'the admin connection, and a publisher and a subscriber per node')
    await a.app.close()
    await until(async () => (await connections()) === 3, 'node A let go of its connections')
    await b.app.close()
    await until(async () => (await connections()) === 1, 'node B let go of its connections')
    t.pass('both nodes closed their connections')
  })

  t.test('a bus built from a client duplicates it and leaves it alone', async (t) => {
    const client = createClient({ url: redis.url })
    client.on('error', () => {})
    await client.connect()
    t.teardown(() => client.close())
    const bus = new RedisBus({ client, channel: channel() })
    const heard: BusEvent[] = []
    await bus.subscribe((event) => heard.push(event))
    await bus.publish({ kind: 'resources' })
    await until(() => heard.length === 1, 'the change arrived')
    await bus.close()
    t.equal(await client.ping(), 'PONG', 'the given client is still connected')
    await t.rejects(bus.publish({ kind: 'tools' }), { message: 'mocapi: the RedisBus is closed' })
    await t.rejects(bus.subscribe(() => {}), { message: 'mocapi: the RedisBus is closed' })
    await t.resolves(bus.close(), 'closing twice is harmless')
  })

  t.test('closing while Redis goes away: a goodbye that fails drops the connection, and close still resolves', async (t) => {
    // Connections node-redis still marks ready whose socket dies under the goodbye, as when Redis stopped a moment
    // before app.close(): their unsubscribe and close reject ("Socket closed unexpectedly").
    const made: Array<{ destroyed: boolean, closes: number }> = []
    const connection = (): any => {
      const state = { destroyed: false, closes: 0 }
      made.push(state)
      const self = {
        isReady: false,
        async connect () { self.isReady = true },
        async publish () { return 1 },
        async subscribe () { return undefined },
        async unsubscribe () { throw new Error('Socket closed unexpectedly') },
        async close () { state.closes++; throw new Error('Socket closed unexpectedly') },
        destroy () { state.destroyed = true; self.isReady = false },
        on () { return self },
        duplicate: connection,
      }
      return self
    }
    const bus = new RedisBus({ client: { duplicate: connection }, channel: channel() })
    await bus.subscribe(() => {})
    await bus.publish({ kind: 'tools' })
    t.equal(made.length, 2, 'a subscriber and a publisher')
    await t.resolves(bus.close(), 'close resolves')
    t.same(made.map((state) => state.destroyed), [true, true], 'both dropped, so neither goes on reconnecting')
    t.same(made.map((state) => state.closes).sort(), [0, 1], 'the subscriber failed at its unsubscribe, the publisher at its close')
  })

  t.test('a bus closed before it was used has nothing to undo', async (t) => {
    const bus = new RedisBus({ url: redis.url, channel: channel() })
    await bus.close()
    t.equal(bus.malformed, 0)
    await t.rejects(bus.publish({ kind: 'tools' }), { message: 'mocapi: the RedisBus is closed' })
  })

  t.test('connection errors go to onError, or are ignored, and never crash the process', async (t) => {
    const lost = await startRedis(t)
    const errors: unknown[] = []
    const reporting = new RedisBus({ url: lost.url, channel: channel(), onError: (error) => errors.push(error) })
    const quiet = new RedisBus({ url: lost.url, channel: channel() })
    await reporting.subscribe(() => {})
    await quiet.subscribe(() => {})
    await lost.stop()
    await until(() => errors.length >= 2, 'both connections of the reporting bus reported the outage')
    await sleep(100)
    t.ok(errors.every((error) => error instanceof Error))
    // Redis is gone: the connections are reconnecting, so closing drops them at once.
    await reporting.close()
    await quiet.close()
  })

  t.test('a client whose reconnect strategy gives up makes the bus fail for good', async (t) => {
    const port = await freePort()
    const client = createClient({ url: `redis://127.0.0.1:${port}`, socket: { reconnectStrategy: false } })
    const errors: unknown[] = []
    const bus = new RedisBus({ client, onError: (error) => errors.push(error) })
    t.teardown(() => bus.close())
    const failure = bus.subscribe(() => {})
    await t.rejects(failure, { code: 'ECONNREFUSED' })
    await t.rejects(bus.publish({ kind: 'tools' }), { code: 'ECONNREFUSED' }, 'the same failure, not a new attempt')
    t.ok(errors.length > 0, 'the failure was reported too')
    client.destroy()
  })

  t.test('a message sent to a node reaches only that node; one for a node that is gone says so', async (t) => {
    const name = channel()
    const errors: unknown[] = []
    const one = new RedisBus({ url: redis.url, channel: name, onError: (error) => errors.push(error) })
    const two = new RedisBus({ url: redis.url, channel: name })
    t.teardown(() => Promise.all([one.close(), two.close()]))
    const toOne: object[] = []
    const toTwo: object[] = []
    const stopOne = await one.receive('n1', (message) => toOne.push(message))
    await two.receive('n2', (message) => toTwo.push(message))
    t.equal(await two.send('n1', { answer: 1 }), true, 'a node listening as n1 received it')
    t.equal(await one.send('n2', { answer: 2 }), true)
    t.equal(await one.send('n3', { answer: 3 }), false, 'no node listens as n3')
    for (const junk of ['not json', '7', 'null', '"text"']) await admin.publish(`${name}:node:n1`, junk)
    await two.send('n1', { answer: 4 })
    await until(() => toOne.length === 2 && toTwo.length === 1, 'each node got its own messages')
    t.same(toOne, [{ answer: 1 }, { answer: 4 }])
    t.same(toTwo, [{ answer: 2 }])
    t.equal(one.malformed, 4, 'what is not a JSON object is counted and dropped')
    stopOne()
    await until(async () => (await two.send('n1', { answer: 5 })) === false, 'n1 stopped listening')
    t.same(toOne, [{ answer: 1 }, { answer: 4 }], 'nothing arrives after the unsubscribe')
    t.same(errors, [])
  })

  t.test('while Redis is unreachable at most maxPending events wait; the rest are dropped at once', async (t) => {
    const down = await startRedis(t)
    await down.stop()
    const errors: unknown[] = []
    const bus = new RedisBus({ url: down.url, channel: channel(), maxPending: 2, onError: (error) => errors.push(error) })
    const waiting: Array<Promise<unknown>> = [bus.publish({ kind: 'tools' }), bus.send('n1', { answer: 1 })]
    for (const publish of waiting) publish.catch(() => {})
    await t.rejects(bus.publish({ kind: 'prompts' }), { message: 'mocapi: the RedisBus dropped an event: 2 are already waiting for Redis (maxPending)' })
    await t.rejects(bus.send('n1', { answer: 2 }), { message: /dropped an event/ })
    t.equal(bus.dropped, 2, 'the bus counts what it dropped')
    await until(() => errors.length > 0, 'the outage was reported')
    await bus.close()
    for (const publish of waiting) await t.rejects(publish, 'closing fails the events that waited')
  })

  t.test('options are checked when the bus is built, with the plugin\'s coded error naming the value', async (t) => {
    const cases: Array<[unknown, string]> = [
      [{ url: 6379 }, 'mocapi: RedisBus url must be a string, got 6379'],
      [{ channel: '' }, 'mocapi: RedisBus channel must be a non-empty string, got ""'],
      [{ channel: 7 }, 'mocapi: RedisBus channel must be a non-empty string, got 7'],
      [{ onError: 'log' }, 'mocapi: RedisBus onError must be a function, got "log"'],
      [{ client: {} }, 'mocapi: RedisBus client must be a redis client (with duplicate()), got an object'],
      [{ client: null }, 'mocapi: RedisBus client must be a redis client (with duplicate()), got null'],
      [{ maxPending: 0 }, 'mocapi: RedisBus maxPending must be a positive integer, got 0'],
      [{ maxPending: 1.5 }, 'mocapi: RedisBus maxPending must be a positive integer, got 1.5'],
      [{ maxPending: '10' }, 'mocapi: RedisBus maxPending must be a positive integer, got "10"'],
      [{ client: createClient(), url: redis.url }, 'mocapi: RedisBus takes url or client, not both'],
    ]
    for (const [options, message] of cases) {
      const error = thrown(() => new RedisBus(options as ConstructorParameters<typeof RedisBus>[0]))
      t.type(error, TypeError, message)
      t.equal((error as { code?: string }).code, 'FST_MOCAPI_INVALID_OPTION', message)
      t.equal((error as Error).message, message)
    }
    const bus = new RedisBus()
    t.equal(bus.malformed, 0, 'no options at all: the defaults')
    await bus.close()
  })
}
