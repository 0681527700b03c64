import t from 'tap'
import { Journal } from '../../lib/journal.js'
import Fastify from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { randomBytes } from 'node:crypto'
import mocapi, { requestedSchema } from '../../lib/index.js'
import { RequestStateCodec } from '../../lib/modern/codec.js'
import { parseKeys } from '../../lib/seal/keys.js'
import { KeyRing } from '../../lib/seal/seal.js'
import { KEY, build, call, rpc } from '../helpers.js'

const schema = requestedSchema().string('city')
const accept = { 'elicit-1': { action: 'accept', content: { city: 'Porto' } } }

function travelTools (app: { mcp: { tool: Function } }, runs = { count: 0 }) {
  const handler = async (args: { to?: string }, ctx: any) => {
    runs.count++
    const answer = await ctx.elicit('From where?', schema)
    return answer.action === 'accept' ? `${answer.content.city} to ${args.to}` : 'no'
  }
  app.mcp.tool({ name: 'fly', inputSchema: { type: 'object', properties: { to: { type: 'string' } } } }, handler)
  app.mcp.tool({ name: 'sail', inputSchema: { type: 'object', properties: { to: { type: 'string' } } } }, handler)
  return runs
}

async function server (t: Parameters<typeof build>[0], keys: string[], extra = {}) {
  let runs = { count: 0 }
  const app = await build(t, { requestState: { keys, ...extra } }, (app) => { runs = travelTools(app) })
  return { app, runs: () => runs.count }
}

async function token (app: Parameters<typeof call>[0], params = { name: 'fly', arguments: { to: 'Lisbon' } }): Promise<string> {
  const { body } = await call(app, 'tools/call', params)
  return body.result.requestState
}

const REFUSED = { code: -32602, message: 'Invalid or expired requestState', data: { reason: 'invalid_request_state' } }

t.test('the token holds no readable plaintext', async (t) => {
  const { app } = await server(t, [KEY])
  const state = await token(app, { name: 'fly', arguments: { to: 'Reykjavik' } })
  t.match(state, /^[A-Za-z0-9_-]+$/)
  const bytes = Buffer.from(state, 'base64url').toString('latin1')
  for (const word of ['tools/call', 'Reykjavik', 'fly', 'elicit-1', 'originalParams']) {
    t.notMatch(bytes, word)
    // A three-letter word turns up in about one random token of a thousand's base64 text: only longer ones say anything.
    if (word.length > 3) t.notMatch(state, word)
  }
})

t.test('every flipped bit of a real token is refused, never a 5xx, nothing run', async (t) => {
  const { app, runs } = await server(t, [KEY])
  const state = await token(app)
  const before = runs()
  const raw = Buffer.from(state, 'base64url')
  let refused = 0
  for (let i = 0; i < raw.length; i++) {
    const flipped = Buffer.from(raw)
    flipped[i] ^= 1 << (i % 8)
    const { status, body } = await call(app, 'tools/call', { name: 'fly', arguments: { to: 'Lisbon' }, requestState: flipped.toString('base64url'), inputResponses: accept })
    if (status === 200 && body.error?.code === -32602 && body.error.message === REFUSED.message) refused++
  }
  t.equal(refused, raw.length, `all ${raw.length} altered tokens refused`)
  t.equal(runs(), before, 'the handler never ran on an altered token')
  const tampered = await call(app, 'tools/call', { name: 'fly', arguments: { to: 'Lisbon' }, requestState: state + '-TAMPERED', inputResponses: accept })
  t.same(tampered.body.error, REFUSED)
  for (const garbage of ['', 'x', '!!!!', 'A'.repeat(70_000)]) {
    const { status, body } = await call(app, 'tools/call', { name: 'fly', arguments: { to: 'Lisbon' }, requestState: garbage })
    t.equal(status, 200)
    t.same(body.error, REFUSED)
  }
})

t.test('a token is bound to its tool and arguments', async (t) => {
  const { app, runs } = await server(t, [KEY])
  const state = await token(app)
  const before = runs()
  const otherTool = await call(app, 'tools/call', { name: 'sail', arguments: { to: 'Lisbon' }, requestState: state, inputResponses: accept })
  t.same(otherTool.body.error, REFUSED)
  const otherArgs = await call(app, 'tools/call', { name: 'fly', arguments: { to: 'Madrid' }, requestState: state, inputResponses: accept })
  t.same(otherArgs.body.error, REFUSED)
  t.equal(runs(), before)
  const reordered = await call(app, 'tools/call', { arguments: { to: 'Lisbon' }, name: 'fly', requestState: state, inputResponses: accept })
  t.same(reordered.body.result.content, [{ type: 'text', text: 'Porto to Lisbon' }])
})

