import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import mocapi, { requestedSchema, type MocapiOptions } from '../../lib/index.js'
import { RedisBus, RedisTaskStore } from '../../lib/redis/index.js'
import { KEY, capturedLogs, meta, postHttp } from '../helpers.js'
import { nodeProcess } from '../node-process.js'
import { freePort, startRedis, withRedis } from '../redis-server.js'
import { WITH_TASKS } from '../tasks/client.js'
import { count, poll, type Runs } from './runs.js'

/** Two nodes over real HTTP sharing a real Redis for their bus and task store, each with its own connections. */
async function nodes (t: Test, url: string, options: MocapiOptions, setup: (app: FastifyInstance) => void) {
  const urls: string[] = []
  const logs = capturedLogs()
  for (let i = 0; i < 2; i++) {
    const app = Fastify({ forceCloseConnections: true, ...logs.options })
    const store = new RedisTaskStore({ url })
    await app.register(mocapi, { requestState: { keys: [KEY] }, bus: new RedisBus({ url }), tasks: { store, lease: 60 }, ...options })
    setup(app)
    t.teardown(async () => { await app.close(); await store.close() })
    await app.listen({ host: '127.0.0.1', port: 0 })
    urls.push(`http://127.0.0.1:${(app.server.address() as { port: number }).port}/mcp`)
  }
  return { urls, logs }
}

const SKEWED_NODE = fileURLToPath(new URL('../fixtures/skewed-node.ts', import.meta.url))

/** A node process of test/fixtures/skewed-node.ts whose clock is `offset` ms off: its URL. */
async function skewedNode (t: Test, redisUrl: string, name: string, offset: number, ttl: number): Promise<string> {
  const env = { REDIS_URL: redisUrl, MOCAPI_REQUEST_STATE_KEYS: KEY, TOKEN_TTL: String(ttl), CLOCK_OFFSET_MS: String(offset) }
  return (await nodeProcess(t, SKEWED_NODE, name, env)).url
}

