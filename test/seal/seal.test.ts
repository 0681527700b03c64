import t from 'tap'
import { Journal } from '../../lib/journal.js'
import { readFileSync } from 'node:fs'
import { InvalidRequestStateError } from '../../lib/errors.js'
import { SessionCodec } from '../../lib/legacy/session.js'
import { RequestStateCodec } from '../../lib/modern/codec.js'
import { ephemeralKey, parseKeys } from '../../lib/seal/keys.js'
import { KeyRing, Sealer } from '../../lib/seal/seal.js'
import { TaskSealer } from '../../lib/tasks/record.js'
import { requestedSchema } from '../../lib/index.js'
import { build, call } from '../helpers.js'

/** A fixture's payload, written when the journal was spelled `ledger: [{ k, f, r? }]`, as the codec now reads it. */
function payloadOf ({ ledger, ...rest }: { ledger: Array<{ k: string, f: string, r?: unknown }> }): object {
  return { ...rest, journal: new Journal(ledger.map((slot) => 'r' in slot ? { key: slot.k, fingerprint: slot.f, answer: slot.r } : { key: slot.k, fingerprint: slot.f })) }
}

// Tokens and a session id sealed by mocapi before tokens had a salt (version 1).
const fixture = JSON.parse(readFileSync(new URL('../fixtures/version-1-tokens.json', import.meta.url), 'utf8'))

function reason (fn: () => unknown): string {
  try {
    fn()
  } catch (error) {
    if (error instanceof InvalidRequestStateError) return error.reason
    throw error
  }
  throw new Error('expected a refusal')
}

const saltOf = (token: string) => Buffer.from(token, 'base64url').subarray(5, 21).toString('hex')
const nonceOf = (token: string) => Buffer.from(token, 'base64url').subarray(21, 33).toString('hex')

t.test('a version 2 token carries its epoch\'s salt: the tokens of an epoch share it and its key, each with a nonce of its own', async (t) => {
  const ring = new KeyRing([ephemeralKey()])
  const sealer = new Sealer(ring, 2, 4096, 3)
  const tokens = Array.from({ length: 7 }, () => sealer.seal('[]'))
  const a = Buffer.from(tokens[0], 'base64url')
  t.equal(a[0], 0x12, 'the kind byte says version 2')
  t.equal(a.length, 1 + 4 + 16 + 12 + 2 + 16, 'kind, key id, salt, nonce, ciphertext, tag')
  t.same(tokens.map(saltOf).map((salt) => [...new Set(tokens.map(saltOf))].indexOf(salt)), [0, 0, 0, 1, 1, 1, 2], 'three seals an epoch, then a new salt')
  t.equal(new Set(tokens.map(nonceOf)).size, 7, 'every nonce its own')
  t.equal(sealer.open(a.toString('base64url')), '[]')
  const elsewhere = new Sealer(ring, 2, 4096)
  t.same(tokens.map((token) => elsewhere.open(token)), Array(7).fill('[]'), 'another node opens every epoch, the spent ones too')
  t.equal(elsewhere.keptKeys, 3, 'and keeps one key per salt it verified')
  // The salt is bound through the key: a token with another salt opens under no key.
  for (const at of [5, 20]) {
    const changed = Buffer.from(a)
    changed[at] ^= 1
    t.equal(reason(() => sealer.open(changed.toString('base64url'))), 'authentication failed', `salt byte ${at} changed`)
  }
  const v1 = new Sealer(new KeyRing([ephemeralKey()], 1), 2, 4096)
  t.equal(Buffer.from(v1.seal('[]'), 'base64url').length, a.length - 16, 'the salt is all the token grows by')
})

t.test('tokens sealed when each had a key of its own keep opening: a requestState, a session id, a stored task', async (t) => {
  const before = JSON.parse(readFileSync(new URL('../fixtures/version-2-tokens.json', import.meta.url), 'utf8'))
  const ring = new KeyRing(parseKeys([before.key]))
  const codec = new RequestStateCodec({ ring, ttl: 300_000, now: () => before.issuedAt + 1000 })
  t.same(codec.decode(before.requestState.token), payloadOf(before.requestState.payload))
  t.same(new SessionCodec(ring, 3_600_000, () => before.issuedAt + 1000).open(before.session.id), before.session.value)
  const stored = { id: 'x'.repeat(22), version: 1, status: 'working' as const, createdAt: 0, updatedAt: 0, expiresAt: 1, owner: 'o', sealed: before.task.sealed }
  t.equal(new TaskSealer(ring, 1_000_000).open(stored).principal, before.task.principal, 'a task record of then, not yet bound to its id')
})

