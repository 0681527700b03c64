import t from 'tap'
import { createCipheriv, createDecipheriv, createHash, createHmac, randomBytes } from 'node:crypto'
import { ExpiredRequestStateError, InvalidRequestStateError } from '../../lib/errors.js'
import { DEFAULT_MAX_TOKEN_LENGTH, RequestStateCodec } from '../../lib/modern/codec.js'
import { ephemeralKey } from '../../lib/seal/keys.js'
import { KeyRing, MAX_CLOCK_SKEW_MS, TokenTooLongError } from '../../lib/seal/seal.js'
import { Journal, type AnswerSlot } from '../../lib/journal.js'
import type { RequestStatePayload } from '../../lib/modern/codec.js'
import { soakSize } from '../soak.js'

const TTL = 600_000
const T0 = 1_800_000_000_000

const payload: Omit<RequestStatePayload, 'issuedAt'> = {
  method: 'tools/call',
  originalParams: { name: 'book_trip', arguments: { from: 'CDG', to: 'JFK', passengers: 2 } },
  journal: new Journal([
    { key: 'seat', fingerprint: 'fp-seat', answer: { action: 'accept', content: { seat: 'hush-answer-12A' } } },
    { key: 'meal', fingerprint: 'fp-meal', answer: { action: 'decline' } },
    { key: 'confirm', fingerprint: 'fp-confirm' },
  ]),
  principal: 'alice@example.test',
}

function clock (start = T0): { now: () => number, set: (ms: number) => void } {
  let current = start
  return { now: () => current, set: (ms) => { current = ms } }
}

