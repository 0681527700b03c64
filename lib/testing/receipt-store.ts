import assert from 'node:assert/strict'
import { randomBytes } from 'node:crypto'
import type { ReceiptStore, StoredReceipt } from '../receipts/store.js'
import { storeChecks } from './task-store.js'

/** One check of a {@link ReceiptStore}: run it in any test runner; it throws an AssertionError on failure. */
export interface ReceiptStoreCheck {
  readonly name: string
  run (): Promise<void>
}

const id = (): string => randomBytes(16).toString('base64url')
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms))

/**
 * The checks every {@link ReceiptStore} must pass, mocapi's own and yours: one claim among many, a lease that lapses,
 * completion by the holder only, release, and expiry. `make` gives a fresh store for each check, closed after it.
 *
 * ```ts
 * import { receiptStoreChecks } from 'mocapi/testing'
 * for (const check of receiptStoreChecks(() => new PostgresReceiptStore(pool))) test(check.name, () => check.run())
 * ```
 */
export function receiptStoreChecks (make: () => ReceiptStore | Promise<ReceiptStore>): ReceiptStoreCheck[] {
  const checks: Array<[string, (store: ReceiptStore) => Promise<void>]> = [
    ['of many claims of one name at once, exactly one is taken; the others get the running receipt', async (store) => {
      const name = id()
      const holders = Array.from({ length: 20 }, id)
      const answers = await Promise.all(holders.map((holder) => store.claim(name, holder, `sealed-${holder}`, 30_000)))
      const taken = answers.filter((answer) => answer === 'claimed')
      assert.equal(taken.length, 1, 'one claim taken')
      const winner = holders[answers.indexOf('claimed')]
      for (const answer of answers) {
        if (answer === 'claimed') continue
        assert.equal((answer as StoredReceipt).state, 'running')
        assert.equal((answer as StoredReceipt).holder, winner)
        assert.equal((answer as StoredReceipt).sealed, `sealed-${winner}`)
      }
    }],
    ['a completed receipt is read back as stored, by any claim too, and only its holder completes it', async (store) => {
      const name = id()
      const holder = id()
      assert.equal(await store.claim(name, holder, 'f', 30_000), 'claimed')
      assert.equal(await store.complete(name, id(), 'not mine', 60_000), 'lost', 'another holder cannot complete it')
      assert.equal(await store.complete(name, holder, 'the reply', 60_000), 'written')
      const read = await store.read(name) as StoredReceipt
      assert.equal(read.state, 'done')
      assert.equal(read.holder, holder)
      assert.equal(read.sealed, 'the reply')
      assert.ok(read.until > Date.now() + 50_000, 'it lives its ttl')
      assert.deepEqual(await store.claim(name, id(), 'f', 30_000), read, 'a later claim gets the done receipt')
    }],
    ['a lapsed lease frees the name for the next claim, and the first holder can no longer complete it', async (store) => {
      const name = id()
      const first = id()
      assert.equal(await store.claim(name, first, 'f', 50), 'claimed')
      assert.notEqual(await store.claim(name, id(), 'f', 50), 'claimed', 'held while the lease runs')
      await sleep(120)
      const second = id()
      assert.equal(await store.claim(name, second, 'f', 30_000), 'claimed', 'taken over once it lapsed')
      assert.equal(await store.complete(name, first, 'late', 60_000), 'lost')
      assert.equal((await store.read(name) as StoredReceipt).holder, second)
    }],
    ['a renewed lease holds past its first term; a renewal by anyone else fails', async (store) => {
      const name = id()
      const holder = id()
      assert.equal(await store.claim(name, holder, 'f', 150), 'claimed')
      await sleep(80)
      assert.equal(await store.renew(name, holder, 300), true)
      assert.equal(await store.renew(name, id(), 300), false)
      await sleep(120)
      assert.notEqual(await store.claim(name, id(), 'f', 30_000), 'claimed', 'still held after the first term')
    }],
    ['a released claim frees the name; a release by anyone else changes nothing', async (store) => {
      const name = id()
      const holder = id()
      assert.equal(await store.claim(name, holder, 'f', 30_000), 'claimed')
      await store.release(name, id())
      assert.equal((await store.read(name) as StoredReceipt).holder, holder)
      await store.release(name, holder)
      assert.equal(await store.read(name), undefined)
      assert.equal(await store.claim(name, id(), 'f', 30_000), 'claimed')
    }],
    ['a done receipt expires at its ttl', async (store) => {
      const name = id()
      const holder = id()
      await store.claim(name, holder, 'f', 30_000)
      await store.complete(name, holder, 'reply', 80)
      await sleep(150)
      assert.equal(await store.read(name), undefined)
      assert.equal(await store.claim(name, id(), 'f', 30_000), 'claimed')
    }],
    ['an unknown name reads undefined, and renews and completes nothing', async (store) => {
      const name = id()
      assert.equal(await store.read(name), undefined)
      assert.equal(await store.renew(name, id(), 1000), false)
      assert.equal(await store.complete(name, id(), 'x', 1000), 'lost')
    }],
  ]
  return storeChecks(make, checks)
}
