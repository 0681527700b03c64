/**
 * Receipts and durable task journals across nodes on a real redis-server: a keyed call and its duplicate on two
 * nodes; a duplicate waiting on one node for its first on the other, woken over the bus; the first's node SIGKILLed
 * mid-call, and the duplicate running the call itself with the same ctx.callId; a task whose node is SIGKILLed after
 * a ctx.once settled, run again on another node without running the effect again; and RedisReceiptStore's checks.
 */
import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import type { AddressInfo } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import mocapi from '../../lib/index.js'
import { RedisBus, RedisReceiptStore, RedisTaskStore } from '../../lib/redis/index.js'
import { receiptStoreChecks } from '../../lib/testing/index.js'
import { KEY, capturedLogs, meta, postHttp } from '../helpers.js'
import { nodeProcess } from '../node-process.js'
import { startRedis, withRedis } from '../redis-server.js'
import { WITH_TASKS } from '../tasks/client.js'

const FIXTURE = fileURLToPath(new URL('../fixtures/receipt-node.ts', import.meta.url))
const LEASE = 600

/** A node process of test/fixtures/receipt-node.ts on the Redis at `redisUrl`. */
function child (t: Test, redisUrl: string, name: string) {
  return nodeProcess(t, FIXTURE, name, { REDIS_URL: redisUrl, MOCAPI_REQUEST_STATE_KEYS: KEY, LEASE: String(LEASE) })
}

