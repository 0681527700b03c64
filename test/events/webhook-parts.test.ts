import t from 'tap'
import { randomBytes } from 'node:crypto'
import { Webhook } from 'standardwebhooks'
import { parseSecret, signedHeaders } from '../../lib/events/sign.js'

// A key made of 24 to 64 random bytes, as the `whsec_` text a client sends.
const secretOf = (bytes: number): string => `whsec_${randomBytes(bytes).toString('base64')}`

t.test('a whsec_ secret of 24 to 64 bytes gives its key bytes', async (t) => {
  for (const bytes of [24, 32, 64]) {
    const key = randomBytes(bytes)
    t.same(parseSecret(`whsec_${key.toString('base64')}`), key, `${bytes} bytes`)
  }
  const key = randomBytes(32)
  t.same(parseSecret(`whsec_${key.toString('base64').replace(/=+$/, '')}`), key, 'padding may be left off')
})

t.test('anything else is not a secret', async (t) => {
  const valid = secretOf(32)
  const noncanonical = valid.slice(0, -2) + (valid.at(-2) === 'B' ? 'C' : 'B') + '='  // unused bits set: decodes the same
  const bad = [undefined, null, 42, {}, '', 'whsec_', valid.slice(6), `WHSEC_${valid.slice(6)}`, secretOf(23),
    secretOf(65), noncanonical, `${valid}=`, `${valid.slice(0, 20)} ${valid.slice(20)}`,
    `whsec_${randomBytes(32).toString('base64url')}-_`, `whsec_${'='.repeat(44)}`]
  t.same(bad.map((value) => parseSecret(value)), bad.map(() => undefined))
})

t.test('a signed delivery verifies with the standardwebhooks package, and a tampered one does not', async (t) => {
  const secret = secretOf(32)
  const body = JSON.stringify({ eventId: 'inc-123', name: 'incident.created', data: { service: 'api' } })
  const now = Date.now()
  const headers = signedHeaders(parseSecret(secret) as Buffer, 'inc-123', body, now)
  t.equal(headers['webhook-id'], 'inc-123')
  t.equal(headers['webhook-timestamp'], String(Math.floor(now / 1000)))
  t.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]{43}=$/)
  t.same(new Webhook(secret).verify(body, headers), JSON.parse(body))
  t.throws(() => new Webhook(secret).verify(body.replace('api', 'web'), headers), /signature/i, 'tampered body')
  t.throws(() => new Webhook(secretOf(32)).verify(body, headers), /signature/i, 'another secret')
  t.throws(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'inc-124' }), /signature/i, 'another id')
})
