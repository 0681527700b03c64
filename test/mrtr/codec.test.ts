import t from 'tap'
import { createCipheriv, createHash, randomBytes } from 'node:crypto'
import { ExpiredRequestStateError, InvalidRequestStateError } from '../../lib/errors.js'
import {
  DEFAULT_MAX_TOKEN_LENGTH,
  MAX_CLOCK_SKEW_MS,
  RequestStateCodec,
  ephemeralKey,
  keysFromEnv,
  parseKeys,
} from '../../lib/mrtr/codec.js'
import type { RequestStatePayload } from '../../lib/mrtr/codec.js'

const TTL = 600_000
const T0 = 1_800_000_000_000

const payload: Omit<RequestStatePayload, 'issuedAt'> = {
  method: 'tools/call',
  originalParams: { name: 'book_trip', arguments: { from: 'CDG', to: 'JFK', passengers: 2 } },
  inputResponses: [
    { k: 'seat', f: 'fp-seat', r: { action: 'accept', content: { seat: 'hush-answer-12A' } } },
    { k: 'meal', f: 'fp-meal', r: { action: 'decline' } },
    { k: 'confirm', f: 'fp-confirm' },
  ],
  principal: 'alice@example.test',
}

function clock (start = T0): { now: () => number, set: (ms: number) => void } {
  let current = start
  return { now: () => current, set: (ms) => { current = ms } }
}

function codecFor (keys: Buffer[], opts: { now?: () => number, maxTokenLength?: number } = {}): RequestStateCodec {
  return new RequestStateCodec({ keys, ttl: TTL, now: opts.now ?? (() => T0), maxTokenLength: opts.maxTokenLength })
}

/** Catch what `fn` throws; fails the test when it returns. */
function thrown (fn: () => unknown): unknown {
  try {
    fn()
  } catch (err) {
    return err
  }
  throw new Error('expected a throw')
}

/** The reason of the InvalidRequestStateError `fn` throws; any other throw fails. */
function reason (fn: () => unknown): string {
  const err = thrown(fn)
  if (!(err instanceof InvalidRequestStateError)) throw new Error(`expected InvalidRequestStateError, got ${String(err)}`)
  return err.reason
}

/** Mint a token around an arbitrary plaintext, to reach the checks after authentication. */
function seal (key: Buffer, plaintext: string): string {
  const header = Buffer.alloc(5)
  header[0] = 1
  createHash('sha256').update(key).digest().copy(header, 1, 0, 4)
  const nonce = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, nonce)
  cipher.setAAD(header)
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
  return Buffer.concat([header, nonce, ct, cipher.getAuthTag()]).toString('base64url')
}

t.test('round trip', async (t) => {
  const c = clock()
  const codec = new RequestStateCodec({ keys: [ephemeralKey()], ttl: TTL, now: c.now })
  const token = codec.encode(payload)
  t.match(token, /^[A-Za-z0-9_-]+$/)
  t.same(codec.decode(token), { ...payload, issuedAt: T0 })

  const anonymous = { ...payload, principal: null, inputResponses: [], issuedAt: T0 - 5 }
  t.same(codec.decode(codec.encode(anonymous)), anonymous)

  // Only the payload's own members travel.
  const extra = { ...payload, extra: 'dropped' } as typeof payload
  t.notOk('extra' in codec.decode(codec.encode(extra)))

  const second = { ...payload, issuedAt: T0, round: 2 }
  t.same(codec.decode(codec.encode(second)), second)
  t.notOk('round' in codec.decode(codec.encode({ ...payload, round: undefined })))

  const unicode = { ...payload, originalParams: { text: 'héllo ✓ 𝄞 日本' } }
  t.same(codec.decode(codec.encode(unicode)).originalParams, unicode.originalParams)
})

t.test('default clock and length limit', async (t) => {
  const codec = new RequestStateCodec({ keys: [ephemeralKey()], ttl: TTL })
  const before = Date.now()
  const decoded = codec.decode(codec.encode(payload))
  t.ok(decoded.issuedAt >= before && decoded.issuedAt <= Date.now())
  t.equal(DEFAULT_MAX_TOKEN_LENGTH, 16384)
  t.equal(reason(() => codec.decode('A'.repeat(DEFAULT_MAX_TOKEN_LENGTH + 1))), 'too long')
  t.equal(reason(() => codec.decode('A'.repeat(DEFAULT_MAX_TOKEN_LENGTH))), 'unknown version')
})

