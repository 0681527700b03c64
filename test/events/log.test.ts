/**
 * The event log's stores: MemoryEventLog and RedisEventLog (on a real redis-server) pass eventLogChecks; both drop
 * occurrences past maxAge and maxBytes and report the floor; RedisEventLog names bad options, fails fast when Redis is
 * down, never lets two nodes claim one job, and keeps every key of a log in one hash slot.
 */
import t, { type Test } from 'tap'
import { createClient } from 'redis'
import { setTimeout as sleep } from 'node:timers/promises'
import { MemoryEventLog, isPosition, type EventLog } from '../../lib/events/log.js'
import { RedisEventLog, type RedisEventLogOptions } from '../../lib/redis/index.js'
import { eventLogChecks } from '../../lib/testing/index.js'
import { freePort, startRedis, withRedis } from '../redis-server.js'

const occurrence = (eventId: string, data = '1') => ({ eventId, timestamp: Date.now(), data })

async function appendAll (log: EventLog, name: string, count: number, data = '1', from = 0): Promise<string[]> {
  const positions: string[] = []
  for (let i = from; i < from + count; i++) positions.push((await log.append(name, occurrence(`e${i}`, data))).position)
  return positions
}

/** What both logs do at their bounds, `make` giving a log with the limits asked. */
function boundTests (t: Test, make: (options: { maxAge?: number, maxBytes?: number }) => EventLog): void {
  t.test('occurrences past maxAge are gone, the last of them the floor; their eventIds are free again', async (t) => {
    const log = make({ maxAge: 150 })
    t.teardown(() => log.close?.())
    const old = await appendAll(log, 'a', 2)
    await sleep(200)
    const read = await log.read('a', '0-0', 10)
    t.same(read, { occurrences: [], head: old[1], floor: old[1] }, 'a read hides them before any append drops them')
    const again = await log.append('a', occurrence('e0'))
    t.equal(again.stored, true)
    const after = await log.read('a', '0-0', 10)
    t.same(after.occurrences.map((found) => found.position), [again.position])
    t.equal(after.floor, old[1])
    t.equal(after.head, again.position)
    t.same((await log.read('a', old[0], 10)).occurrences.map((found) => found.eventId), ['e0'])
  })

  t.test('more old occurrences than one append drops are hidden all the same', async (t) => {
    const log = make({ maxAge: 300 })
    t.teardown(() => log.close?.())
    const old = await appendAll(log, 'a', 150)
    await sleep(350)
    const fresh = await log.append('a', occurrence('fresh'))
    const read = await log.read('a', old[10], 10)
    t.same(read.occurrences.map((found) => found.position), [fresh.position])
    t.equal(read.floor, old[149])
    t.equal((await log.append('a', occurrence('e140'))).stored, true, 'an eventId of a hidden one is free again')
  })

  t.test('past maxBytes the oldest occurrences of any type go first, the floor of their type moving', async (t) => {
    const log = make({ maxBytes: 10 })
    t.teardown(() => log.close?.())
    const [a0, a1] = await appendAll(log, 'a', 2, '"ab"')
    const [b0] = await appendAll(log, 'b', 1, '"cd"', 2)
    t.same(await log.read('a', '0-0', 10), {
      occurrences: [{ position: a1, eventId: 'e1', timestamp: (await log.read('a', a0, 1)).occurrences[0].timestamp, data: '"ab"' }],
      head: a1,
      floor: a0,
    })
    t.equal((await log.read('b', '0-0', 10)).floor, '0-0')
    const big = await log.append('b', occurrence('big', '"0123456789"'))
    t.equal(big.stored, true)
    const a = await log.read('a', '0-0', 10)
    t.same([a.occurrences, a.floor], [[], a1], 'all of a went for it')
    const b = await log.read('b', '0-0', 10)
    t.same([b.occurrences, b.floor, b.head], [[], big.position, big.position], 'one larger than maxBytes is not kept')
    t.not(b0, big.position)
    t.equal((await log.append('a', occurrence('e0', '"x"'))).stored, true, 'the eventId of a dropped one is free again')
    const next = await log.append('b', occurrence('next', '"x"'))
    t.same((await log.read('b', '0-0', 10)).occurrences.map((found) => found.position), [next.position], 'a\'s last went for it')
  })

  t.test('a log that dropped thousands still reads from the right place', async (t) => {
    const log = make({ maxBytes: 1000 })
    t.teardown(() => log.close?.())
    const positions = await appendAll(log, 'a', 2100)
    const read = await log.read('a', '0-0', 3)
    t.same(read.occurrences.map((found) => found.position), positions.slice(1100, 1103))
    t.equal(read.floor, positions[1099])
    t.same((await log.read('a', positions[2000], 200)).occurrences.map((found) => found.eventId).slice(-2), ['e2098', 'e2099'])
    await log.enqueue([], Date.now())
    t.equal(await log.nextDue(), undefined, 'enqueuing nothing queues nothing')
  })
}