function codecFor (keys: Buffer[], opts: { now?: () => number, maxTokenLength?: number } = {}): RequestStateCodec {
  return new RequestStateCodec({ ring: new KeyRing(keys), ttl: TTL, now: opts.now ?? (() => T0), maxTokenLength: opts.maxTokenLength })
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

/** The AES key of a token: its own, derived from its kind, key id and salt (version 2), or the ring key (version 1). */
function aesKey (key: Buffer, head: Buffer): Buffer {
  return (head[0] & 0x10) !== 0 ? createHmac('sha256', key).update(head.subarray(0, 21)).digest() : key
}

/**
 * Mint a token around an arbitrary plaintext, to reach the checks after authentication: `kind` 0x12 is a
 * version 2 requestState (salted), 2 a version 1 one.
 */
function seal (key: Buffer, plaintext: string, kind = 0x12): string {
  const id = createHash('sha256').update(key).digest().subarray(0, 4)
  const head = Buffer.concat([Buffer.from([kind]), id, (kind & 0x10) !== 0 ? randomBytes(16) : Buffer.alloc(0)])
  const nonce = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', aesKey(key, head), nonce)
  cipher.setAAD(head.subarray(0, 5))
  const ct = Buffer.concat([cipher.update(plaintext, 'utf8'), cipher.final()])
  return Buffer.concat([head, nonce, ct, cipher.getAuthTag()]).toString('base64url')
}

/** Decrypt a token minted under `key`, to look at its plaintext. */
function open (key: Buffer, token: string): string {
  const bytes = Buffer.from(token, 'base64url')
  const header = (bytes[0] & 0x10) !== 0 ? 33 : 17
  const decipher = createDecipheriv('aes-256-gcm', aesKey(key, bytes), bytes.subarray(header - 12, header))
  decipher.setAAD(bytes.subarray(0, 5))
  decipher.setAuthTag(bytes.subarray(bytes.length - 16))
  return Buffer.concat([decipher.update(bytes.subarray(header, bytes.length - 16)), decipher.final()]).toString('utf8')
}

/** The plaintext of a payload: `[method, originalParams, answers, issuedAt, principal, round?]`. */
function plaintext (p: RequestStatePayload): unknown[] {
  const ledger = p.journal.answers.map((e) => 'answer' in e ? [e.key, e.fingerprint, e.answer] : [e.key, e.fingerprint])
  const head = [p.method, p.originalParams, ledger, p.issuedAt, p.principal]
  return p.round === undefined ? head : [...head, p.round]
}

t.test('round trip', async (t) => {
  const c = clock()
  const codec = new RequestStateCodec({ ring: new KeyRing([ephemeralKey()]), ttl: TTL, now: c.now })
  const token = codec.encode(payload)
  t.match(token, /^[A-Za-z0-9_-]+$/)
  t.same(codec.decode(token), { ...payload, issuedAt: T0 })

  const anonymous = { ...payload, principal: null, journal: new Journal(), issuedAt: T0 - 5 }
  t.same(codec.decode(codec.encode(anonymous)), anonymous)

  // Only the payload's own members travel.
  const extra = { ...payload, extra: 'dropped' } as typeof payload
  t.notOk('extra' in codec.decode(codec.encode(extra)))

  const second = { ...payload, issuedAt: T0, round: 2 }
  t.same(codec.decode(codec.encode(second)), second)
  t.notOk('round' in codec.decode(codec.encode({ ...payload, round: undefined })))
  const effects: Array<[string, unknown]> = [['quote', { price: 41 }], ['charge', 'RCPT-1']]
  const withEffects = new Journal(payload.journal.answers, effects)
  t.same(codec.decode(codec.encode({ ...second, journal: withEffects })), { ...second, journal: withEffects }, 'recorded effects travel')
  t.same([...codec.decode(codec.encode({ ...second, journal: withEffects })).journal.effects], effects, 'in the order they ran')
  t.same(codec.decode(codec.encode({ ...payload, issuedAt: T0, journal: withEffects })), { ...payload, issuedAt: T0, round: 0, journal: withEffects }, 'with the round, 0 when none was given')
  const key = ephemeralKey()
  t.equal(JSON.parse(open(key, codecFor([key]).encode({ ...second }))).length, 6, 'no effects, no member')

  const unicode = { ...payload, originalParams: { text: 'héllo ✓ 𝄞 日本' } }
  t.same(codec.decode(codec.encode(unicode)).originalParams, unicode.originalParams)

  // Ledger slots keep exactly their members: an answer of null is an answer, an undefined one is
  // none (as JSON would have it), and a slot's extra members do not travel.
  const slots = codec.decode(codec.encode({
    ...payload,
    journal: new Journal([{ key: 'a', fingerprint: 'fa', answer: null }, { key: 'b', fingerprint: 'fb', answer: undefined }, { key: 'c', fingerprint: 'fc', extra: 1 } as AnswerSlot]),
  })).journal.answers
  t.strictSame(slots, [{ key: 'a', fingerprint: 'fa', answer: null }, { key: 'b', fingerprint: 'fb' }, { key: 'c', fingerprint: 'fc' }])
  t.ok('answer' in slots[0])
  t.notOk('answer' in slots[1])
})

t.test('a call id travels as the 8th member, with the round (0 when none was given) and the effects before it', async (t) => {
  const key = ephemeralKey()
  const codec = codecFor([key])
  const callId = 'A'.repeat(22)
  const journal = new Journal(payload.journal.answers, [], callId)
  const decoded = codec.decode(codec.encode({ ...payload, issuedAt: T0, journal }))
  t.equal(decoded.journal.callId, callId)
  t.equal(decoded.round, 0)
  t.same(JSON.parse(open(key, codec.encode({ ...payload, issuedAt: T0, journal }))).slice(5), [0, [], callId])
  for (const bad of ['short', 7, 'A'.repeat(21) + '!']) {
    const array = [...plaintext({ ...payload, issuedAt: T0 }), 1, [], bad]
    t.equal(reason(() => codec.decode(seal(key, JSON.stringify(array)))), 'malformed payload', `call id ${String(bad)}`)
  }
})

t.test('the plaintext is the compact array form', async (t) => {
  const key = ephemeralKey()
  const codec = codecFor([key])
  const full = { ...payload, issuedAt: T0 }
  t.equal(open(key, codec.encode(full)), JSON.stringify(plaintext(full)))
  t.same(JSON.parse(open(key, codec.encode({ ...full, round: 3 }))), plaintext({ ...full, round: 3 }))
  t.same(JSON.parse(open(key, codec.encode(full)))[2][2], ['confirm', 'fp-confirm'], 'a pending slot has no answer')
  // Decoding gives back objects with the payload's member names, in their usual order.
  t.same(Object.keys(codec.decode(codec.encode({ ...full, round: 1 }))), ['method', 'originalParams', 'journal', 'issuedAt', 'principal', 'round'])
})

t.test('a token of the object format of version 1 is refused', async (t) => {
  const key = ephemeralKey()
  const codec = codecFor([key])
  const v1 = seal(key, JSON.stringify({ ...payload, issuedAt: T0 }), 1)
  t.equal(reason(() => codec.decode(v1)), 'unknown version')
  // The same object under the current version is no payload either.
  t.equal(reason(() => codec.decode(seal(key, JSON.stringify({ ...payload, issuedAt: T0 })))), 'malformed payload')
})

t.test('default clock and length limit', async (t) => {
  const codec = new RequestStateCodec({ ring: new KeyRing([ephemeralKey()]), ttl: TTL })
  const before = Date.now()
  const decoded = codec.decode(codec.encode(payload))
  t.ok(decoded.issuedAt >= before && decoded.issuedAt <= Date.now())
  t.equal(DEFAULT_MAX_TOKEN_LENGTH, 65_536)
  t.equal(reason(() => codec.decode('A'.repeat(DEFAULT_MAX_TOKEN_LENGTH + 1))), 'too long')
  t.equal(reason(() => codec.decode('A'.repeat(DEFAULT_MAX_TOKEN_LENGTH))), 'unknown version')
})

t.test('a fresh nonce for every token', async (t) => {
  const codec = codecFor([ephemeralKey()])
  const a = codec.encode(payload)
  const b = codec.encode(payload)
  t.not(a, b)
  // kind, key id, salt, then the nonce: bytes 21 to 33.
  t.not(Buffer.from(a, 'base64url').subarray(21, 33).toString('hex'), Buffer.from(b, 'base64url').subarray(21, 33).toString('hex'))

  // Enough tokens to drain and refill the nonce pool: none repeats.
  const nonces = new Set<string>()
  const count = 10_000
  for (let i = 0; i < count; i++) {
    nonces.add(Buffer.from(codec.encode(payload), 'base64url').subarray(21, 33).toString('hex'))
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
  t.equal(reason(() => codec.decode(bytes.subarray(0, 50).toString('base64url'))), 'too short')
  t.equal(reason(() => codec.decode(bytes.subarray(0, 51).toString('base64url'))), 'authentication failed')
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
  // Non-canonical trailing bits decode to the same bytes but are refused, for either length of tail.
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  for (const extra of [1, 2]) {
    const canonical = Buffer.from(token, 'base64url').subarray(0, 60 + extra).toString('base64url')
    t.equal(canonical.length % 4, extra + 1)
    t.equal(reason(() => codec.decode(canonical)), 'authentication failed')
    const last = alphabet.indexOf(canonical.at(-1) as string)
    for (const bit of extra === 1 ? [1, 2, 4, 8] : [1, 2]) {
      t.equal(reason(() => codec.decode(canonical.slice(0, -1) + alphabet[last ^ bit])), 'not base64url')
    }
  }
  // UTF-16 units whose low byte is a base64url character ('A', 'a', '-', '+').
  for (const unit of ['\u0141', '\u0161', '\u012d', '\u012b', '\uff41']) {
    t.equal(reason(() => codec.decode(token.slice(0, 40) + unit + token.slice(41))), 'not base64url')
  }

  t.equal(reason(() => codec.decode('AAAA')), 'too short')
  for (let i = 0; i < 200; i++) reason(() => codec.decode(randomBytes(i).toString('base64url') || 'x'))
  for (let i = 0; i < 200; i++) {
    const bytes = randomBytes(40 + i)
    bytes[0] = i % 2 === 0 ? 2 : 0x12
    reason(() => codec.decode(bytes.toString('base64url')))
  }
})

t.test('base64url fuzz: refused exactly when not the canonical spelling of its bytes', async (t) => {
  const codec = codecFor([ephemeralKey()])
  const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_'
  const odd = [...'+/=.! \n\u0000\u007féš日𝄞\u0141\u012b\u012f\uff3f\ud800']
  const pick = <T> (items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]
  const check = (s: string): void => {
    const canonical = Buffer.from(s, 'base64url').toString('base64url') === s
    const refused = reason(() => codec.decode(s)) === 'not base64url'
    if (canonical === refused) t.fail(`${JSON.stringify(s)}: canonical ${canonical}, refused ${refused}`)
  }
  let checked = 0
  const edited = soakSize(2_000, 20_000)
  for (let i = 0; i < edited; i++) {
    const chars = [...randomBytes(1 + (i % 48)).toString('base64url')]
    check(chars.join(''))
    for (let edits = 1 + (i % 3); edits > 0; edits--) {
      const at = Math.floor(Math.random() * (chars.length + 1))
      const char = Math.random() < 0.5 ? pick(odd) : pick([...alphabet])
      const op = Math.random()
      if (op < 0.4) chars.splice(at, 0, char)
      else if (op < 0.7) chars[at] = char
      else chars.splice(at, 1)
    }
    if (chars.length > 0) check(chars.join(''))
    checked += 2
  }
  // UTF-16 units in every position of short tokens: by default those whose high byte is 0x00 (ASCII, Latin-1),
  // 0x01 (Latin Extended-A, whose low bytes spell base64url characters), 0xd8 and 0xdf (the ends of the surrogates)
  // or 0xff (fullwidth forms, specials); every unit with MOCAPI_SOAK=1.
  const highBytes = soakSize([0x00, 0x01, 0xd8, 0xdf, 0xff], Array.from({ length: 256 }, (_, high) => high))
  for (const unit of highBytes.flatMap((high) => Array.from({ length: 256 }, (_, low) => (high << 8) | low))) {
    const char = String.fromCharCode(unit)
    for (const base of ['AAAA', 'QUJD', 'QUI']) {
      check(char + base)
      check(base.slice(0, 2) + char + base.slice(2))
      check(base.slice(0, -1) + char)
      checked += 3
    }
  }
  t.ok(checked > soakSize(10_000, 200_000))
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
  const small = codec.encode({ ...payload, originalParams: {}, journal: new Journal(), method: 'm', principal: null })
  t.ok(small.length <= 200)
  codec.decode(small)
  // Valid content and garbage alike answer "too long": the length is the first check after the type.
  t.equal(reason(() => codec.decode(small + 'AAAA'.repeat(30))), 'too long')
  t.equal(reason(() => codec.decode('!'.repeat(201))), 'too long')
  t.equal(reason(() => codec.decode('!'.repeat(10_000_000))), 'too long')

  const err = thrown(() => codec.encode(payload))
  t.ok(err instanceof TokenTooLongError)
  t.match((err as Error).message, /exceeds the limit of 200/)

  // A limit below the smallest token refuses everything, without crashing.
  const tiny = codecFor([ephemeralKey()], { maxTokenLength: 1 })
  t.throws(() => tiny.encode(payload), { name: 'TokenTooLongError' })
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
  const array = plaintext(good)
  t.same(codec.decode(seal(key, JSON.stringify(array))), good)
  t.same(codec.decode(seal(key, JSON.stringify([...array, 0]))), { ...good, round: 0 })
  t.same(codec.decode(seal(key, JSON.stringify([...array, 2, [['quote', { price: 1 }], ['none', null]]]))),
    { ...good, round: 2, journal: new Journal(good.journal.answers, [['quote', { price: 1 }], ['none', null]]) }, 'what ctx.once recorded, after the round')
  t.equal(reason(() => codec.decode(seal(key, 'not json at all'))), 'plaintext is not JSON')
  t.equal(reason(() => codec.decode(seal(key, ''))), 'too short')

  /** The good plaintext with member `i` replaced. */
  const swap = (i: number, value: unknown): unknown[] => array.map((v, j) => j === i ? value : v)
  const ledger = array[2] as unknown[]
  const malformed: unknown[] = [
    null, [], 'text', 42, { ...good },
    array.slice(0, 4),
    [...array, 1, 2],
    swap(0, 1),
    swap(0, null),
    swap(1, []),
    swap(1, null),
    swap(1, 'x'),
    swap(2, {}),
    swap(2, null),
    swap(2, [null]),
    swap(2, [{ k: 'x', f: 'y' }]),
    swap(2, [['k']]),
    swap(2, [['k', 'f', 'r', 'extra']]),
    swap(2, [[1, 'f']]),
    swap(2, [['k', 2]]),
    swap(2, [...ledger, ['k', null, {}]]),
    swap(3, '1800000000000'),
    swap(3, null),
    swap(4, 7),
    swap(4, {}),
    [...array, -1],
    [...array, 1.5],
    [...array, '1'],
    [...array, null],
    [...array, 2 ** 53],
    [...array, 0, [['k']]],
    [...array, 0, [['', 1]]],
    [...array, 0, [[1, 1]]],
    [...array, 0, [null]],
    [...array, 0, {}],
    [...array, 0, [['k', 1], ['k', 2]]],
    [...array, 0, [], 'extra'],
  ]
  for (const value of malformed) {
    t.equal(reason(() => codec.decode(seal(key, JSON.stringify(value)))), 'malformed payload', JSON.stringify(value))
  }
  // JSON.parse reads 1e999 as Infinity.
  const infinite = JSON.stringify(array).replace(String(T0), '1e999')
  t.equal(reason(() => codec.decode(seal(key, infinite))), 'malformed payload')
})

t.test('a high limit holds no memory: seal and open allocate per token', async (t) => {
  // 48 MiB of characters would have reserved two 36 MiB buffers up front.
  const before = process.memoryUsage().arrayBuffers
  const codec = codecFor([ephemeralKey()], { maxTokenLength: 48 * 1024 * 1024 })
  t.ok(process.memoryUsage().arrayBuffers - before < 1024 * 1024, 'under 1 MiB more after building the codec')
  t.same(codec.decode(codec.encode(payload)), { ...payload, issuedAt: T0 })
})