t.test('a fresh nonce for every token', async (t) => {
  const codec = codecFor([ephemeralKey()])
  const a = codec.encode(payload)
  const b = codec.encode(payload)
  t.not(a, b)
  t.not(Buffer.from(a, 'base64url').subarray(5, 17).toString('hex'), Buffer.from(b, 'base64url').subarray(5, 17).toString('hex'))

  // Enough tokens to drain and refill the nonce pool: none repeats.
  const nonces = new Set<string>()
  const count = 10_000
  for (let i = 0; i < count; i++) {
    nonces.add(Buffer.from(codec.encode(payload), 'base64url').subarray(5, 17).toString('hex'))
  }
  t.equal(nonces.size, count)
})

t.test('the token holds no readable plaintext', async (t) => {
  const codec = codecFor([ephemeralKey()])
  const token = codec.encode(payload)
  const bytes = Buffer.from(token, 'base64url')
  for (const secret of ['tools/call', 'alice@example.test', 'hush-answer-12A', 'book_trip', 'seat']) {
    t.notOk(token.includes(secret), `token hides ${secret}`)
    t.notOk(bytes.includes(secret), `bytes hide ${secret}`)
    t.notOk(token.includes(Buffer.from(secret).toString('base64url')), `token hides base64url of ${secret}`)
  }
})

t.test('byte-flip fuzz: every bit of every byte', async (t) => {
  const codec = codecFor([ephemeralKey()])
  const bytes = Buffer.from(codec.encode(payload), 'base64url')
  let refused = 0
  for (let i = 0; i < bytes.length; i++) {
    for (let bit = 0; bit < 8; bit++) {
      const tampered = Buffer.from(bytes)
      tampered[i] ^= 1 << bit
      reason(() => codec.decode(tampered.toString('base64url')))
      refused++
    }
  }
  t.equal(refused, bytes.length * 8)
  t.equal(reason(() => {
    const tampered = Buffer.from(bytes)
    tampered[0] ^= 1
    return codec.decode(tampered.toString('base64url'))
  }), 'unknown version')
  t.equal(reason(() => {
    const tampered = Buffer.from(bytes)
    tampered[2] ^= 1
    return codec.decode(tampered.toString('base64url'))
  }), 'unknown key')
  t.equal(reason(() => {
    const tampered = Buffer.from(bytes)
    tampered[bytes.length - 1] ^= 1
    return codec.decode(tampered.toString('base64url'))
  }), 'authentication failed')
})

t.test('truncation', async (t) => {
  const codec = codecFor([ephemeralKey()])
  const token = codec.encode(payload)
  for (let n = 0; n < token.length; n++) reason(() => codec.decode(token.slice(0, n)))
  const bytes = Buffer.from(token, 'base64url')
  for (let n = 1; n < bytes.length; n++) reason(() => codec.decode(bytes.subarray(0, n).toString('base64url')))
  t.equal(reason(() => codec.decode(bytes.subarray(0, 34).toString('base64url'))), 'too short')
  t.equal(reason(() => codec.decode(bytes.subarray(0, 35).toString('base64url'))), 'authentication failed')
  t.equal(reason(() => codec.decode('')), 'empty')
})

t.test('garbage strings', async (t) => {
  const codec = codecFor([ephemeralKey()])
  const token = codec.encode(payload)
  const notBase64url = [
    '!!!!', 'a', 'abcde', ' ' + token, token + ' ', token + '=', token.replace(/[-_]/g, '+'),
    token.slice(0, 40) + '/' + token.slice(41), 'héllo', '日本語のテキスト', '\u0000'.repeat(64), 'a.b.c',
  ]
  for (const s of notBase64url) t.equal(reason(() => codec.decode(s)), 'not base64url', JSON.stringify(s.slice(0, 20)))
  // Non-canonical trailing bits decode to the same bytes but are refused.
  const last = token.at(-1) as string
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  const sibling = alphabet[alphabet.indexOf(last) ^ 1]
  if (token.length % 4 !== 0) t.equal(reason(() => codec.decode(token.slice(0, -1) + sibling)), 'not base64url')

  t.equal(reason(() => codec.decode('AAAA')), 'too short')
  for (let i = 0; i < 200; i++) reason(() => codec.decode(randomBytes(i).toString('base64url') || 'x'))
  for (let i = 0; i < 200; i++) {
    const bytes = randomBytes(40 + i)
    bytes[0] = 1
    reason(() => codec.decode(bytes.toString('base64url')))
  }
})

t.test('non-string input', async (t) => {
  const codec = codecFor([ephemeralKey()])
  const token = codec.encode(payload)
  for (const value of [undefined, null, 0, 1n, true, {}, [], [token], Buffer.from(token), Symbol('x'), () => token]) {
    t.equal(reason(() => codec.decode(value)), 'not a string')
  }
})

