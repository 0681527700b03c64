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
  const quota = { tasks: 5, bytes: 1000 }
  t.equal(await store.create(task('a', 2_000), quota), 'written')
  t.equal(await store.create(task('b', 5_000), quota), 'written')
  t.equal(await store.create(task('c', 5_000), quota), 'full')
  now = 3_000
  t.equal(await store.create(task('c', 5_000), quota), 'written', 'the expired task made room')
  t.equal(store.size, 2)
})

t.test('MemoryTaskStore holds at most maxBytes of sealed state, in all, expired tasks swept first', async (t) => {
  let now = 1_000
  const store = new MemoryTaskStore({ maxBytes: 100, now: () => now })
  const quota = { tasks: 10, bytes: 1_000 }
  const task = (id: string, owner: string, sealed: string, expiresAt = 5_000) =>
    ({ id, version: 1, status: 'working' as const, createdAt: now, updatedAt: now, expiresAt, owner, sealed })
  t.equal(await store.create(task('a', 'x', 'a'.repeat(60), 2_000), quota), 'written')
  t.equal(await store.create(task('b', 'y', 'b'.repeat(41)), quota), 'full', 'another owner, but the store is full')
  const b = task('b', 'y', 'b'.repeat(40))
  t.equal(await store.create(b, quota), 'written')
  t.equal(store.bytes, 100)
  t.equal(await store.update({ ...b, version: 2, sealed: 'b'.repeat(41) }, quota), 'full', 'growing past the store')
  t.equal(await store.update({ ...b, version: 2, owner: 'z', sealed: 'b'.repeat(10) }, quota), 'written')
  t.equal((await store.get('b'))?.owner, 'y', 'a task keeps the owner it was created with')
  now = 3_000
  t.equal(await store.create(task('c', 'x', 'c'.repeat(90)), quota), 'written', 'the expired task was swept to make room')
  t.equal(store.bytes, 100)
})

// The store module is imported only in here, so a run without redis-server does not count it as uncovered.
withRedis(t, 'RedisTaskStore over a real redis-server', async (t) => {
  const { RedisTaskStore } = await import('../../lib/redis/index.js')
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
    t.throws(() => new RedisTaskStore({ maxTasks: 0 }), { message: /RedisTaskStore maxTasks must be a positive integer, got 0/ })
    t.throws(() => new RedisTaskStore({ maxBytes: -1 }), { message: /RedisTaskStore maxBytes must be a positive integer, got -1/ })
  })

  t.test('maxTasks bounds the whole store; an expired task frees its place and its bytes; a record kept before sizes were counted is counted at its first update', async (t) => {
    const store = new RedisTaskStore({ url: redis.url, prefix: 'max:', maxTasks: 2, maxBytes: 1_000 })
    t.teardown(() => store.close())
    const quota = { tasks: 10, bytes: 10_000 }
    const task = (id: string, sealed: string, expiresAt = Date.now() + 60_000) =>
      ({ id, version: 1, status: 'working' as const, createdAt: 1, updatedAt: 1, expiresAt, owner: id, sealed })
    t.equal(await store.create(task('a'.repeat(22), 'x'.repeat(500), Date.now() + 200), quota), 'written')
    t.equal(await store.create(task('b'.repeat(22), 'x'.repeat(400)), quota), 'written')
    t.equal(await store.create(task('c'.repeat(22), 'x'), quota), 'full', 'two tasks: the most it holds')
    await new Promise((resolve) => setTimeout(resolve, 300))
    t.equal(await store.create(task('c'.repeat(22), 'x'.repeat(600)), quota), 'written', 'the expired one freed its place and its 500 characters')
    const { createClient } = await import('redis')
    const admin = createClient({ url: redis.url })
    await admin.connect()
    t.teardown(() => admin.close())
    t.equal(await admin.get('max:bytes'), '1000')
    const old = task('d'.repeat(22), 'x'.repeat(10))
    await admin.hSet(`max:${old.id}`, { v: '1', d: JSON.stringify(old) })
    t.equal(await store.update({ ...old, version: 2 }, quota), 'full', 'its whole size is new to the store, which has no room')
    t.equal(await store.update({ ...old, version: 2 }), 'written', 'without a quota, it is written and counted')
    t.equal(await admin.get('max:bytes'), '1010')
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
