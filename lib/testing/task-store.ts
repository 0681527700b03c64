import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import type { StoredTask, TaskStore } from '../tasks/store.js'

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
      assert.equal(await store.create(created, 10), true)
      assert.deepEqual(await store.get(created.id), created)
      const plain = task()
      await store.create(plain, 10)
      assert.equal('leaseUntil' in (await store.get(plain.id) as StoredTask), false, 'an absent field stays absent')
    }],
    ['an unknown id is undefined', async (store) => {
      assert.equal(await store.get(randomBytes(16).toString('base64url')), undefined)
    }],
    ['a second create of an id is refused, and leaves the first', async (store) => {
      const created = task()
      await store.create(created, 10)
      await assert.rejects(store.create({ ...created, sealed: 'other' }, 10))
      assert.deepEqual(await store.get(created.id), created)
    }],
    ['an update replaces the version before it only', async (store) => {
      const first = task()
      await store.create(first, 10)
      const second = next(first, { status: 'input_required' })
      assert.equal(await store.update(second), true)
      assert.equal(await store.update(second), false, 'the same version again')
      assert.equal(await store.update(next(next(second))), false, 'a version skipped')
      assert.equal(await store.update(next(first, { sealed: 'stale' })), false, 'a stale writer')
      assert.deepEqual(await store.get(first.id), second)
      assert.equal(await store.update(task()), false, 'an unknown task')
    }],
    ['of concurrent updates from one version, exactly one wins', async (store) => {
      const first = task()
      await store.create(first, 10)
      const writers = Array.from({ length: 20 }, (_, i) => next(first, { sealed: `writer ${i}` }))
      const won = await Promise.all(writers.map((writer) => store.update(writer)))
      assert.equal(won.filter(Boolean).length, 1)
      assert.equal((await store.get(first.id))?.sealed, writers[won.indexOf(true)].sealed)
    }],
    ['a task is gone once it expires, and cannot be updated', async (store) => {
      const short = task({ expiresAt: Date.now() + 300 })
      await store.create(short, 10)
      assert.notEqual(await store.get(short.id), undefined)
      await sleep(450)
      assert.equal(await store.get(short.id), undefined)
      assert.equal(await store.update(next(short)), false)
    }],
    ['an owner holds at most perOwner live tasks; others are not counted, expired ones free their place', async (store) => {
      const owner = randomBytes(16).toString('base64url')
      const soon = Date.now() + 300
      for (let i = 0; i < 3; i++) assert.equal(await store.create(task({ owner, expiresAt: soon }), 3), true)
      assert.equal(await store.create(task({ owner }), 3), false, 'past the bound')
      assert.equal(await store.create(task(), 3), true, 'another owner')
      await sleep(450)
      assert.equal(await store.create(task({ owner }), 3), true, 'the expired ones no longer count')
    }],
    ['a large sealed state survives the round trip', async (store) => {
      const big = task({ sealed: randomBytes(768 * 1024).toString('base64url') })
      await store.create(big, 10)
      assert.equal((await store.get(big.id))?.sealed, big.sealed)
    }],
  ]
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