t.test('MemoryEventLog', async (t) => {
  t.test('passes eventLogChecks', async (t) => {
    for (const check of eventLogChecks(() => new MemoryEventLog())) await t.test(check.name, () => check.run())
  })
  boundTests(t, (options) => new MemoryEventLog(options))
})

t.test('positions', async (t) => {
  t.equal(isPosition('1700000000000-0'), true)
  t.equal(isPosition('0-0'), true)
  t.equal(isPosition('01-0'), false)
  t.equal(isPosition('1-'), false)
  t.equal(isPosition(5), false)
  t.equal(isPosition('99999999999999999-0'), false, 'past safe integers')
})

/** The hash slot of a Redis Cluster key (CRC16/XMODEM of its hash tag, modulo 16384). */
function keySlot (key: string): number {
  const open = key.indexOf('{')
  const close = open === -1 ? -1 : key.indexOf('}', open + 1)
  const hashed = Buffer.from(close > open + 1 ? key.slice(open + 1, close) : key)
  let crc = 0
  for (const byte of hashed) {
    crc ^= byte << 8
    for (let bit = 0; bit < 8; bit++) crc = crc & 0x8000 ? ((crc << 1) ^ 0x1021) & 0xffff : (crc << 1) & 0xffff
  }
  return crc % 16384
}