t.test('arguments compare as JSON values: key order is free, every other difference refuses the token', async (t) => {
  const trip = { to: 'Lisbon', legs: [{ from: 'Porto', stops: [1, 2] }, null], flags: { window: true, meal: 'veg' }, price: 0 }
  let runs = 0
  const app = await build(t, { requestState: { keys: [KEY] } }, (app) => {
    app.mcp.tool({ name: 'plan', inputSchema: { type: 'object' } }, async (_args: unknown, ctx: any) => {
      runs++
      const answer = await ctx.elicit('From where?', schema)
      return answer.action === 'accept' ? answer.content.city : 'no'
    })
  })
  const { body } = await call(app, 'tools/call', { name: 'plan', arguments: trip })
  const state = body.result.requestState
  const retry = (args: unknown) => call(app, 'tools/call', { name: 'plan', arguments: args, requestState: state, inputResponses: accept })

  const reordered = { price: 0, flags: { meal: 'veg', window: true }, legs: [{ stops: [1, 2], from: 'Porto' }, null], to: 'Lisbon' }
  t.same((await retry(reordered)).body.result.content, [{ type: 'text', text: 'Porto' }], 'nested keys in another order')
  const before = runs
  const changed: Array<[string, unknown]> = [
    ['a nested value', { ...trip, flags: { window: false, meal: 'veg' } }],
    ['an array element', { ...trip, legs: [{ from: 'Porto', stops: [1, 3] }, null] }],
    ['an array length', { ...trip, legs: [{ from: 'Porto', stops: [1, 2] }] }],
    ['an array for an object', { ...trip, flags: ['window', 'veg'] }],
    ['an object for an array', { ...trip, legs: { 0: { from: 'Porto', stops: [1, 2] }, 1: null } }],
    ['null for an object', { ...trip, flags: null }],
    ['a string for a number', { ...trip, price: '0' }],
    ['a missing key', { to: 'Lisbon', legs: trip.legs, flags: trip.flags }],
    ['an extra key', { ...trip, note: 'x' }],
    ['a renamed key, same count', { to: 'Lisbon', legs: trip.legs, flags: trip.flags, cost: 0 }],
    ['a nested extra key', { ...trip, flags: { ...trip.flags, aisle: false } }],
  ]
  for (const [what, args] of changed) {
    t.same((await retry(args)).body.error, REFUSED, what)
  }
  t.equal(runs, before, 'the handler never ran for a changed argument')
})

t.test('a client that writes zero as -0.0 on every round matches its own token, which gives it back as 0', async (t) => {
  const app = await build(t, { requestState: { keys: [KEY] } }, (app) => {
    app.mcp.tool({ name: 'plan', inputSchema: { type: 'object' } }, async (args: any, ctx: any) => {
      const answer = await ctx.elicit('From where?', schema)
      return answer.action === 'accept' ? `${answer.content.city} at ${args.at}` : 'no'
    })
  })
  // As a Python client writes 0.0 negated: the body's text carries -0.0, which parses to -0.
  const send = (params: object) => {
    const request = rpc('tools/call', { name: 'plan', ...params })
    return app.inject({ ...request, payload: JSON.stringify(request.payload).replace('"at":0', '"at":-0.0') })
  }
  const first = JSON.parse((await send({ arguments: { at: 0 } })).body)
  t.equal(first.result.resultType, 'input_required')
  const retry = JSON.parse((await send({ arguments: { at: 0 }, requestState: first.result.requestState, inputResponses: accept })).body)
  t.same(retry.result?.content, [{ type: 'text', text: 'Porto at 0' }], 'the retry is served, not refused as other arguments')
})

t.test('a token expires after its ttl', async (t) => {
  const { app } = await server(t, [KEY], { ttl: 150 })
  const state = await token(app)
  const fresh = await call(app, 'tools/call', { name: 'fly', arguments: { to: 'Lisbon' }, requestState: state, inputResponses: accept })
  t.same(fresh.body.result.content, [{ type: 'text', text: 'Porto to Lisbon' }])
  await new Promise((resolve) => setTimeout(resolve, 300))
  // The same retry again would get its reply (its receipt outlives the token by the clock skew nodes allow a token);
  // another answer is a new request, which the expired token cannot carry.
  const stale = await call(app, 'tools/call', { name: 'fly', arguments: { to: 'Lisbon' }, requestState: state, inputResponses: { 'elicit-1': { action: 'decline' } } })
  t.same(stale.body.error, REFUSED, 'the expired token gets the same opaque message')
})