t.test('an oversize token is refused before decoding', async (t) => {
  const codec = codecFor([ephemeralKey()], { maxTokenLength: 200 })
  const small = codec.encode({ ...payload, originalParams: {}, inputResponses: [], method: 'm', principal: null })
  t.ok(small.length <= 200)
  codec.decode(small)
  // Valid content and garbage alike answer "too long": the length is the first check after the type.
  t.equal(reason(() => codec.decode(small + 'AAAA'.repeat(30))), 'too long')
  t.equal(reason(() => codec.decode('!'.repeat(201))), 'too long')
  t.equal(reason(() => codec.decode('!'.repeat(10_000_000))), 'too long')

  const err = thrown(() => codec.encode(payload))
  t.ok(err instanceof RangeError)
  t.match((err as Error).message, /exceeds maxTokenLength 200/)

  // A limit below the smallest token refuses everything, without crashing.
  const tiny = codecFor([ephemeralKey()], { maxTokenLength: 1 })
  t.throws(() => tiny.encode(payload), RangeError)
  t.equal(reason(() => tiny.decode('A')), 'not base64url')
  t.equal(reason(() => tiny.decode(small)), 'too long')
})

t.test('TTL boundary', async (t) => {
  const c = clock()
  const codec = codecFor([ephemeralKey()], { now: c.now })
  const token = codec.encode(payload)
  c.set(T0 + TTL)
  t.equal(codec.decode(token).issuedAt, T0)
  c.set(T0 + TTL + 1)
  const err = thrown(() => codec.decode(token))
  t.ok(err instanceof ExpiredRequestStateError)
  t.ok(err instanceof InvalidRequestStateError)
  t.equal((err as InvalidRequestStateError).reason, 'expired')
})

t.test('clock skew: issuedAt slightly in the future is accepted', async (t) => {
  const codec = codecFor([ephemeralKey()])
  t.equal(MAX_CLOCK_SKEW_MS, 60_000)
  const ahead = codec.encode({ ...payload, issuedAt: T0 + MAX_CLOCK_SKEW_MS })
  t.equal(codec.decode(ahead).issuedAt, T0 + MAX_CLOCK_SKEW_MS)
  const tooFar = codec.encode({ ...payload, issuedAt: T0 + MAX_CLOCK_SKEW_MS + 1 })
  t.equal(reason(() => codec.decode(tooFar)), 'issued in the future')
})

t.test('key rotation', async (t) => {
  const oldKey = ephemeralKey()
  const newKey = ephemeralKey()
  const minted = codecFor([oldKey]).encode(payload)
  t.equal(codecFor([newKey, oldKey]).decode(minted).method, 'tools/call')
  t.equal(reason(() => codecFor([newKey]).decode(minted)), 'unknown key')

  const rotated = codecFor([newKey, oldKey]).encode(payload)
  t.equal(codecFor([newKey]).decode(rotated).method, 'tools/call')
  t.equal(reason(() => codecFor([oldKey]).decode(rotated)), 'unknown key')

  // A key listed twice is harmless.
  const twice = codecFor([newKey, newKey])
  t.equal(twice.decode(twice.encode(payload)).method, 'tools/call')
})

t.test('payload shape is checked after decryption', async (t) => {
  const key = ephemeralKey()
  const codec = codecFor([key])
  const good = { ...payload, issuedAt: T0 }
  t.same(codec.decode(seal(key, JSON.stringify(good))), good)
  t.same(codec.decode(seal(key, JSON.stringify({ ...good, round: 0 }))), { ...good, round: 0 })
  t.equal(reason(() => codec.decode(seal(key, 'not json at all'))), 'plaintext is not JSON')
  t.equal(reason(() => codec.decode(seal(key, ''))), 'too short')

  const malformed: unknown[] = [
    null, [], 'text', 42,
    { ...good, method: 1 },
    { ...good, method: undefined },
    { ...good, originalParams: [] },
    { ...good, originalParams: null },
    { ...good, originalParams: 'x' },
    { ...good, inputResponses: {} },
    { ...good, inputResponses: [null] },
    { ...good, inputResponses: [['k', 'f']] },
    { ...good, inputResponses: [{ f: 'x' }] },
    { ...good, inputResponses: [{ k: 'x', f: 2 }] },
    { ...good, issuedAt: '1800000000000' },
    { ...good, issuedAt: null },
    { ...good, principal: 7 },
    { ...good, principal: undefined },
    { ...good, round: -1 },
    { ...good, round: 1.5 },
    { ...good, round: '1' },
    { ...good, round: null },
  ]
  for (const value of malformed) {
    t.equal(reason(() => codec.decode(seal(key, JSON.stringify(value)))), 'malformed payload', JSON.stringify(value))
  }
  // JSON.parse reads 1e999 as Infinity.
  const infinite = JSON.stringify(good).replace(String(T0), '1e999')
  t.equal(reason(() => codec.decode(seal(key, infinite))), 'malformed payload')
})