t.test('an opener keeps a bounded number of derived keys, and none for a salt whose token did not verify', async (t) => {
  const ring = new KeyRing([ephemeralKey()])
  const opener = new Sealer(ring, 2, 4096)
  const forged = Buffer.from(new Sealer(ring, 2, 4096).seal('[]'), 'base64url')
  for (let i = 0; i < 2000; i++) {
    forged.writeUInt32BE(i, 5)
    forged[40] ^= 1
    t.equal(reason(() => opener.open(forged.toString('base64url'))), 'authentication failed')
  }
  t.equal(opener.keptKeys, 0, '2000 forged salts kept no key')
  const sealer = new Sealer(ring, 2, 4096, 1)
  for (let i = 0; i < 1500; i++) opener.open(sealer.seal('[]'))
  t.equal(opener.keptKeys, 1024, '1500 genuine salts: the last 1024 kept')
})

t.test('version 1 tokens keep opening, and a ring set to version 1 seals them', async (t) => {
  const keys = parseKeys([fixture.key])
  for (const version of [1, 2] as const) {
    const codec = new RequestStateCodec({ ring: new KeyRing(keys, version), ttl: 300_000, now: () => fixture.issuedAt + 299_999 })
    t.same(codec.decode(fixture.requestState.token), payloadOf(fixture.requestState.payload), `a ring sealing version ${version} opens a version 1 requestState`)
    const sessions = new SessionCodec(new KeyRing(keys, version), 3_600_000, () => fixture.issuedAt + 1000)
    t.same(sessions.open(fixture.session.id), fixture.session.value, 'and a version 1 session id')
  }
  const old = new RequestStateCodec({ ring: new KeyRing(keys), ttl: 300_000, now: () => fixture.issuedAt + 300_001 })
  t.throws(() => old.decode(fixture.requestState.token), { name: 'ExpiredRequestStateError' }, 'until its TTL passes')

  const v1 = new Sealer(new KeyRing(keys, 1), 2, 4096)
  const token = Buffer.from(v1.seal('["x"]'), 'base64url')
  t.equal(token[0], 2, 'version 1: the purpose byte alone')
  t.equal(new Sealer(new KeyRing(keys), 2, 4096).open(token.toString('base64url')), '["x"]', 'a version 2 ring opens it')
  t.equal(reason(() => new Sealer(new KeyRing(keys), 3, 4096).open(token.toString('base64url'))), 'unknown version', 'as its own purpose only')
})

t.test('a fleet mid-upgrade: tokens sealed by either version are served by an app of the other', async (t) => {
  const keys = [fixture.key]
  const apps = []
  for (const tokenVersion of [1, 2] as const) {
    const app = await build(t, { requestState: { keys, tokenVersion } })
    app.mcp.tool({ name: 'ask', inputSchema: { type: 'object' } }, async (_args, ctx) => {
      const answer = await ctx.elicit('Go?', requestedSchema().boolean('go'))
      return answer.action === 'accept' ? `go ${String(answer.content.go)}` : answer.action
    })
    apps.push(app)
  }
  for (const [first, second] of [[0, 1], [1, 0]]) {
    const asked = await call(apps[first], 'tools/call', { name: 'ask', arguments: {} })
    const requestState = asked.body.result.requestState
    t.equal(Buffer.from(requestState, 'base64url')[0], first === 0 ? 2 : 0x12)
    const done = await call(apps[second], 'tools/call', {
      name: 'ask', arguments: {}, requestState, inputResponses: { 'elicit-1': { action: 'accept', content: { go: true } } },
    })
    t.equal(done.body.result.content[0].text, 'go true', `sealed by version ${first + 1}, answered by version ${second + 1}`)
  }
})
