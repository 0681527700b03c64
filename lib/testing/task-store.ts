import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import type { StoredTask, TaskQuota, TaskStore } from '../tasks/store.js'

/** One check of a {@link TaskStore}: run it in your test runner of choice; it throws an AssertionError on failure. */
export interface TaskStoreCheck {
  readonly name: string
  run (): Promise<void>
}

function task (fields: Partial<StoredTask> = {}): StoredTask {
  const now = Date.now()
  return {
    id: randomBytes(16).toString('base64url'),
    version: 1,
    status: 'working',
    createdAt: now,
    updatedAt: now,
    expiresAt: now + 60_000,
    owner: randomBytes(16).toString('base64url'),
    sealed: randomBytes(48).toString('base64url'),
    ...fields,
  }
}

function next (previous: StoredTask, fields: Partial<StoredTask> = {}): StoredTask {
  return { ...previous, version: previous.version + 1, updatedAt: previous.updatedAt + 1, ...fields }
}

/** Room enough for whatever a check stores. */
const ROOMY: TaskQuota = { tasks: 10, bytes: 16 * 1024 * 1024 }

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * The checks every {@link TaskStore} must pass, mocapi's own and yours (Postgres, DynamoDB, …): durable create,
 * compare-and-set update under contention, expiry, and the per-owner bound. `make` gives a fresh store for each
 * check, which is closed after it.
 *
 * ```ts
 * import { taskStoreChecks } from 'mocapi/testing'
 * for (const check of taskStoreChecks(() => new PostgresTaskStore(pool))) test(check.name, () => check.run())
 * ```
 */
