import t from 'tap'
import { InvalidRequestStateError } from '../../lib/errors.js'
import { ephemeralKey } from '../../lib/mrtr/keys.js'
import { KeyRing } from '../../lib/mrtr/seal.js'
import { TaskSealer, type TaskState } from '../../lib/tasks/record.js'
import type { StoredTask } from '../../lib/tasks/store.js'

function state (n: number, text = `result ${n}`): TaskState {
  return {
    principal: `user-${n}`,
    callId: n,
    params: { name: 'job', arguments: { n } },
    capabilities: {},
    info: undefined,
    ttl: 60_000,
    pollInterval: 0,
    ledger: [],
    round: 0,
    result: { content: [{ type: 'text', text }] },
  }
}

const stored = (sealed: string): StoredTask =>
  ({ id: 'x', version: 1, status: 'completed', createdAt: 0, updatedAt: 0, expiresAt: 1, owner: 'o', sealed })

t.test('a sealed state opens to itself, every time, however many were opened between', async (t) => {
  const sealer = new TaskSealer(new KeyRing([ephemeralKey()]), 1_000_000)
  const sealed = Array.from({ length: 300 }, (_, n) => sealer.seal(state(n)))
  for (const [n, one] of sealed.entries()) t.same(sealer.open(stored(one)), JSON.parse(JSON.stringify(state(n))))
  // Opened again, after 299 others: the first ones were let go, the last ones are kept.
  t.equal(sealer.open(stored(sealed[0])).principal, 'user-0')
  t.equal(sealer.open(stored(sealed[299])).principal, 'user-299')
  t.ok(Object.isFrozen(sealer.open(stored(sealed[5])).result), 'what open gives is frozen, all the way down')
})

t.test('a large state opens as well; a tampered one is refused even after its original was opened', async (t) => {
  const sealer = new TaskSealer(new KeyRing([ephemeralKey()]), 1_000_000)
  const large = sealer.seal(state(1, 'x'.repeat(40_000)))
  t.equal((sealer.open(stored(large)).result as any).content[0].text.length, 40_000)
  t.equal((sealer.open(stored(large)).result as any).content[0].text.length, 40_000)
  const small = sealer.seal(state(2))
  t.equal(sealer.open(stored(small)).principal, 'user-2')
  const tampered = small.slice(0, -6) + (small.endsWith('AAAAAA') ? 'BBBBBB' : 'AAAAAA')
  t.throws(() => sealer.open(stored(tampered)), InvalidRequestStateError)
  const other = new TaskSealer(new KeyRing([ephemeralKey()]), 1_000_000)
  t.throws(() => other.open(stored(small)), InvalidRequestStateError, 'another ring does not open it')
})
