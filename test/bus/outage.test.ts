import t, { type Test } from 'tap'
import Fastify from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import mocapi from '../../lib/index.js'
import { EventStreamParser } from '../../lib/testing/transport.js'
import { KEY, capturedLogs, listen } from '../helpers.js'
import { freePort, missingRedis, startRedis } from '../redis-server.js'

/**
 * A Redis outage, on a redis-server of the test's own that is stopped and started again on its
 * port: the node says so once when the bus goes down and once when it is back, and its listen
 * streams of both eras are told of the changes they may have missed.
 */

/** A redis-server on `port` that the test stops and starts again; stopped when the test ends. */
function redisOn (t: Test, port: number) {
  let stopCurrent = async (): Promise<void> => {}
  async function start (): Promise<void> {
    stopCurrent = (await startRedis(t, port)).stop
  }
  return { url: `redis://127.0.0.1:${port}`, start, stop: () => stopCurrent() }
}

async function until (condition: () => boolean, what: string): Promise<void> {
  for (let attempt = 0; !condition(); attempt++) {
    if (attempt === 400) throw new Error(`timed out waiting until ${what}`)
    await sleep(25)
  }
}

/** What `promise` gives within `ms`, else `'nothing'`: a frame that never comes fails an assertion, not the run. */
function within<T> (promise: Promise<T>, ms = 5_000): Promise<T | 'nothing'> {
  return Promise.race([promise, sleep(ms, 'nothing' as const)])
}