withRedis(t, 'over a real Redis', async (t) => {
  const redis = await startRedis(t)

  t.test('a task answered through tasks/update on another node runs its effects once', async (t) => {
    const runs: Runs = {}
    const { urls: [a, b] } = await nodes(t, redis.url, {}, (app) => {
      app.mcp.tool({ name: 'order', task: { support: 'optional' } }, async (_args, ctx) => {
        const quote = await ctx.once('quote', () => ({ price: 40 + count(runs, 'quote') }))
        const size = await ctx.elicit(`Size, at EUR ${quote.price}?`, requestedSchema().choose('size', ['S', 'M']))
        const order = await ctx.once('order', () => `ORDER-${count(runs, 'order')}`)
        const gift = await ctx.elicit('Gift wrap?', requestedSchema().boolean('gift'))
        const wrapped = gift.action === 'accept' && gift.content.gift
        return `${order} size ${size.action === 'accept' ? size.content.size : '-'} at EUR ${quote.price}, gift ${wrapped}`
      })
    })
    const taskMeta = meta(WITH_TASKS)
    const created = await postHttp(a, 'tools/call', { name: 'order' }, { meta: taskMeta })
    const taskId = created.body.result.taskId
    const first = await poll(b, taskId, 'input_required')
    t.equal(first.inputRequests['elicit-1'].params.message, 'Size, at EUR 41?')
    await postHttp(b, 'tasks/update', { taskId, inputResponses: { 'elicit-1': { action: 'accept', content: { size: 'M' } } } }, { meta: taskMeta })
    const second = await poll(a, taskId, 'input_required')
    t.ok(second.inputRequests['elicit-2'], 'the second question, asked by the pass node B ran')
    await postHttp(a, 'tasks/update', { taskId, inputResponses: { 'elicit-2': { action: 'accept', content: { gift: true } } } }, { meta: taskMeta })
    const done = await poll(b, taskId, 'completed')
    t.same(done.result.content, [{ type: 'text', text: 'ORDER-1 size M at EUR 41, gift true' }])
    t.same(runs, { quote: 1, order: 1 }, 'three passes on two nodes: each effect ran once')
  })

  t.test('single use: a second retry is refused on another node, and without it the retry still works', async (t) => {
    const runs: Runs = {}
    const tools = (app: FastifyInstance) => {
      app.mcp.tool({ name: 'pay' }, async (_args, ctx) => {
        const ok = await ctx.elicit('Pay?', requestedSchema().boolean('pay'))
        const paid = await ctx.once('pay', () => `PAID-${count(runs, 'pay')}`)
        await ctx.elicit('Receipt by mail?', requestedSchema().boolean('mail'))
        return `${paid} ${ok.action === 'accept' ? ok.content.pay : ok.action}`
      })
    }
    const single = await nodes(t, redis.url, { requestState: { keys: [KEY], singleUse: true } }, tools)
    const [a, b] = single.urls
    const first = await postHttp(a, 'tools/call', { name: 'pay' }, { meta: meta() })
    const retry = { name: 'pay', requestState: first.body.result.requestState, inputResponses: { 'elicit-1': { action: 'accept', content: { pay: true } } } }
    const once = await postHttp(b, 'tools/call', retry, { meta: meta() })
    t.equal(once.body.result.resultType, 'input_required')
    const twice = await postHttp(a, 'tools/call', retry, { meta: meta() })
    t.same(twice.body.error, {
      code: -32602,
      message: 'This round was already answered: a requestState is good for one retry (requestState.singleUse); start the call over without requestState',
    })
    t.same(runs, { pay: 1 })
    t.ok(single.logs.lines.some((line) => line.level === 30 && line.msg === 'mocapi refused a requestState: its round was already answered (singleUse)'))
    const done = await postHttp(a, 'tools/call', {
      name: 'pay',
      requestState: once.body.result.requestState,
      inputResponses: { 'elicit-2': { action: 'accept', content: { mail: false } } },
    }, { meta: meta() })
    t.same(done.body.result.content, [{ type: 'text', text: 'PAID-1 true' }], 'the next round\'s token is good for its one retry')

    const plain = await nodes(t, redis.url, {}, tools)
    const start = await postHttp(plain.urls[0], 'tools/call', { name: 'pay' }, { meta: meta() })
    const again = { ...retry, requestState: start.body.result.requestState }
    t.equal((await postHttp(plain.urls[1], 'tools/call', again, { meta: meta() })).body.result.resultType, 'input_required')
    t.equal((await postHttp(plain.urls[0], 'tools/call', again, { meta: meta() })).body.result.resultType, 'input_required', 'without singleUse, the same round answers twice')
  })

  t.test('the Redis bus claims an id once for its TTL', async (t) => {
    const bus = new RedisBus({ url: redis.url, channel: 'claims-test' })
    t.teardown(() => bus.close())
    t.equal(await bus.claim('x', 50), true)
    t.equal(await bus.claim('x', 50), false)
    await sleep(80)
    t.equal(await bus.claim('x', 50), true, 'the claim ended with its TTL')
  })

  t.test('single use holds across clocks: a node 8 s behind refuses a round the first node answered, after it expired there', async (t) => {
    const ttl = 1_500
    const [a, b] = await Promise.all([skewedNode(t, redis.url, 'A', 0, ttl), skewedNode(t, redis.url, 'B', -8_000, ttl)])
    const first = await postHttp(a, 'tools/call', { name: 'pay' }, { meta: meta() })
    const retry = { name: 'pay', requestState: first.body.result.requestState, inputResponses: { 'elicit-1': { action: 'accept', content: { pay: true } } } }
    const paid = await postHttp(a, 'tools/call', retry, { meta: meta() })
    t.same(paid.body.result.content, [{ type: 'text', text: 'charged by A (#1)' }])
    await sleep(ttl + 500)
    const onA = await postHttp(a, 'tools/call', retry, { meta: meta() })
    t.equal(onA.body.error.code, -32602, 'expired by the first node\'s clock')
    const onB = await postHttp(b, 'tools/call', retry, { meta: meta() })
    t.equal(onB.body.result, undefined, 'the node whose clock is behind still takes the token, and must not run it')
    t.match(onB.body.error, { code: -32602, message: /^This round was already answered/ })
  })

  t.test('single use answers 503 at once, never hangs, while Redis is frozen or not there', async (t) => {
    const frozen = await startRedis(t)
    const port = await freePort()
    const logs = capturedLogs()
    const urls: string[] = []
    // One node on a Redis the test freezes, one started while nothing listens on its Redis port.
    for (const url of [frozen.url, `redis://127.0.0.1:${port}`]) {
      const app = Fastify({ forceCloseConnections: true, ...logs.options })
      await app.register(mocapi, { requestState: { keys: [KEY], singleUse: true }, bus: new RedisBus({ url }) })
      app.mcp.tool({ name: 'pay' }, async (_args, ctx) => {
        await ctx.elicit('Pay?', requestedSchema().boolean('pay'))
        return 'paid'
      })
      t.teardown(() => app.close())
      await app.listen({ host: '127.0.0.1', port: 0 })
      urls.push(`http://127.0.0.1:${(app.server.address() as { port: number }).port}/mcp`)
    }
    const answer = { 'elicit-1': { action: 'accept', content: { pay: true } } }
    const tokens = await Promise.all(urls.map(async (url) => (await postHttp(url, 'tools/call', { name: 'pay' }, { meta: meta() })).body.result.requestState))
    frozen.freeze()
    t.teardown(() => frozen.thaw())
    for (const [i, url] of urls.entries()) {
      const started = Date.now()
      const response = await fetch(url, {
        method: 'POST',
        signal: AbortSignal.timeout(10_000),
        headers: { 'content-type': 'application/json', accept: 'application/json', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'pay' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'pay', requestState: tokens[i], inputResponses: answer, _meta: meta() } }),
      })
      const body = await response.json() as any
      const took = Date.now() - started
      t.equal(response.status, 503, `${i === 0 ? 'frozen' : 'absent'}: 503`)
      t.match(body.error, { code: -32603, message: /could not check that this round is answered once/ })
      t.ok(took < 4_000, `${i === 0 ? 'frozen' : 'absent'}: answered in ${took} ms`)
    }
    t.equal(logs.lines.filter((line) => line.level === 50 && /could not claim a single-use requestState/.test(line.msg)).length, 2)
    // Thawed, Redis runs the claim it was sent while frozen: the round counts as answered (fail closed, nothing ran),
    // and the node serves new calls.
    frozen.thaw()
    await sleep(100)
    const retry = { name: 'pay', requestState: tokens[0], inputResponses: answer }
    const after = await postHttp(urls[0], 'tools/call', retry, { meta: meta() })
    t.match(after.body.error, { code: -32602, message: /^This round was already answered/ })
    const fresh = await postHttp(urls[0], 'tools/call', { name: 'pay' }, { meta: meta() })
    t.equal(fresh.body.result.resultType, 'input_required')
  })
})
