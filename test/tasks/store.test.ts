import t from 'tap'
import { MemoryTaskStore } from '../../lib/index.js'
import { taskStoreChecks } from '../../lib/testing/index.js'
import { startRedis, withRedis } from '../redis-server.js'

t.test('MemoryTaskStore passes the TaskStore checks', async (t) => {
  for (const check of taskStoreChecks(() => new MemoryTaskStore())) await t.test(check.name, () => check.run())
})

t.test('MemoryTaskStore holds at most maxTasks, expired ones dropped first', async (t) => {
  let now = 1_000
  const store = new MemoryTaskStore({ maxTasks: 2, now: () => now })
  const task = (id: string, expiresAt: number) => ({ id, version: 1, status: 'working' as const, createdAt: now, updatedAt: now, expiresAt, owner: id, sealed: 'x' })
  t.equal(await store.create(task('a', 2_000), 5), true)
  t.equal(await store.create(task('b', 5_000), 5), true)
  t.equal(await store.create(task('c', 5_000), 5), false, 'full')
  now = 3_000
  t.equal(await store.create(task('c', 5_000), 5), true, 'the expired task made room')
  t.equal(store.size, 2)
})

// The store module is imported only in here, so a run without redis-server does not count it as uncovered.
withRedis(t, 'RedisTaskStore over a real redis-server', async (t) => {
  const { RedisTaskStore } = await import('../../lib/redis.js')
  const redis = await startRedis(t)
  let prefixes = 0
  for (const check of taskStoreChecks(() => new RedisTaskStore({ url: redis.url, prefix: `test:${++prefixes}:` }))) {
    await t.test(check.name, () => check.run())
  }

  t.test('its options are checked as the plugin\'s are', async (t) => {
    t.throws(() => new RedisTaskStore({ url: 5 as never }), { code: 'FST_MOCAPI_INVALID_OPTION', message: /RedisTaskStore url must be a string, got 5/ })
    t.throws(() => new RedisTaskStore({ client: {} as never }), { message: /RedisTaskStore client must be a redis client/ })
    t.throws(() => new RedisTaskStore({ url: redis.url, client: { duplicate: () => ({}) } as never }), { message: /url or client, not both/ })
    t.throws(() => new RedisTaskStore({ prefix: '' }), { message: /RedisTaskStore prefix must be a non-empty string/ })
    t.throws(() => new RedisTaskStore({ onError: 'log' as never }), { message: /RedisTaskStore onError must be a function/ })
  })

  t.test('a record that is not a task reads as none; a closed store refuses calls', async (t) => {
    const { createClient } = await import('redis')
    const admin = createClient({ url: redis.url })
    await admin.connect()
    t.teardown(() => admin.close())
    const store = new RedisTaskStore({ url: redis.url, prefix: 'odd:' })
    const base = { id: 'e', owner: 'o', sealed: 's', status: 'working', version: 1, createdAt: 1, updatedAt: 1, expiresAt: 1 }
    for (const [id, d] of [['a', 'not json'], ['b', '[]'], ['c', '{"id":"c"}'], ['e', JSON.stringify({ ...base, version: 'x' })], ['d', JSON.stringify({ id: 'd', owner: 'o', sealed: 's', status: 'working', version: 1, createdAt: 1, updatedAt: 1, expiresAt: 1, leaseUntil: 'x' })]]) {
      await admin.hSet(`odd:${id}`, { v: '1', d })
      t.equal(await store.get(id), undefined, d)
    }
    await store.close()
    await t.rejects(store.get('a'), /closed/)
  })

  t.test('a store made from a client uses a connection of its own; one closed before use opens none', async (t) => {
    const { createClient } = await import('redis')
    const client = createClient({ url: redis.url })
    const store = new RedisTaskStore({ client: client as never, prefix: 'dup:' })
    t.teardown(() => store.close())
    t.equal(await store.get('x'), undefined)
    await store.close()
    t.equal(client.isOpen, false, 'the client it copied was never opened')
    await new RedisTaskStore({ url: redis.url }).close()
  })

  t.test('Redis down: calls fail at once with an error saying so; back up, the store serves again', async (t) => {
    const errors: unknown[] = []
    const store = new RedisTaskStore({ url: redis.url, prefix: 'outage:', onError: (error) => errors.push(error) })
    t.teardown(() => store.close())
    t.equal(await store.get('none'), undefined, 'connected')
    await redis.stop()
    const started = Date.now()
    await t.rejects(store.get('none'))
    t.ok(Date.now() - started < 3_000, 'it did not wait for Redis to come back')
    const again = await startRedis(t, redis.port)
    for (let i = 0; i < 100; i++) {
      try {
        t.equal(await store.get('none'), undefined, `back on ${again.url}`)
        break
      } catch {
        await new Promise((resolve) => setTimeout(resolve, 50))
      }
    }
    t.ok(errors.length > 0, 'the outage reached onError')
  })

  t.test('a store whose server never came up fails its calls after a short wait', async (t) => {
    // No onError: connection errors are ignored, and never crash the process.
    const store = new RedisTaskStore({ url: 'redis://127.0.0.1:1' })
    t.teardown(() => store.close())
    await t.rejects(store.get('x'), /not reachable/)
  })
})