/** A 2025-era session's GET stream over real HTTP, read frame by frame. */
async function getStream (url: string, session: string) {
  const controller = new AbortController()
  const response = await fetch(url, { signal: controller.signal, headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' } })
  const reader = (response.body as ReadableStream<Uint8Array>).getReader()
  const parser = new EventStreamParser()
  const decoder = new TextDecoder()
  const queued: any[] = []
  async function next (): Promise<any> {
    while (queued.length === 0) {
      const { value, done } = await reader.read()
      if (done) return undefined
      queued.push(...parser.push(decoder.decode(value, { stream: true })))
    }
    return queued.shift()
  }
  return { status: response.status, next, close: () => controller.abort() }
}

const down = (line: Record<string, any>): boolean => /notification bus is down/.test(line.msg)
const back = (line: Record<string, any>): boolean => /notification bus is back/.test(line.msg)

const missing = missingRedis()
const required = process.env.MOCAPI_REQUIRE_SERVERS === '1'
if (missing !== undefined && required) t.fail(`MOCAPI_REQUIRE_SERVERS=1 but ${missing}: install Debian's redis-server package`)
else t.test('a Redis outage, on a real redis-server', { skip: missing }, outageTests)

async function outageTests (t: Test): Promise<void> {
  const { RedisBus } = await import('../../lib/redis/index.js')

  t.test('a node that is only subscribed logs one line at error when Redis goes down, and one at warn when it is back, per outage', async (t) => {
    const redis = redisOn(t, await freePort())
    await redis.start()
    const logs = capturedLogs()
    const app = Fastify(logs.options)
    // The default onError: connection errors are not the operator's news, the outage is. (Receipts off: their own
    // startup warning, of receipts kept in memory while the bus is shared, is not this test's.)
    await app.register(mocapi, { requestState: { keys: [KEY] }, bus: new RedisBus({ url: redis.url }), receipts: false })
    t.teardown(() => app.close())
    await app.ready()
    // A bus beside it that reports every connection error: how many attempts the outage took.
    const errors: unknown[] = []
    const witness = new RedisBus({ url: redis.url, channel: 'mocapi:witness', onError: (error) => errors.push(error) })
    t.teardown(() => witness.close())
    await witness.subscribe(() => {})
    const loud = (): Array<Record<string, any>> => logs.lines.filter((line) => line.level >= 40)

    for (const outage of [1, 2]) {
      const before = errors.length
      await redis.stop()
      await until(() => loud().filter(down).length === outage, `outage ${outage} was logged`)
      await until(() => errors.length - before >= 8, 'the connections failed to reconnect several times')
      await redis.start()
      await until(() => loud().filter(back).length === outage, `the end of outage ${outage} was logged`)
    }
    await sleep(200)
    const lines = loud()
    t.same(lines.map((line) => [line.level, down(line) ? 'down' : back(line) ? 'back' : line.msg]),
      [[50, 'down'], [40, 'back'], [50, 'down'], [40, 'back']], 'one line as each outage began, one as it ended, nothing per attempt')
    t.ok(lines[0].err !== undefined, 'the down line carries the error that said so')
    t.ok(lines[1].mcp.downForMs > 0 && lines[3].mcp.downForMs > 0, 'the back line says how long it was down')
  })

  t.test('after an outage, listen streams of both eras are sent the notifications their filters cover', async (t) => {
    const redis = redisOn(t, await freePort())
    await redis.start()
    const logs = capturedLogs()
    const app = Fastify(logs.options)
    await app.register(mocapi, { requestState: { keys: [KEY] }, bus: new RedisBus({ url: redis.url }) })
    app.mcp.tool({ name: 'boot' }, () => 'b')
      .resource({ uri: 'test://watched', name: 'watched' }, () => 'w')
      .resource({ uri: 'test://other', name: 'other' }, () => 'o')
    t.teardown(() => app.close())
    await app.listen({ host: '127.0.0.1', port: 0 })
    const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/mcp`

    const meta = (id: number) => ({ _meta: { 'io.modelcontextprotocol/subscriptionId': id } })
    const tools = await listen(url, 71, { toolsListChanged: true, resourceSubscriptions: ['test://watched'] })
    const prompts = await listen(url, 72, { promptsListChanged: true })
    t.teardown(() => { tools.close(); prompts.close() })
    t.equal((await tools.next()).method, 'notifications/subscriptions/acknowledged')
    t.equal((await prompts.next()).method, 'notifications/subscriptions/acknowledged')

    // A 2025-era session, its GET stream, and a resource it subscribed to (a session event, over Redis).
    const init = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } } }),
    })
    const session = init.headers.get('mcp-session-id') as string
    await init.text()
    const stream = await getStream(url, session)
    t.teardown(() => stream.close())
    t.equal(stream.status, 200)
    const subscribed = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'resources/subscribe', params: { uri: 'test://watched' } }),
    })
    t.equal(subscribed.status, 200)
    await subscribed.text()
    // Redis keeps one publisher's messages in order: the subscription reaches the GET stream before this update.
    app.mcp.notifyResourceUpdated('test://watched')
    const updated = (id?: number) => ({ jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'test://watched', ...(id === undefined ? {} : meta(id)) } })
    t.same(await within(stream.next()), updated(), 'the GET stream subscribed while the bus was up')
    t.same(await within(tools.next()), updated(71))

    await redis.stop()
    await until(() => logs.lines.some(down), 'the outage was logged')
    // Made while Redis is down: the bus cannot carry them, so no stream hears of them.
    app.mcp.tool({ name: 'late' }, () => 'l').prompt({ name: 'p' }, () => 'p')
    app.mcp.notifyResourceUpdated('test://watched')
    await sleep(300)
    await redis.start()

    t.same(await within(tools.next()), { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: meta(71) })
    t.same(await within(tools.next()), updated(71))
    t.same(await within(prompts.next()), { jsonrpc: '2.0', method: 'notifications/prompts/list_changed', params: meta(72) })
    const frames = [await within(stream.next()), await within(stream.next()), await within(stream.next()), await within(stream.next())]
    t.same(frames, [
      { jsonrpc: '2.0', method: 'notifications/tools/list_changed' },
      { jsonrpc: '2.0', method: 'notifications/prompts/list_changed' },
      { jsonrpc: '2.0', method: 'notifications/resources/list_changed' },
      updated(),
    ], 'the GET stream hears of every list, and of the resource its session subscribed to')
    t.equal(await within(prompts.next(), 300), 'nothing', 'a stream hears of what its filter covers, and nothing else')
    t.ok(logs.lines.some(back), 'the end of the outage was logged')

    // The bus carries changes again, to the same streams.
    app.mcp.removeTool('late')
    t.same(await within(tools.next()), { jsonrpc: '2.0', method: 'notifications/tools/list_changed', params: meta(71) })
  })

  t.test('a watcher that throws is reported to onError, and the others are still told', async (t) => {
    const redis = redisOn(t, await freePort())
    await redis.start()
    const errors: unknown[] = []
    const bus = new RedisBus({ url: redis.url, onError: (error) => errors.push(error) })
    t.teardown(() => bus.close())
    const states: string[] = []
    bus.watch(() => { throw new Error('watcher broke') })
    const unwatch = bus.watch((state) => states.push(state))
    await bus.subscribe(() => {})
    await redis.stop()
    await until(() => states.length === 1, 'the outage was told')
    await redis.start()
    await until(() => states.length === 2, 'the end of the outage was told')
    t.same(states, ['down', 'up'])
    t.equal(errors.filter((error) => (error as Error).message === 'watcher broke').length, 2, 'each throw went to onError')
    unwatch()
    await redis.stop()
    await until(() => errors.filter((error) => (error as Error).message === 'watcher broke').length === 3, 'the remaining watcher was told')
    t.same(states, ['down', 'up'], 'an unwatched listener hears no more')
  })
}