withRedis(t, 'RedisEventLog on a real Redis', async (t) => {
  const redis = await startRedis(t)
  let logs = 0
  const make = (options: RedisEventLogOptions = {}) => new RedisEventLog({ url: redis.url, prefix: `test:${++logs}`, ...options })

  t.test('passes eventLogChecks', async (t) => {
    for (const check of eventLogChecks(() => make())) await t.test(check.name, () => check.run())
  })

  boundTests(t, make)

  t.test('one append drops at most 100 occurrences; the next goes on', async (t) => {
    const log = make({ maxBytes: 160 })
    t.teardown(() => log.close())
    const small = await appendAll(log, 'a', 150)
    const big = await log.append('b', occurrence('big', 'x'.repeat(150)))
    t.equal((await log.read('a', '0-0', 200)).floor, small[99], 'the first 100 went')
    await log.append('b', occurrence('next', 'y'))
    const a = await log.read('a', '0-0', 200)
    t.same([a.floor, a.occurrences.length], [small[140], 9], 'the next append dropped what it had to')
    t.equal((await log.read('b', '0-0', 10)).occurrences[0].position, big.position)
  })

  t.test('bad options are named', async (t) => {
    for (const [options, message] of [
      [{ maxAge: 0 }, /RedisEventLog maxAge must be a positive integer, got 0/],
      [{ maxAge: 1.5 }, /RedisEventLog maxAge must be a positive integer, got 1.5/],
      [{ maxBytes: -1 }, /RedisEventLog maxBytes must be a positive integer, got -1/],
      [{ prefix: '' }, /RedisEventLog prefix must be a non-empty string/],
      [{ onError: 'log' }, /RedisEventLog onError must be a function/],
      [{ url: 5 }, /RedisEventLog url must be a string, got 5/],
      [{ client: {} }, /RedisEventLog client must be a redis client/],
    ] as const) {
      t.throws(() => new RedisEventLog(options as unknown as RedisEventLogOptions), { code: 'FST_MOCAPI_INVALID_OPTION', message })
    }
  })

  t.test('a log whose Redis is down fails within seconds, telling onError', async (t) => {
    const errors: unknown[] = []
    const log = new RedisEventLog({ url: `redis://127.0.0.1:${await freePort()}`, onError: (error) => errors.push(error) })
    t.teardown(() => log.close())
    const started = Date.now()
    await t.rejects(log.append('a', occurrence('x')), /Redis \(the event log\) is not reachable/)
    t.ok(Date.now() - started < 4000, 'within the 2 s connect wait')
    t.ok(errors.length > 0)
  })

  t.test('two nodes claiming at once never claim one job twice', async (t) => {
    const prefix = 'two:nodes'
    const nodes = [make({ prefix }), make({ prefix })]
    t.teardown(async () => { for (const log of nodes) await log.close() })
    const ids = Array.from({ length: 500 }, (_, i) => `job-${i}`)
    await nodes[0].enqueue(ids.map((job) => ({ id: job, body: job })), Date.now())
    const claimed = await Promise.all(nodes.map(async (log) => {
      const mine: string[] = []
      for (let batch = await log.claim(7, 60_000); batch.length > 0; batch = await log.claim(7, 60_000)) {
        mine.push(...batch.map((job) => job.id))
      }
      return mine
    }))
    const all = claimed.flat()
    t.equal(all.length, 500)
    t.equal(new Set(all).size, 500, 'no job twice')
    t.ok(claimed.every((mine) => mine.length > 0), 'both nodes took part')
  })

  t.test('every key of a log is in one hash slot, the slot of its prefix', async (t) => {
    const raw = createClient({ url: redis.url })
    await raw.connect()
    t.teardown(() => raw.close())
    const log = make({ prefix: 'slot:check', maxBytes: 5 })
    t.teardown(() => log.close())
    await log.putSubscription({ id: 's', name: 'a', owner: 'o', sealed: 'x', expiresAt: Date.now() + 60_000 }, 5)
    await appendAll(log, 'a', 3, '"ab"')
    await appendAll(log, 'b', 2)
    await log.mark('m', 60_000)
    await log.enqueue([{ id: 'j', body: 'b' }], Date.now())
    await log.finish('j', 60_000)
    await log.read('a', '0-0', 10)
    const keys = await raw.keys('*slot:check*')
    t.ok(keys.length >= 10, `${keys.length} keys`)
    for (const key of keys) t.equal(keySlot(key), keySlot('{slot:check}'), key)
  })

  t.test('a client is copied into a connection of the log\'s own', async (t) => {
    const client = createClient({ url: redis.url })
    const log = make({ client, url: undefined })
    t.teardown(() => log.close())
    t.equal((await log.append('a', occurrence('x'))).stored, true)
    t.equal(client.isOpen, false, 'the given client is left alone')
  })
})

t.test('MemoryEventLog claims by due time among thousands of jobs, each job once per lease, looking only at what is due', async (t) => {
  let now = 1_000_000
  const log = new MemoryEventLog({ now: () => now })
  const ids = Array.from({ length: 3000 }, (_, i) => `job-${i}`)
  await log.enqueue(ids.map((id) => ({ id, body: id })), now + 10_000)
  // Spread them over the next 3 s, some moved twice: a moved job's old place is stale.
  for (const [i, id] of ids.entries()) await log.retry(id, now + (i * 7919) % 3000)
  for (const id of ids.slice(0, 500)) await log.retry(id, now + 2999)
  t.equal(await log.nextDue(), now + Math.min(...ids.slice(500).map((_, k) => ((k + 500) * 7919) % 3000)), 'the earliest due')
  const seen = new Map<string, number>()
  for (let step = 0; step <= 3000; step += 100) {
    now = 1_000_000 + step
    for (const job of await log.claim(10_000, 60_000)) {
      t.ok(seen.get(job.id) === undefined, `${job.id} claimed once`)
      seen.set(job.id, now)
    }
  }
  t.equal(seen.size, 3000, 'every job claimed')
  t.ok([...seen.entries()].slice(0, 500).every(([id, at]) => ids.indexOf(id) >= 500 || at >= 1_002_999), 'a moved job is claimed at its new time')
  t.equal(await log.claim(10, 60_000).then((jobs) => jobs.length), 0, 'none is due again within its lease')
  now += 60_000
  t.equal((await log.claim(10_000, 60_000)).length, 3000, 'all are due again once their leases lapse')
  for (const id of ids) await log.finish(id, 1000)
  t.equal(await log.nextDue(), undefined)
})