t.test('a token without a round counter reads as round 0', async (t) => {
  const { app } = await server(t, [KEY])
  const codec = new RequestStateCodec({ ring: new KeyRing(parseKeys([KEY])), ttl: 60_000 })
  const state = codec.encode({ method: 'tools/call', originalParams: { name: 'fly', arguments: { to: 'Lisbon' } }, journal: new Journal(), principal: null })
  const { body } = await call(app, 'tools/call', { name: 'fly', arguments: { to: 'Lisbon' }, requestState: state, inputResponses: accept })
  t.same(body.result.content, [{ type: 'text', text: 'Porto to Lisbon' }])
})

t.test('two instances sharing keys complete each other\'s flows', async (t) => {
  const a = await server(t, [KEY])
  const b = await server(t, [KEY])
  const fromA = await token(a.app)
  const onB = await call(b.app, 'tools/call', { name: 'fly', arguments: { to: 'Lisbon' }, requestState: fromA, inputResponses: accept })
  t.same(onB.body.result.content, [{ type: 'text', text: 'Porto to Lisbon' }])
  const fromB = await token(b.app)
  const onA = await call(a.app, 'tools/call', { name: 'fly', arguments: { to: 'Lisbon' }, requestState: fromB, inputResponses: accept })
  t.same(onA.body.result.content, [{ type: 'text', text: 'Porto to Lisbon' }])
})

t.test('key rotation: old tokens work while the old key is second, not after', async (t) => {
  const oldKey = randomBytes(32).toString('base64')
  const newKey = randomBytes(32).toString('base64url')
  const before = await server(t, [oldKey])
  const oldToken = await token(before.app)
  const during = await server(t, [newKey, oldKey])
  const ok = await call(during.app, 'tools/call', { name: 'fly', arguments: { to: 'Lisbon' }, requestState: oldToken, inputResponses: accept })
  t.same(ok.body.result.content, [{ type: 'text', text: 'Porto to Lisbon' }])
  const newToken = await token(during.app)
  const after = await server(t, [newKey])
  const refused = await call(after.app, 'tools/call', { name: 'fly', arguments: { to: 'Lisbon' }, requestState: oldToken, inputResponses: accept })
  t.same(refused.body.error, REFUSED)
  const minted = await call(after.app, 'tools/call', { name: 'fly', arguments: { to: 'Lisbon' }, requestState: newToken, inputResponses: accept })
  t.same(minted.body.result.content, [{ type: 'text', text: 'Porto to Lisbon' }], 'the ring encrypts with its first key')
})

t.test('keys come from MOCAPI_REQUEST_STATE_KEYS when the option is absent', async (t) => {
  const saved = process.env.MOCAPI_REQUEST_STATE_KEYS
  t.teardown(() => { if (saved === undefined) delete process.env.MOCAPI_REQUEST_STATE_KEYS; else process.env.MOCAPI_REQUEST_STATE_KEYS = saved })
  process.env.MOCAPI_REQUEST_STATE_KEYS = ` ${randomBytes(32).toString('base64')} , ${KEY}`
  const envApp = Fastify()
  await envApp.register(mocapi)
  travelTools(envApp)
  t.teardown(() => envApp.close())
  const { app } = await server(t, [KEY])
  const state = await token(app)
  const retry = await call(envApp, 'tools/call', { name: 'fly', arguments: { to: 'Lisbon' }, requestState: state, inputResponses: accept })
  t.same(retry.body.result.content, [{ type: 'text', text: 'Porto to Lisbon' }], 'the second env key decrypts')
})

t.test('without keys: an ephemeral key and one warning', async (t) => {
  const saved = process.env.MOCAPI_REQUEST_STATE_KEYS
  delete process.env.MOCAPI_REQUEST_STATE_KEYS
  t.teardown(() => { if (saved !== undefined) process.env.MOCAPI_REQUEST_STATE_KEYS = saved })
  const warnings: string[] = []
  const app = Fastify({ logger: { level: 'warn', stream: { write: (line: string) => { warnings.push(JSON.parse(line).msg) } } } })
  await app.register(mocapi)
  travelTools(app)
  t.teardown(() => app.close())
  t.equal(warnings.length, 1)
  t.match(warnings[0], /ephemeral key/)
  const state = await token(app)
  const retry = await call(app, 'tools/call', { name: 'fly', arguments: { to: 'Lisbon' }, requestState: state, inputResponses: accept })
  t.same(retry.body.result.content, [{ type: 'text', text: 'Porto to Lisbon' }])
})

