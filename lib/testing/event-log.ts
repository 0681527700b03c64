import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import { comparePositions, type EventLog, type StoredSubscription } from '../events/log.js'
import { storeChecks } from './task-store.js'

/** One check of an {@link EventLog}: run it in any test runner; it throws an AssertionError on failure. */
export interface EventLogCheck {
  readonly name: string
  run (): Promise<void>
}

const id = (): string => randomBytes(12).toString('base64url')
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))
const occurrence = (data: string, eventId = id()) => ({ eventId, timestamp: Date.now(), data })

function subscription (name: string, owner: string, ttlMs = 60_000): StoredSubscription {
  return { id: id(), name, owner, sealed: `sealed-${id()}`, expiresAt: Date.now() + ttlMs }
}

type Check = [string, (log: EventLog) => Promise<void>]

const occurrenceChecks: Check[] = [
  ['appends are read back in order after any position, at most the number asked, with the head', async (log) => {
    const name = id()
    const positions: string[] = []
    for (let i = 0; i < 5; i++) {
      const appended = await log.append(name, occurrence(`{"n":${i}}`))
      assert.equal(appended.stored, true)
      positions.push(appended.position)
    }
    for (let i = 1; i < 5; i++) assert.ok(comparePositions(positions[i - 1], positions[i]) < 0, 'positions increase')
    const all = await log.read(name, '0-0', 10)
    assert.deepEqual(all.occurrences.map((found) => found.data), [0, 1, 2, 3, 4].map((n) => `{"n":${n}}`))
    assert.deepEqual(all.occurrences.map((found) => found.position), positions)
    assert.equal(all.head, positions[4])
    assert.equal(all.floor, '0-0', 'nothing dropped')
    const page = await log.read(name, positions[1], 2)
    assert.deepEqual(page.occurrences.map((found) => found.position), positions.slice(2, 4))
    const { eventId, timestamp } = page.occurrences[0]
    assert.equal(typeof eventId, 'string')
    assert.ok(Math.abs(timestamp - Date.now()) < 60_000, 'the timestamp is kept')
  }],
  ['a second append of an eventId still kept finds the first, and stores nothing', async (log) => {
    const name = id()
    const first = await log.append(name, occurrence('"a"', 'same'))
    const again = await log.append(name, occurrence('"b"', 'same'))
    assert.deepEqual(again, { position: first.position, stored: false })
    const read = await log.read(name, '0-0', 10)
    assert.deepEqual(read.occurrences.map((found) => found.data), ['"a"'])
    assert.equal((await log.append(id(), occurrence('"c"', 'same'))).stored, true, 'another type has its own ids')
  }],
  ['a read after the head, or of a type never appended to, is empty', async (log) => {
    const name = id()
    assert.deepEqual(await log.read(name, '0-0', 10), { occurrences: [], head: '0-0', floor: '0-0' })
    const { position } = await log.append(name, occurrence('1'))
    const read = await log.read(name, position, 10)
    assert.deepEqual(read.occurrences, [])
    assert.equal(read.head, position)
    const other = await log.read(id(), '0-0', 10)
    assert.deepEqual(other, { occurrences: [], head: '0-0', floor: '0-0' }, 'types are apart')
  }],
]

const subscriptionChecks: Check[] = [
  ['a subscription is put, read, listed under its type, replaced, and deleted once', async (log) => {
    const name = id()
    const first = subscription(name, 'alice')
    assert.equal(await log.putSubscription(first, 10), 'stored')
    assert.deepEqual(await log.subscription(first.id), first)
    assert.deepEqual(await log.subscriptions(name), [first])
    assert.deepEqual(await log.subscriptions(id()), [], 'another type has none')
    const moved = { ...first, name: id(), sealed: 'renewed' }
    assert.equal(await log.putSubscription(moved, 10), 'stored')
    assert.deepEqual(await log.subscription(first.id), moved)
    assert.deepEqual(await log.subscriptions(name), [], 'no longer listed under its old type')
    assert.deepEqual(await log.subscriptions(moved.name), [moved])
    assert.equal(await log.deleteSubscription(first.id), true)
    assert.equal(await log.deleteSubscription(first.id), false)
    assert.equal(await log.subscription(first.id), undefined)
    assert.deepEqual(await log.subscriptions(moved.name), [])
  }],
  ['an owner holding maxPerOwner live subscriptions is full; its own may still be renewed', async (log) => {
    const name = id()
    const held = [subscription(name, 'bob'), subscription(name, 'bob')]
    for (const one of held) assert.equal(await log.putSubscription(one, 2), 'stored')
    const third = subscription(name, 'bob')
    assert.equal(await log.putSubscription(third, 2), 'full')
    assert.equal(await log.subscription(third.id), undefined, 'nothing written')
    assert.equal(await log.putSubscription({ ...held[0], sealed: 'renewed' }, 2), 'stored')
    assert.equal(await log.putSubscription(subscription(name, 'carol'), 2), 'stored', 'another owner is apart')
    assert.equal((await log.subscriptions(name)).length, 3)
    await log.deleteSubscription(held[1].id)
    assert.equal(await log.putSubscription(third, 2), 'stored', 'a deleted one frees its place')
  }],
  ['an expired subscription is not read, listed, deleted, nor counted against its owner', async (log) => {
    const name = id()
    const brief = subscription(name, 'dave', 60)
    assert.equal(await log.putSubscription(brief, 1), 'stored')
    await sleep(120)
    assert.equal(await log.subscription(brief.id), undefined)
    assert.deepEqual(await log.subscriptions(name), [])
    assert.equal(await log.putSubscription(subscription(name, 'dave'), 1), 'stored')
    assert.equal(await log.deleteSubscription(brief.id), false)
  }],
  ['a key is marked for its time', async (log) => {
    const key = id()
    assert.equal(await log.marked(key), false)
    await log.mark(key, 80)
    assert.equal(await log.marked(key), true)
    await sleep(150)
    assert.equal(await log.marked(key), false)
    const other = id()
    await log.mark(other, 60_000)
    assert.equal(await log.marked(key), false, 'marking another key does not bring it back')
    assert.equal(await log.marked(other), true)
  }],
]