/** An in-process node on the same Redis, registering the fixture's tools and counting their effects. */
async function node (t: Test, redisUrl: string, runs: Record<string, number>) {
  const app: FastifyInstance = Fastify({ forceCloseConnections: true })
  const store = new RedisTaskStore({ url: redisUrl })
  await app.register(mocapi, {
    requestState: { keys: [KEY] },
    bus: new RedisBus({ url: redisUrl }),
    tasks: { store, lease: LEASE },
    receipts: { store: new RedisReceiptStore({ url: redisUrl }) },
  })
  const waiting = { type: 'object', properties: { ms: { type: 'integer' } }, required: ['ms'] } as const
  app.mcp.tool({ name: 'slow', inputSchema: waiting }, async (args: { ms: number }, ctx) => {
    runs.slow = (runs.slow ?? 0) + 1
    // Never long here: a duplicate this node runs for a dead one must answer within the test's patience.
    await sleep(Math.min(args.ms, 1_000))
    return `done by local, call ${ctx.callId}`
  })
  app.mcp.tool({ name: 'charge_task', inputSchema: waiting, task: { support: 'optional', rerun: true } }, async (args: { ms: number }, ctx) => {
    const charge = await ctx.once('charge', () => {
      runs.charge = (runs.charge ?? 0) + 1
      return 'CHARGE-local'
    })
    return `${charge}, finished on local after ${Math.min(args.ms, 0)} ms`
  })
  app.mcp.tool({ name: 'charge_detached', inputSchema: waiting, task: { support: 'optional', detach: true, rerun: true } }, async (_args, ctx) => {
    await ctx.detach()
    const charge = await ctx.once('charge', () => {
      runs.charge = (runs.charge ?? 0) + 1
      return 'CHARGE-local'
    })
    return `${charge}, finished on local, call ${ctx.callId}`
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(async () => { await app.close(); await store.close() })
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`
}

const keyed = (key: string) => ({ headers: { 'idempotency-key': key }, meta: meta({}) })

withRedis(t, 'receipts across nodes on a real Redis', async (t) => {
  const redis = await startRedis(t)

  t.test('RedisReceiptStore passes receiptStoreChecks', async (t) => {
    for (const check of receiptStoreChecks(() => new RedisReceiptStore({ url: redis.url, prefix: `checks:${Math.random()}:` }))) {
      await t.test(check.name, () => check.run())
    }
  })

  t.test('a value RedisReceiptStore did not write reads as nothing, and holds its name all the same', async (t) => {
    const { createClient } = await import('redis')
    const raw = createClient({ url: redis.url })
    await raw.connect()
    t.teardown(() => raw.close())
    const store = new RedisReceiptStore({ url: redis.url, prefix: 'foreign:' })
    t.teardown(() => store.close())
    for (const value of ['garbage', `d${'x'.repeat(22)}soon|s`, `q${'x'.repeat(22)}5|s`, `r${'x'.repeat(22)}5`]) {
      await raw.set('foreign:n', value)
      t.equal(await store.read('n'), undefined, value)
      t.match(await store.claim('n', 'h'.repeat(22), '', 1000), { state: 'done', holder: '' }, 'never taken over')
    }
    t.throws(() => new RedisReceiptStore({ url: redis.url, prefix: '' }), { code: 'FST_MOCAPI_INVALID_OPTION' })
  })

  t.test('a keyed call sent to two nodes runs once; a duplicate waiting on one node is woken by the other\'s reply', async (t) => {
    const runs: Record<string, number> = {}
    const [a, b] = await Promise.all([node(t, redis.url, runs), node(t, redis.url, runs)])
    const first = await postHttp(a, 'tools/call', { name: 'slow', arguments: { ms: 1 } }, keyed('two-nodes'))
    const second = await postHttp(b, 'tools/call', { name: 'slow', arguments: { ms: 1 } }, keyed('two-nodes'))
    t.same(second.body, first.body)
    t.same(runs, { slow: 1 })
    // The first runs 800 ms on A; the duplicate on B hears over the bus that it is done, well before its poll.
    const started = Date.now()
    const slow = postHttp(a, 'tools/call', { name: 'slow', arguments: { ms: 800 } }, keyed('woken'))
    await sleep(100)
    const duplicate = await postHttp(b, 'tools/call', { name: 'slow', arguments: { ms: 800 } }, keyed('woken'))
    const took = Date.now() - started
    t.same(duplicate.body, (await slow).body)
    t.same(runs, { slow: 2 })
    t.ok(took < 800 + 150, `the duplicate answered ${took - 800} ms after the first finished`)
  })

  t.test('when the first\'s node dies mid-call, its waiting duplicate runs the call itself, with the same ctx.callId', { timeout: 180_000 }, async (t) => {
    const runs: Record<string, number> = {}
    const [dying, local] = await Promise.all([child(t, redis.url, 'dying'), node(t, redis.url, runs)])
    const lost = postHttp(dying.url, 'tools/call', { name: 'slow', arguments: { ms: 60_000 } }, keyed('dies')).catch((error: unknown) => error)
    const [, callId] = await dying.line(/started (\S+)/)
    const duplicate = postHttp(local, 'tools/call', { name: 'slow', arguments: { ms: 60_000 } }, keyed('dies'))
    await sleep(200)
    t.same(runs, {}, 'the duplicate waits while the first runs')
    dying.kill()
    await lost
    const ran = await Promise.race([duplicate, sleep(5_000, 'nothing')])
    t.not(ran, 'nothing', 'answered once the lease lapsed')
    t.same(runs, { slow: 1 })
    t.equal((ran as any).body.result.content[0].text, `done by local, call ${callId}`)
  })

  t.test('a task whose node dies after its ctx.once settled runs again elsewhere, reading the effect back', { timeout: 180_000 }, async (t) => {
    const runs: Record<string, number> = {}
    const [dying, local] = await Promise.all([child(t, redis.url, 'dying'), node(t, redis.url, runs)])
    const created = await postHttp(dying.url, 'tools/call', { name: 'charge_task', arguments: { ms: 60_000 } }, { meta: meta(WITH_TASKS) })
    const taskId = created.body.result.taskId
    await dying.line(/recorded dying/)
    dying.kill()
    let view: any
    for (let i = 0; i < 300; i++) {
      view = (await postHttp(local, 'tasks/get', { taskId }, { meta: meta(WITH_TASKS) })).body.result
      if (view?.status === 'completed') break
      await sleep(50)
    }
    t.equal(view.status, 'completed', 'run again on the surviving node')
    t.same(view.result.content, [{ type: 'text', text: 'CHARGE-dying, finished on local after 0 ms' }])
    t.same(runs, {}, 'the charge the dead node recorded was read back, not run again')
    t.equal(dying.out().match(/charged/g)?.length, 1)
  })

  t.test('a keyed call on a frozen Redis runs without a receipt within the store wait, and the operator hears of it', async (t) => {
    const frozen = await startRedis(t)
    const logs = capturedLogs()
    const app = Fastify({ forceCloseConnections: true, ...logs.options })
    await app.register(mocapi, { requestState: { keys: [KEY] }, receipts: { store: new RedisReceiptStore({ url: frozen.url }) } })
    let runs = 0
    app.mcp.tool({ name: 'order' }, () => `order #${++runs}`)
    t.teardown(() => app.close())
    await app.listen({ host: '127.0.0.1', port: 0 })
    const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`
    t.same((await postHttp(url, 'tools/call', { name: 'order' }, keyed('before'))).body.result.content, [{ type: 'text', text: 'order #1' }])
    frozen.freeze()
    t.teardown(() => frozen.thaw())
    const started = Date.now()
    const during = await postHttp(url, 'tools/call', { name: 'order' }, keyed('during'))
    const took = Date.now() - started
    t.same(during.body.result.content, [{ type: 'text', text: 'order #2' }], 'it runs, as with a failing store')
    t.ok(took >= 1_900 && took < 4_000, `answered once the 2 s claim wait ran out, not never: ${took} ms`)
    t.equal(logs.lines.filter((line) => line.level === 40 && /receipt store kept no receipt/.test(line.msg)).length, 1)
    frozen.thaw()
    const after = await postHttp(url, 'tools/call', { name: 'order' }, keyed('after'))
    t.same(after.body.result.content, [{ type: 'text', text: 'order #3' }], 'thawed, the node serves keyed calls again')
  })

  t.test('a task that detached keeps its ctx.callId in its record: its rerun elsewhere has the same', async (t) => {
    const runs: Record<string, number> = {}
    const [dying, local] = await Promise.all([child(t, redis.url, 'dying'), node(t, redis.url, runs)])
    const created = await postHttp(dying.url, 'tools/call', { name: 'charge_detached', arguments: { ms: 60_000 } }, { meta: meta(WITH_TASKS) })
    const taskId = created.body.result.taskId
    t.ok(taskId, 'the call detached into a task')
    const [, callId] = await dying.line(/charged dying (\S+)/)
    await dying.line(/recorded dying/)
    dying.kill()
    let view: any
    for (let i = 0; i < 300; i++) {
      view = (await postHttp(local, 'tasks/get', { taskId }, { meta: meta(WITH_TASKS) })).body.result
      if (view?.status === 'completed') break
      await sleep(50)
    }
    t.equal(view.status, 'completed', 'run again on the surviving node')
    t.same(view.result.content, [{ type: 'text', text: `CHARGE-dying, finished on local, call ${callId}` }], 'the charge read back, the call id the same')
    t.same(runs, {}, 'the charge was not run again')
  })
})