export function taskStoreChecks (make: () => TaskStore | Promise<TaskStore>): TaskStoreCheck[] {
  const checks: Array<[string, (store: TaskStore) => Promise<void>]> = [
    ['a created task is found at once, as it was stored', async (store) => {
      const created = task({ leaseUntil: Date.now() + 30_000 })
      assert.equal(await store.create(created, ROOMY), 'written')
      assert.deepEqual(await store.get(created.id), created)
      const plain = task()
      await store.create(plain, ROOMY)
      assert.equal('leaseUntil' in (await store.get(plain.id) as StoredTask), false, 'an absent field stays absent')
    }],
    ['an unknown id is undefined', async (store) => {
      assert.equal(await store.get(randomBytes(16).toString('base64url')), undefined)
    }],
    ['a second create of an id is refused, and leaves the first', async (store) => {
      const created = task()
      await store.create(created, ROOMY)
      await assert.rejects(store.create({ ...created, sealed: 'other' }, ROOMY))
      assert.deepEqual(await store.get(created.id), created)
    }],
    ['an update replaces the version before it only', async (store) => {
      const first = task()
      await store.create(first, ROOMY)
      const second = next(first, { status: 'input_required' })
      assert.equal(await store.update(second), 'written')
      assert.equal(await store.update(second), 'stale', 'the same version again')
      assert.equal(await store.update(next(next(second))), 'stale', 'a version skipped')
      assert.equal(await store.update(next(first, { sealed: 'stale' })), 'stale', 'a stale writer')
      assert.deepEqual(await store.get(first.id), second)
      assert.equal(await store.update(task()), 'stale', 'an unknown task')
    }],
    ['of concurrent updates from one version, exactly one wins', async (store) => {
      const first = task()
      await store.create(first, ROOMY)
      const writers = Array.from({ length: 20 }, (_, i) => next(first, { sealed: `writer ${i}` }))
      const won = await Promise.all(writers.map((writer) => store.update(writer)))
      assert.equal(won.filter((write) => write === 'written').length, 1)
      assert.equal((await store.get(first.id))?.sealed, writers[won.indexOf('written')].sealed)
    }],
    ['a task is gone once it expires, and cannot be updated', async (store) => {
      const short = task({ expiresAt: Date.now() + 300 })
      await store.create(short, ROOMY)
      assert.notEqual(await store.get(short.id), undefined)
      await sleep(450)
      assert.equal(await store.get(short.id), undefined)
      assert.equal(await store.update(next(short)), 'stale')
    }],
    ['an owner holds at most quota.tasks live tasks; others are not counted, expired ones free their place', async (store) => {
      const owner = randomBytes(16).toString('base64url')
      const soon = Date.now() + 300
      const quota = { tasks: 3, bytes: ROOMY.bytes }
      for (let i = 0; i < 3; i++) assert.equal(await store.create(task({ owner, expiresAt: soon }), quota), 'written')
      assert.equal(await store.create(task({ owner }), quota), 'full', 'past the bound')
      assert.equal(await store.create(task(), quota), 'written', 'another owner')
      await sleep(450)
      assert.equal(await store.create(task({ owner }), quota), 'written', 'the expired ones no longer count')
    }],
    ['an owner holds at most quota.bytes of sealed state; expired tasks free theirs', async (store) => {
      const owner = randomBytes(16).toString('base64url')
      const quota = { tasks: 10, bytes: 1000 }
      const sealed = (length: number) => 'x'.repeat(length)
      const first = task({ owner, sealed: sealed(600), expiresAt: Date.now() + 300 })
      assert.equal(await store.create(first, quota), 'written')
      assert.equal(await store.create(task({ owner, sealed: sealed(401) }), quota), 'full', 'one character past the bound')
      assert.equal(await store.create(task({ sealed: sealed(900) }), quota), 'written', 'another owner')
      const second = task({ owner, sealed: sealed(400) })
      assert.equal(await store.create(second, quota), 'written', 'exactly the bound')
      await sleep(450)
      assert.equal(await store.create(task({ owner, sealed: sealed(600) }), quota), 'written', 'the expired task no longer counts')
      assert.equal(await store.get(second.id) !== undefined, true)
    }],
    ['an update that grows a task past its owner\'s quota is full and changes nothing; one that shrinks it, or has no quota, is written', async (store) => {
      const owner = randomBytes(16).toString('base64url')
      const quota = { tasks: 10, bytes: 1000 }
      const first = task({ owner, sealed: 'x'.repeat(500) })
      await store.create(first, quota)
      await store.create(task({ owner, sealed: 'x'.repeat(300) }), quota)
      const grown = next(first, { sealed: 'y'.repeat(701) })
      assert.equal(await store.update(grown, quota), 'full')
      assert.deepEqual(await store.get(first.id), first, 'unchanged')
      const fits = next(first, { sealed: 'y'.repeat(700) })
      assert.equal(await store.update(fits, quota), 'written', 'exactly the bound')
      const shrunk = next(fits, { sealed: 'z'.repeat(10) })
      assert.equal(await store.update(shrunk, { tasks: 10, bytes: 0 }), 'written', 'a smaller state always fits')
      const unchecked = next(shrunk, { sealed: 'w'.repeat(5000) })
      assert.equal(await store.update(unchecked), 'written', 'no quota, no bound')
      assert.equal(await store.create(task({ owner, sealed: 'x' }), quota), 'full', 'the unchecked write still counts')
    }],
    ['a large sealed state survives the round trip', async (store) => {
      const big = task({ sealed: randomBytes(768 * 1024).toString('base64url') })
      await store.create(big, ROOMY)
      assert.equal((await store.get(big.id))?.sealed, big.sealed)
    }],
  ]
  return storeChecks(make, checks)
}

/** Each check run against a fresh store from `make`, closed after it: what a store's checks share. */
export function storeChecks<S extends { close?: () => unknown }> (
  make: () => S | Promise<S>,
  checks: Array<[string, (store: S) => Promise<void>]>
): Array<{ readonly name: string, run (): Promise<void> }> {
  return checks.map(([name, check]) => ({
    name,
    async run () {
      const store = await make()
      try {
        await check(store)
      } finally {
        await store.close?.()
      }
    },
  }))
}