const jobChecks: Check[] = [
  ['an append enqueues its fan-out job only while its type has a live subscription', async (log) => {
    const name = id()
    await log.putSubscription(subscription(id(), 'erin'), 10)
    await log.append(name, occurrence('1'))
    assert.deepEqual(await log.claim(10, 30_000), [], 'no subscription of its type, no job')
    await log.putSubscription(subscription(name, 'erin', 150), 10)
    const { position } = await log.append(name, occurrence('2'))
    assert.deepEqual(await log.claim(10, 30_000), [{ id: `fanout|${name}|${position}`, body: '', attempt: 0 }])
    await sleep(200)
    await log.append(name, occurrence('3'))
    assert.deepEqual(await log.claim(10, 30_000), [], 'its subscription expired')
  }],
  ['a job queued or finished within its time is not enqueued again', async (log) => {
    await log.enqueue([{ id: 'a', body: 'first' }], Date.now())
    await log.enqueue([{ id: 'a', body: 'second' }, { id: 'b', body: 'b' }], Date.now())
    const claimed = await log.claim(10, 30_000)
    assert.deepEqual(claimed.map((job) => [job.id, job.body]).sort(), [['a', 'first'], ['b', 'b']])
    await log.finish('a', 80)
    await log.enqueue([{ id: 'a', body: 'third' }], Date.now())
    assert.deepEqual(await log.claim(10, 0), [], 'a finished job stays finished for keepMs')
    await sleep(150)
    await log.enqueue([{ id: 'a', body: 'fourth' }], Date.now())
    assert.deepEqual(await log.claim(10, 30_000), [{ id: 'a', body: 'fourth', attempt: 0 }])
  }],
  ['of many concurrent claims, each job goes to one, at most `max` each', async (log) => {
    const ids = Array.from({ length: 60 }, (_, i) => `job-${i}`)
    await log.enqueue(ids.map((job) => ({ id: job, body: job })), Date.now())
    const claims = await Promise.all(Array.from({ length: 8 }, () => log.claim(10, 30_000)))
    for (const claimed of claims) assert.ok(claimed.length <= 10)
    const all = claims.flat().map((job) => job.id)
    assert.equal(new Set(all).size, all.length, 'no job claimed twice')
    assert.equal(all.length, 60, 'every job claimed')
    assert.deepEqual(await log.claim(10, 30_000), [], 'all held by their leases')
  }],
  ['a lapsed lease makes a job claimable again, its attempt one more', async (log) => {
    await log.enqueue([{ id: 'lease', body: 'x' }], Date.now())
    assert.deepEqual(await log.claim(1, 60), [{ id: 'lease', body: 'x', attempt: 0 }])
    assert.deepEqual(await log.claim(1, 60), [])
    await sleep(120)
    assert.deepEqual(await log.claim(1, 60), [{ id: 'lease', body: 'x', attempt: 1 }])
  }],
  ['nextDue tells the earliest due time; a retried job is due when asked; a finished one is gone', async (log) => {
    assert.equal(await log.nextDue(), undefined)
    const later = Date.now() + 60_000
    await log.enqueue([{ id: 'late', body: '' }], later + 1000)
    await log.enqueue([{ id: 'soon', body: '' }], later)
    assert.equal(await log.nextDue(), later)
    assert.deepEqual(await log.claim(10, 30_000), [], 'not due yet')
    await log.retry('soon', Date.now())
    await log.retry('unknown', Date.now())
    const claimedAt = Date.now()
    assert.deepEqual(await log.claim(10, 30_000), [{ id: 'soon', body: '', attempt: 0 }])
    const leased = await log.nextDue() as number
    assert.ok(leased >= claimedAt + 30_000 && leased <= Date.now() + 30_000, 'a claimed job is due at its lease\'s end')
    await log.retry('soon', Date.now())
    assert.deepEqual(await log.claim(10, 30_000), [{ id: 'soon', body: '', attempt: 1 }])
    await log.finish('soon', 60_000)
    assert.equal(await log.nextDue(), later + 1000, 'the unknown job was not queued by retry')
    await log.finish('late', 60_000)
    assert.equal(await log.nextDue(), undefined)
  }],
]

/**
 * The checks every {@link EventLog} must pass, mocapi's own and yours: order, limits and positions of reads, eventId
 * dedup, subscriptions and their per-owner bound, marks, fan-out jobs, job claims among many, leases, retries and
 * finished jobs. `make` gives a fresh, empty log (its default limits) for each check, closed after it.
 *
 * ```ts
 * import { eventLogChecks } from 'mocapi/testing'
 * for (const check of eventLogChecks(() => new PostgresEventLog(pool))) test(check.name, () => check.run())
 * ```
 */
export function eventLogChecks (make: () => EventLog | Promise<EventLog>): EventLogCheck[] {
  return storeChecks(make, [...occurrenceChecks, ...subscriptionChecks, ...jobChecks])
}