t.test('a bad key fails registration without printing it', async (t) => {
  const short = randomBytes(16).toString('base64')
  const app = Fastify()
  t.teardown(() => app.close())
  const error = await app.register(mocapi, { requestState: { keys: [KEY, short] } }).then(() => undefined, (error: Error) => error)
  t.match(error?.message, /^mocapi: requestState\.keys\[1\] must decode to 32 bytes/)
  t.notMatch(error?.message, short)
})

async function jwtServer (t: Parameters<typeof build>[0], principal?: (request: any) => string | null) {
  const app = Fastify()
  await app.register(fastifyJwt, { secret: 'a-test-secret-that-is-long-enough' })
  app.addHook('onRequest', async (request) => {
    if (request.headers.authorization !== undefined) await request.jwtVerify()
  })
  await app.register(mocapi, { requestState: { keys: [KEY] }, ...(principal === undefined ? {} : { principal }) })
  const runs = travelTools(app)
  t.teardown(() => app.close())
  await app.ready()
  return { app, runs, sign: (claims: object) => app.jwt.sign(claims) }
}

t.test('a token is bound to the principal from @fastify/jwt', async (t) => {
  const { app, runs, sign } = await jwtServer(t)
  const alice = { authorization: `Bearer ${sign({ sub: 'alice' })}` }
  const bob = { authorization: `Bearer ${sign({ sub: 'bob' })}` }
  const params = { name: 'fly', arguments: { to: 'Lisbon' } }
  const first = await call(app, 'tools/call', params, { headers: alice })
  const state = first.body.result.requestState
  const before = runs.count
  const asBob = await call(app, 'tools/call', { ...params, requestState: state, inputResponses: accept }, { headers: bob })
  t.same(asBob.body.error, REFUSED)
  const anonymous = await call(app, 'tools/call', { ...params, requestState: state, inputResponses: accept })
  t.same(anonymous.body.error, REFUSED)
  t.equal(runs.count, before, 'nothing ran for another principal')
  const asAlice = await call(app, 'tools/call', { ...params, requestState: state, inputResponses: accept }, { headers: alice })
  t.same(asAlice.body.result.content, [{ type: 'text', text: 'Porto to Lisbon' }])

  const anonToken = (await call(app, 'tools/call', params)).body.result.requestState
  const anonRetry = await call(app, 'tools/call', { ...params, requestState: anonToken, inputResponses: accept })
  t.same(anonRetry.body.result.content, [{ type: 'text', text: 'Porto to Lisbon' }], 'null only from null')
  const aliceOnAnon = await call(app, 'tools/call', { ...params, requestState: anonToken, inputResponses: accept }, { headers: alice })
  t.same(aliceOnAnon.body.error, REFUSED)
})

t.test('the principal option overrides request.user', async (t) => {
  const { app, sign } = await jwtServer(t, (request) => request.user?.tenant ?? null)
  const params = { name: 'fly', arguments: { to: 'Lisbon' } }
  const first = await call(app, 'tools/call', params, { headers: { authorization: `Bearer ${sign({ sub: 'alice', tenant: 'acme' })}` } })
  const sameTenant = await call(app, 'tools/call', { ...params, requestState: first.body.result.requestState, inputResponses: accept },
    { headers: { authorization: `Bearer ${sign({ sub: 'bob', tenant: 'acme' })}` } })
  t.same(sameTenant.body.result.content, [{ type: 'text', text: 'Porto to Lisbon' }])
})

t.test('a principal function that returns undefined means anonymous', async (t) => {
  const { app } = await jwtServer(t, () => undefined as never)
  const params = { name: 'fly', arguments: { to: 'Lisbon' } }
  const first = await call(app, 'tools/call', params)
  t.equal(first.body.result.resultType, 'input_required')
  const retry = await call(app, 'tools/call', { ...params, requestState: first.body.result.requestState, inputResponses: accept })
  t.same(retry.body.result.content, [{ type: 'text', text: 'Porto to Lisbon' }])
})

