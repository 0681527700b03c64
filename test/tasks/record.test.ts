import t from 'tap'
import { InvalidRequestStateError } from '../../lib/errors.js'
import { ephemeralKey } from '../../lib/seal/keys.js'
import { KeyRing, Sealer } from '../../lib/seal/seal.js'
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

const record = (id = 'x') => ({ id, version: 1, status: 'completed' as const, createdAt: 0, updatedAt: 0, expiresAt: 1, owner: 'o' })
const stored = (sealed: string, id = 'x'): StoredTask => ({ ...record(id), sealed })

t.test('a sealed state opens to itself, every time, however many were opened between', async (t) => {
  const sealer = new TaskSealer(new KeyRing([ephemeralKey()]), 1_000_000)
  const sealed = Array.from({ length: 300 }, (_, n) => sealer.seal(record(), state(n)).sealed)
  for (const [n, one] of sealed.entries()) t.same(sealer.open(stored(one)), JSON.parse(JSON.stringify(state(n))))
  // Opened again, after 299 others: the first ones were let go, the last ones are kept.
  t.equal(sealer.open(stored(sealed[0])).principal, 'user-0')
  t.equal(sealer.open(stored(sealed[299])).principal, 'user-299')
  t.ok(Object.isFrozen(sealer.open(stored(sealed[5])).result), 'what open gives is frozen, all the way down')
})

t.test('a large state opens as well; a tampered one is refused even after its original was opened', async (t) => {
  const sealer = new TaskSealer(new KeyRing([ephemeralKey()]), 1_000_000)
  const large = sealer.seal(record(), state(1, 'x'.repeat(40_000))).sealed
  t.equal((sealer.open(stored(large)).result as any).content[0].text.length, 40_000)
  t.equal((sealer.open(stored(large)).result as any).content[0].text.length, 40_000)
  const small = sealer.seal(record(), state(2)).sealed
  t.equal(sealer.open(stored(small)).principal, 'user-2')
  const tampered = small.slice(0, -6) + (small.endsWith('AAAAAA') ? 'BBBBBB' : 'AAAAAA')
  t.throws(() => sealer.open(stored(tampered)), InvalidRequestStateError)
  const other = new TaskSealer(new KeyRing([ephemeralKey()]), 1_000_000)
  t.throws(() => other.open(stored(small)), InvalidRequestStateError, 'another ring does not open it')
})

t.test('a state opens only in the task it was sealed for, opened before or not; one sealed before ids were bound still opens', async (t) => {
  const ring = new KeyRing([ephemeralKey()])
  const sealer = new TaskSealer(ring, 1_000_000)
  const mine = sealer.seal(record('task-a'), state(1))
  t.equal(mine.id, 'task-a')
  t.throws(() => sealer.open({ ...mine, id: 'task-b' }), { reason: 'authentication failed' } as never, 'kept opened, it is still refused under another id')
  const fresh = new TaskSealer(ring, 1_000_000)
  t.throws(() => fresh.open({ ...mine, id: 'task-b' }), { reason: 'authentication failed' } as never, 'and refused when it must be decrypted')
  t.equal(fresh.open(mine).principal, 'user-1')
  const unbound = new Sealer(ring, 4, 1_000_000).seal(JSON.stringify(state(2)))
  t.equal(fresh.open(stored(unbound, 'any')).principal, 'user-2')
  t.throws(() => fresh.open(stored(new Sealer(ring, 1, 1_000_000).seal('[]'))), { reason: 'unknown version' } as never, 'a requestState is no task')
})