t.test('constructor options are validated', async (t) => {
  const key = ephemeralKey()
  const bad: Array<[string, unknown]> = [
    ['keys', { keys: [], ttl: TTL }],
    ['keys', { keys: 'k', ttl: TTL }],
    ['keys\\[1\\] must be 32 bytes', { keys: [key, Buffer.alloc(16)], ttl: TTL }],
    ['keys\\[0\\] must be 32 bytes', { keys: [key.toString('base64')], ttl: TTL }],
    ['ttl', { keys: [key], ttl: '600000' }],
    ['ttl', { keys: [key], ttl: 0 }],
    ['ttl', { keys: [key], ttl: Infinity }],
    ['ttl', { keys: [key], ttl: NaN }],
    ['now', { keys: [key], ttl: TTL, now: 5 }],
    ['maxTokenLength', { keys: [key], ttl: TTL, maxTokenLength: 1.5 }],
    ['maxTokenLength', { keys: [key], ttl: TTL, maxTokenLength: 0 }],
  ]
  for (const [message, opts] of bad) {
    t.throws(() => new RequestStateCodec(opts as never), { name: 'TypeError', message: new RegExp(message) })
  }
})

t.test('parseKeys', async (t) => {
  const raw = Buffer.from(Array.from({ length: 32 }, (_, i) => 250 - i * 3))
  const b64 = raw.toString('base64')
  const b64url = raw.toString('base64url')
  t.not(b64.replace(/=+$/, ''), b64url, 'the fixture exercises both alphabets')
  const parsed = parseKeys([b64, b64url, `  ${b64url}\n`])
  t.equal(parsed.length, 3)
  for (const key of parsed) t.ok(key.equals(raw))

  const short = randomBytes(16).toString('base64')
  const long = randomBytes(48).toString('base64url')
  const cases: Array<[unknown, RegExp, string[]]> = [
    [[b64, short], /^requestState\.keys\[1\] must decode to 32 bytes \(got 16\)$/, [short]],
    [[long], /^requestState\.keys\[0\] must decode to 32 bytes \(got 48\)$/, [long]],
    [[b64url, 'not*base64!'], /^requestState\.keys\[1\] is not base64 or base64url$/, ['not*base64!']],
    [[b64url, ''], /^requestState\.keys\[1\] is not base64 or base64url$/, []],
    [[b64, 42], /^requestState\.keys\[1\] must be a base64 or base64url string \(got number\)$/, []],
    [[null], /^requestState\.keys\[0\] must be a base64 or base64url string \(got null\)$/, []],
    [[[b64]], /^requestState\.keys\[0\] must be a base64 or base64url string \(got array\)$/, [b64]],
    [[raw], /^requestState\.keys\[0\] must be a base64 or base64url string \(got object\)$/, []],
    [[], /^requestState\.keys must not be empty$/, []],
    [b64, /^requestState\.keys must be an array of base64 strings \(got string\)$/, [b64]],
    [undefined, /^requestState\.keys must be an array of base64 strings \(got undefined\)$/, []],
  ]
  for (const [input, message, secrets] of cases) {
    const err = thrown(() => parseKeys(input))
    t.ok(err instanceof TypeError)
    t.match((err as Error).message, message)
    for (const secret of secrets) t.notOk((err as Error).message.includes(secret), 'the message never prints a key')
  }

  const codec = new RequestStateCodec({ keys: parseKeys([b64url]), ttl: TTL })
  t.equal(codec.decode(codec.encode(payload)).principal, 'alice@example.test')
})

t.test('keysFromEnv', async (t) => {
  t.equal(keysFromEnv(undefined), undefined)
  t.equal(keysFromEnv(''), undefined)
  t.equal(keysFromEnv(' , ,, '), undefined)
  t.same(keysFromEnv('abc'), ['abc'])
  t.same(keysFromEnv(' new , old ,, '), ['new', 'old'])
})

t.test('ephemeralKey', async (t) => {
  const a = ephemeralKey()
  const b = ephemeralKey()
  t.equal(a.length, 32)
  t.notOk(a.equals(b))
})