t.test('a string request.user is the principal', async (t) => {
  const app = Fastify()
  app.decorateRequest('user', '')
  app.addHook('onRequest', async (request) => { (request as any).user = request.headers['x-user'] ?? null })
  await app.register(mocapi, { requestState: { keys: [KEY] } })
  travelTools(app)
  t.teardown(() => app.close())
  const params = { name: 'fly', arguments: { to: 'Lisbon' } }
  const first = await call(app, 'tools/call', params, { headers: { 'x-user': 'carol' } })
  const other = await call(app, 'tools/call', { ...params, requestState: first.body.result.requestState, inputResponses: accept }, { headers: { 'x-user': 'dave' } })
  t.same(other.body.error, REFUSED)
  const same = await call(app, 'tools/call', { ...params, requestState: first.body.result.requestState, inputResponses: accept }, { headers: { 'x-user': 'carol' } })
  t.same(same.body.result.content, [{ type: 'text', text: 'Porto to Lisbon' }])
})

t.test('a numeric sub is a principal of its own: a token for 42 is refused to 43, to a token without sub, and to no token', async (t) => {
  const { app, runs, sign } = await jwtServer(t)
  const as = (claims: object) => ({ headers: { authorization: `Bearer ${sign(claims)}` } })
  const params = { name: 'fly', arguments: { to: 'Lisbon' } }
  const first = await call(app, 'tools/call', params, as({ sub: 42 }))
  t.equal(first.body.result.resultType, 'input_required')
  const state = first.body.result.requestState
  const before = runs.count
  t.same((await call(app, 'tools/call', { ...params, requestState: state, inputResponses: accept }, as({ sub: 43 }))).body.error, REFUSED, 'sub 43')
  t.same((await call(app, 'tools/call', { ...params, requestState: state, inputResponses: accept })).body.error, REFUSED, 'anonymous')
  t.same((await call(app, 'tools/call', { ...params, requestState: state, inputResponses: accept }, as({ sub: '43' }))).body.error, REFUSED, 'the string "43"')
  const noSub = await call(app, 'tools/call', { ...params, requestState: state, inputResponses: accept }, as({ client_id: 'svc' }))
  t.equal(noSub.status, 403, 'a token without sub is refused outright')
  t.equal(runs.count, before, 'nothing ran for another caller')
  const same = await call(app, 'tools/call', { ...params, requestState: state, inputResponses: accept }, as({ sub: 42 }))
  t.same(same.body.result.content, [{ type: 'text', text: 'Porto to Lisbon' }])
  const asString = await call(app, 'tools/call', { ...params, requestState: state, inputResponses: accept }, as({ sub: '42' }))
  t.same(asString.body.result.content, [{ type: 'text', text: 'Porto to Lisbon' }], 'the number 42 and the string "42" are one principal')
})

t.test('an authenticated caller without a principal is never anonymous: its interactive rounds are refused', async (t) => {
  const { app, runs, sign } = await jwtServer(t)
  const service = { headers: { authorization: `Bearer ${sign({ client_id: 'billing', scope: 'mcp' })}` } }
  const params = { name: 'fly', arguments: { to: 'Lisbon' } }
  const first = await call(app, 'tools/call', params, service)
  t.equal(first.status, 403)
  t.same(first.body.error, {
    code: -32600,
    message: 'This request is authenticated, but mocapi found no principal to bind its requestState to (request.user has no string or numeric sub): the server must set the principal option',
  })
  t.equal(runs.count, 1, 'the handler ran its first pass, and its yield was refused')
  const anonToken = (await call(app, 'tools/call', params)).body.result.requestState
  const replay = await call(app, 'tools/call', { ...params, requestState: anonToken, inputResponses: accept }, service)
  t.equal(replay.status, 403, 'an anonymous token is not its to use either')
  t.equal((await call(app, 'tools/list', {}, service)).status, 200, 'what takes no rounds is served')
})

t.test('a principal function that returns something other than a string, a number, null or undefined fails closed', async (t) => {
  const { app } = await jwtServer(t, (() => ({ id: 'x' })) as never)
  const first = await call(app, 'tools/call', { name: 'fly', arguments: { to: 'Lisbon' } })
  t.equal(first.status, 403)
  const numeric = await jwtServer(t, (() => 7) as never)
  const seven = await call(numeric.app, 'tools/call', { name: 'fly', arguments: { to: 'Lisbon' } })
  t.equal(seven.body.result.resultType, 'input_required', 'a number is made a string')
})
