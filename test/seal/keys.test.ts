import t from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { ephemeralKey, keysFromEnv, parseKeys, weakness } from '../../lib/seal/keys.js'

/** 32 bytes that look random and are the same on every run. */
const raw = createHash('sha256').update('mocapi key fixture 5').digest()

t.test('a key is base64, base64url or hex of 32 bytes', async (t) => {
  const b64 = raw.toString('base64')
  const b64url = raw.toString('base64url')
  t.not(b64.replace(/=+$/, ''), b64url, 'the fixture exercises both alphabets')
  const parsed = parseKeys([b64, b64url, `  ${b64url}\n`, raw.toString('hex'), raw.toString('hex').toUpperCase()])
  t.equal(parsed.length, 5)
  for (const key of parsed) t.ok(key.equals(raw))
})

t.test('bad keys are refused with a coded error naming the position, never the key', async (t) => {
  const b64 = raw.toString('base64')
  const short = randomBytes(16).toString('base64')
  const long = randomBytes(48).toString('base64url')
  const cases: Array<[unknown[], RegExp, string[]]> = [
    [[b64, short], /^mocapi: requestState\.keys\[1\] must decode to 32 bytes, got 16: make one with/, [short]],
    [[long], /^mocapi: requestState\.keys\[0\] must decode to 32 bytes, got 48/, [long]],
    [[b64, 'not*base64!'], /^mocapi: requestState\.keys\[1\] is not base64, base64url or hex$/, ['not*base64!']],
    [[b64, ''], /^mocapi: requestState\.keys\[1\] is not base64, base64url or hex$/, []],
    [[b64, 42], /^mocapi: requestState\.keys\[1\] must be a base64, base64url or hex string, got number$/, []],
    [[null], /^mocapi: requestState\.keys\[0\] must be a base64, base64url or hex string, got null$/, []],
    [[[b64]], /^mocapi: requestState\.keys\[0\] must be a base64, base64url or hex string, got an array$/, [b64]],
    [[raw], /^mocapi: requestState\.keys\[0\] must be a base64, base64url or hex string, got object$/, []],
  ]
  for (const [input, message, secrets] of cases) {
    t.throws(() => parseKeys(input), { code: 'FST_MOCAPI_INVALID_KEY', message }, String(message))
    let error: Error | undefined
    try { parseKeys(input) } catch (e) { error = e as Error }
    t.ok(error instanceof TypeError)
    for (const secret of secrets) t.notOk(error?.message.includes(secret), 'the message never prints a key')
  }
})

t.test('keys that are plainly not random are refused', async (t) => {
  const weak: Array<[string, Buffer]> = [
    ['all zero', Buffer.alloc(32)],
    ['all one value', Buffer.alloc(32, 0xab)],
    ['a short pattern repeated', Buffer.from('abcd'.repeat(8), 'latin1')],
    ['fifteen values', Buffer.from(Array.from({ length: 32 }, (_, i) => (i * 7) % 15))],
    ['counting up', Buffer.from(Array.from({ length: 32 }, (_, i) => i))],
    ['counting down by three, wrapping', Buffer.from(Array.from({ length: 32 }, (_, i) => (250 - i * 3) & 0xff))],
    ['a passphrase', Buffer.from('correct horse battery staple!!12', 'latin1')],
  ]
  for (const [label, bytes] of weak) {
    t.equal(bytes.length, 32, label)
    t.type(weakness(bytes), 'string', label)
    t.throws(() => parseKeys([bytes.toString('base64')]), { code: 'FST_MOCAPI_INVALID_KEY', message: /^mocapi: requestState\.keys\[0\] .*: use 32 random bytes; make one with `node -e/ }, label)
  }
  // A thousand random keys all pass: the checks have no false alarms worth the name.
  for (let i = 0; i < 1000; i++) t.equal(weakness(randomBytes(32)), undefined)
  t.equal(weakness(raw), undefined)
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
  t.equal(weakness(a), undefined)
})
