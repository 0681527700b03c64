import t from 'tap'
import { createHash } from 'node:crypto'
import Fastify from 'fastify'
import { KeyRing } from '../../lib/seal/seal.js'
import { SessionCodec, reduceCapabilities, reduceInfo, MAX_OPENED_SESSIONS, MAX_SESSION_ID_LENGTH, type Session } from '../../lib/legacy/session.js'
import { MAX_REMEMBERED_LEVELS, SessionHub } from '../../lib/legacy/hub.js'
import { legacyError, legacyResult } from '../../lib/legacy/shape.js'
import { Exchange } from '../../lib/legacy/exchange.js'
import { McpError, ResourceNotFoundError } from '../../lib/errors.js'
import { requestedSchema } from '../../lib/index.js'
import { Subscriptions } from '../../lib/features/subscriptions.js'

const key = createHash('sha256').update('session unit key').digest()
const bound = { value: 'alice', state: 'bound' } as const

t.test('capabilities and client info are reduced to what mocapi reads, and bounded', async (t) => {
  t.same(reduceCapabilities(undefined), {})
  t.same(reduceCapabilities('all'), {})
  t.same(reduceCapabilities({ elicitation: {}, sampling: {}, roots: {}, experimental: { x: {} } }), { elicitation: {}, sampling: {}, roots: {} })
  t.same(reduceCapabilities({ elicitation: { form: { extra: 1 }, url: {} }, sampling: { tools: {}, context: { a: 1 } }, roots: { listChanged: true } }),
    { elicitation: { form: {}, url: {} }, sampling: { tools: {}, context: {} }, roots: { listChanged: true } })
  t.same(reduceCapabilities({ elicitation: { url: {} }, sampling: { tools: true }, roots: { listChanged: 'yes' } }), { elicitation: { url: {} }, sampling: {}, roots: {} })
  t.same(reduceCapabilities({ elicitation: 'yes', sampling: [], roots: null }), {})
  t.equal(reduceInfo(null), undefined)
  t.equal(reduceInfo({ name: 'c' }), undefined, 'a version is needed')
  t.same(reduceInfo({ name: 'c', version: '1', title: 'C', icons: [] }), { name: 'c', version: '1', title: 'C' })
  t.equal((reduceInfo({ name: 'x'.repeat(5000), version: '1' }) as { name: string }).name.length, 256)
  const codec = new SessionCodec(new KeyRing([key]), 60_000)
  const huge = codec.create(bound, '2025-11-25', { elicitation: {}, experimental: { big: { data: 'x'.repeat(100_000) } } }, { name: 'x'.repeat(10_000), version: 'y'.repeat(10_000) })
  t.ok(codec.seal(huge).length < 2000, 'a session id fits in a header whatever the client declared')
})

t.test('a session opens only while live, only under the ring, only as a session', async (t) => {
  let now = 1_000_000
  const codec = new SessionCodec(new KeyRing([key]), 60_000, () => now)
  const session = codec.create(bound, '2025-06-18', { roots: {} }, undefined)
  const id = codec.seal(session)
  t.same(codec.open(id), session)
  now += 59_999
  t.ok(codec.open(id), 'until its ttl')
  now += 1
  t.equal(codec.open(id), undefined, 'expired')
  t.equal(codec.open('x'.repeat(MAX_SESSION_ID_LENGTH + 1)), undefined)
  t.equal(codec.open(''), undefined)
  const other = new SessionCodec(new KeyRing([createHash('sha256').update('another key').digest()]), 60_000, () => now)
  t.equal(other.open(codec.seal(codec.create(bound, '2025-11-25', {}, undefined))), undefined, 'another ring')
})

t.test('an opened session id is kept, frozen, within a bound, and still expires', async (t) => {
  let now = 1_000_000
  const codec = new SessionCodec(new KeyRing([key]), 60_000, () => now)
  const id = codec.seal(codec.create(bound, '2025-11-25', { elicitation: { form: {} } }, { name: 'c', version: '1' }))
  const first = codec.open(id) as Session
  t.equal(codec.open(id), first, 'the second request of the session gets the kept session')
  t.ok(Object.isFrozen(first) && Object.isFrozen(first.capabilities) && Object.isFrozen(first.capabilities.elicitation) && Object.isFrozen(first.principal),
    'a kept session cannot be changed by one request for the next')
  for (let i = 0; i < MAX_OPENED_SESSIONS; i++) codec.open(codec.seal(codec.create(bound, '2025-11-25', {}, undefined)))
  const again = codec.open(id) as Session
  t.not(again, first, 'past the bound the oldest was let go, and its id is opened again')
  t.same(again, first)
  now += 60_000
  t.equal(codec.open(id), undefined, 'a kept session expires like any other')
  t.equal(codec.open(id), undefined)
})

t.test('a sealed payload of the wrong shape is no session', async (t) => {
  const ring = new KeyRing([key])
  const { Sealer } = await import('../../lib/seal/seal.js')
  const sealer = new Sealer(ring, 3, 4096)
  const codec = new SessionCodec(ring, 60_000, () => 0)
  const good = ['id', null, 'anonymous', '2025-11-25', {}, null, 0, 10]
  t.ok(codec.open(sealer.seal(JSON.stringify(good))))
  const bad: unknown[] = [
    'not an array', [1, 2], [...good, 'extra'],
    Object.assign([...good], { 0: 5 }), Object.assign([...good], { 1: 5 }), Object.assign([...good], { 3: 5 }),
    Object.assign([...good], { 2: 'admin' }), Object.assign([...good], { 4: [] }), Object.assign([...good], { 5: 'info' }),
    Object.assign([...good], { 6: '0' }), Object.assign([...good], { 7: null }),
  ]
  for (const payload of bad) t.equal(codec.open(sealer.seal(JSON.stringify(payload))), undefined, JSON.stringify(payload))
  t.equal(codec.open(sealer.seal('not json')), undefined)
})

t.test('a node remembers the log levels of a bounded number of sessions, the most recent', async (t) => {
  const published: unknown[] = []
  const hub = new SessionHub(new Subscriptions({ streams: 1, streamsPerCaller: 1, subscriptionUris: 1, uriLength: 10 }, () => true, { view: async () => undefined }), (event) => published.push(event), 'node-a')
  hub.setLevel('first', 'debug')
  t.same(published, [{ kind: 'session', session: 'first', op: 'level', level: 'debug' }])
  for (let i = 0; i < MAX_REMEMBERED_LEVELS; i++) hub.receive({ kind: 'session', session: `s${i}`, op: 'level', level: 'error' })
  t.equal(hub.levelOf('first'), undefined, 'the oldest is forgotten')
  t.equal(hub.levelOf(`s${MAX_REMEMBERED_LEVELS - 1}`), 'error')
  hub.receive({ kind: 'session', session: 'nobody', op: 'cancel', requestId: 1 })
  hub.receive({ kind: 'session', session: 'nobody', op: 'subscribe', uri: 'x' })
  t.pass('events for sessions this node holds nothing of are no-ops')
})

t.test('results and errors in the 2025 shapes', async (t) => {
  t.same(legacyResult('tools/call', { resultType: 'complete', content: [], _meta: { 'io.modelcontextprotocol/serverInfo': {}, 'com.example/trace': 'x' } }),
    { content: [], _meta: { 'com.example/trace': 'x' } }, 'other _meta keys stay')
  t.same(legacyResult('tools/call', { content: [], _meta: { 'com.example/trace': 'y' } }), { content: [], _meta: { 'com.example/trace': 'y' } }, 'a _meta without serverInfo is kept whole')
  t.same(legacyResult('prompts/get', { messages: [], _meta: { 'io.modelcontextprotocol/serverInfo': {} } }), { messages: [] }, 'a _meta of serverInfo alone goes')
  t.same(legacyResult('tools/call', { content: [], structuredContent: { a: 1 } }), { content: [], structuredContent: { a: 1 } })
  const kept = new McpError(-32603, 'boom', { statusCode: 500 })
  t.equal(legacyError(kept), kept, 'an error that needs no change is the same error')
  t.same(legacyError(new McpError(-32020, 'header', { statusCode: 400 })).toJSON(), { code: -32600, message: 'header' })
  t.equal(legacyError(new McpError(-32022, 'v', { statusCode: 400 })).statusCode, 200)
  t.same(legacyError(new McpError(-32602, 'Resource not found', { statusCode: 200 })).code, -32602, 'an error that only reads the same is kept')
  t.same(legacyError(new ResourceNotFoundError('files://gone')).toJSON(), { code: -32002, message: 'Resource not found', data: { uri: 'files://gone' } })
})

t.test('an answer forwarded to a node that never acknowledges is refused after a while, and a bus that fails is logged', async (t) => {
  const lines: string[] = []
  const log = Fastify({ logger: { level: 'error', stream: { write: (line: string) => { lines.push(JSON.parse(line).msg) } } } }).log
  const failing = new Exchange({ node: 'n1', routed: true, send: async () => { throw new Error('bus down') } }, log, 1000)
  t.equal(await failing.answer({ id: 'other.call.0', result: {}, error: undefined }, { session: 's', principal: null }), 'refused')
  t.same(lines, ["mocapi could not forward a client's answer over the bus"])
  const acks: object[] = []
  const silent = new Exchange({ node: 'n1', routed: true, send: async (_node, message) => { acks.push(message); return true } }, log, 1000, 50)
  const started = Date.now()
  t.equal(await silent.answer({ id: 'other.call.0', result: {}, error: undefined }, { session: 's', principal: null }), 'refused', 'no acknowledgement')
  t.ok(Date.now() - started >= 45)
  acks.length = 0
  silent.received({ t: 'ack', ticket: 'unknown', delivery: 'accepted' })
  silent.received({ t: 'something else' })
  silent.received({ t: 'answer', id: 'x', from: 'n', ticket: 't', asker: { session: 1 } })
  t.same(acks, [], 'malformed messages are dropped')
  silent.received({ t: 'answer', id: `${silent.node}.nope.0`, from: 'n', ticket: 't', asker: { session: 's', principal: null }, result: {} })
  await new Promise((resolve) => setImmediate(resolve))
  t.same(acks, [{ t: 'ack', ticket: 't', delivery: 'refused' }], 'an answer for no call here is acknowledged as refused')
  const acker = new Exchange({ node: 'n1', routed: true, send: async () => { throw new Error('ack lost') } }, log, 1000)
  acker.received({ t: 'answer', id: `${acker.node}.nope.0`, from: 'n', ticket: 't', asker: { session: 's', principal: null }, result: {} })
  await new Promise((resolve) => setImmediate(resolve))
  t.match(lines, ["mocapi could not forward a client's answer over the bus", 'mocapi could not acknowledge a forwarded answer over the bus'])
})

t.test('misused ctx methods and odd callers', async (t) => {
  const { build, call } = await import('../helpers.js')
  const seen: unknown[] = []
  const app = await build(t, {}, (app) => {
    app.addHook('onRequest', async (request) => { if (request.headers['x-weird-user'] !== undefined) (request as any).user = true })
    app.mcp.tool({ name: 'watch', canAccess: (ctx) => { seen.push(ctx.signal.aborted); return true } }, () => 'w')
      .prompt({ name: 'p', arguments: [{ name: 'a', complete: () => { throw new McpError(-32602, 'no completions for you') } }] }, () => 'p')
      .tool({ name: 'sampler' }, async (_args, ctx) => {
        const signal = ctx.signal
        try {
          await ctx.sample({ messages: [], maxTokens: 5 })
        } finally {
          seen.push(signal.aborted)
        }
        return 'x'
      })
    app.addHook('onResponse', async (request) => {
      await request.mcp?.sample({ messages: [], maxTokens: 1 }).catch((error: Error) => seen.push(error.message))
    })
  })
  await call(app, 'tools/list')
  t.equal(seen[0], false, 'ctx.signal outside a handler is the request\'s own')
  t.equal(seen[1], 'input requests (ctx.elicit, ctx.sample, ctx.listRoots) are only available in tools/call, prompts/get and resources/read handlers, not in tools/list')
  const completion = await call(app, 'completion/complete', { ref: { type: 'ref/prompt', name: 'p' }, argument: { name: 'a', value: '' } })
  t.same(completion.body.error, { code: -32602, message: 'no completions for you' }, 'a completer\'s McpError is its answer')
  const first = await call(app, 'tools/call', { name: 'sampler' }, { capabilities: { sampling: {} } })
  const bad = await call(app, 'tools/call', { name: 'sampler', requestState: first.body.result.requestState, inputResponses: { 'sample-1': { role: 'nobody' } } }, { capabilities: { sampling: {} } })
  t.equal(bad.body.error.code, -32602)
  t.equal(seen.at(-2), true, 'a pass that failed aborts the signal its handler read')
  const weird = await call(app, 'tools/call', { name: 'sampler' }, { capabilities: { sampling: {} }, headers: { 'x-weird-user': '1' } })
  t.equal(weird.status, 403, 'a request.user that is neither a string nor an object is no principal: fail closed')
})

t.test('registration and request edges', async (t) => {
  const { build, call } = await import('../helpers.js')
  const app = await build(t, {}, (app) => {
    app.addHook('onRequest', async (request) => { if (request.headers['x-throw'] !== undefined) throw 'a string, not an error' })  // eslint-disable-line no-throw-literal
  })
  t.throws(() => app.mcp.tool({ name: 'bad_output', inputSchema: { $id: 'https://example.com/in', type: 'object' }, outputSchema: { type: 'nope' } }, () => 'x'),
    { code: 'FST_MOCAPI_INVALID_SCHEMA', message: /tool "bad_output" outputSchema is not a valid JSON Schema/ })
  app.mcp.tool({ name: 'bad_output', inputSchema: { $id: 'https://example.com/in', type: 'object' } }, () => 'fine')
  t.same((await call(app, 'tools/call', { name: 'bad_output' })).body.result.content, [{ type: 'text', text: 'fine' }], 'the input schema a refused tool compiled was let go')
  const thrown = await call(app, 'tools/list', {}, { headers: { 'x-throw': '1' } })
  t.same([thrown.status, thrown.body.error.code], [500, -32603], 'a hook that throws something odd is an internal error')
})

t.test('a ledger slot of sampling params that changed says so', async (t) => {
  const { build, call } = await import('../helpers.js')
  let tokens = 5
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'ask_model' }, async (_args, ctx) => {
      await ctx.sample({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: tokens })
      await ctx.listRoots()
      return 'done'
    })
  })
  const caps = { capabilities: { sampling: {}, roots: {} } }
  const first = await call(app, 'tools/call', { name: 'ask_model' }, caps)
  const second = await call(app, 'tools/call', { name: 'ask_model', requestState: first.body.result.requestState, inputResponses: { 'sample-1': { role: 'assistant', content: { type: 'text', text: 'x' }, model: 'm' } } }, caps)
  tokens = 6
  const changed = await call(app, 'tools/call', { name: 'ask_model', requestState: second.body.result.requestState, inputResponses: { 'roots-2': { roots: [] } } }, caps)
  t.same(changed.body.error.data, { reason: 'ledger_mismatch', ordinal: 1, part: 'params' })
})

t.test('the exchange: waits that end every way, answers taken once, and bus messages checked', async (t) => {
  const log = Fastify().log
  const sent: object[] = []
  const exchange = new Exchange({ node: 'n1', routed: true, send: async (_node, message) => { sent.push(message); return true } }, log, 100)
  const asker = { session: 's', principal: 'alice' }
  const question = { 'elicit-1': { method: 'elicitation/create', params: { message: 'Name?', requestedSchema: { type: 'object', properties: {} } } } } as any
  const params = () => ({})
  const gone = new AbortController()
  gone.abort(new DOMException('the client went away', 'AbortError'))
  const before = await exchange.ask(asker, question, () => true, gone.signal, params)
  t.same([before.kind, (before as any).reason.message], ['aborted', 'the client went away'], 'a signal aborted before asking asks nothing')
  const unsent = await exchange.ask(asker, question, () => false, new AbortController().signal, params)
  t.same([unsent.kind, (unsent as any).reason.message], ['aborted', 'the client went away'], 'a request that cannot be sent ends the wait')
  const racing = new AbortController()
  const raced = await exchange.ask(asker, question, () => { racing.abort(new DOMException('closed while sending', 'AbortError')); return false }, racing.signal, params)
  t.equal((raced as any).reason.message, 'closed while sending', 'the first way a wait ends is the one reported')
  t.same(await exchange.ask(asker, question, () => true, new AbortController().signal, params), { kind: 'timeout' }, 'no answer within the timeout')

  let id = ''
  const waiting = exchange.ask(asker, question, (request) => { id = (request as { id: string }).id; return true }, new AbortController().signal, params)
  t.equal(await exchange.answer({ id, result: { action: 'accept' }, error: undefined }, { session: 's', principal: 'mallory' }), 'refused', 'another caller of the session')
  t.equal(await exchange.answer({ id, result: { action: 'accept' }, error: undefined }, { session: 'other', principal: 'alice' }), 'refused', 'another session')
  t.equal(await exchange.answer({ id: id.replace(/\.0$/, '.7'), result: {}, error: undefined }, asker), 'refused', 'a request never sent')
  t.equal(await exchange.answer({ id, result: { action: 'accept' }, error: undefined }, asker), 'accepted')
  t.same(await waiting, { kind: 'answered', responses: { 'elicit-1': { action: 'accept' } }, errors: [] })
  t.equal(await exchange.answer({ id, result: { action: 'decline' }, error: undefined }, asker), 'refused', 'an answer is taken once')

  let forwardedId = ''
  const forwarded = exchange.ask(asker, question, (request) => { forwardedId = (request as { id: string }).id; return true }, new AbortController().signal, params)
  exchange.received({ t: 'answer', id: forwardedId, from: 'n2', ticket: 't1', asker, error: { code: -1, message: 'user closed the dialog' } })
  t.same(await forwarded, { kind: 'answered', responses: {}, errors: [{ key: 'elicit-1', method: 'elicitation/create', error: { code: -1, message: 'user closed the dialog' } }] },
    'an error answer forwarded from another node, by a named caller')
  exchange.received({ t: 'answer', id: 'no-dots', from: 'n2', ticket: 't2', asker })
  exchange.received({ t: 'answer', id: 'a.b.c', from: 'n2', ticket: 't3', asker: { session: 's', principal: 5 } })
  await new Promise((resolve) => setImmediate(resolve))
  t.same(sent, [{ t: 'ack', ticket: 't1', delivery: 'accepted' }, { t: 'ack', ticket: 't2', delivery: 'refused' }], 'a malformed id is refused; a malformed caller is dropped')

  const pending = exchange.answer({ id: 'n2.call.0', result: {}, error: undefined }, asker)
  await new Promise((resolve) => setImmediate(resolve))
  const { ticket } = sent.at(-1) as { ticket: string }
  exchange.received({ t: 'ack', ticket: 5, delivery: 'accepted' })
  exchange.received({ t: 'ack', ticket, delivery: 'maybe' })
  exchange.received({ t: 'ack', ticket, delivery: 'accepted' })
  t.equal(await pending, 'accepted', 'only a well-formed acknowledgement settles a forwarded answer')
})

t.test('a ledger slot whose URL changed says so', async (t) => {
  const { build, call } = await import('../helpers.js')
  let url = 'https://example.com/sign-in?a'
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'sign_in' }, async (_args, ctx) => {
      await ctx.elicitUrl('Sign in', url)
      await ctx.elicit('Name?', requestedSchema().string('name'))
      return 'done'
    })
  })
  const caps = { capabilities: { elicitation: { form: {}, url: {} } } }
  const first = await call(app, 'tools/call', { name: 'sign_in' }, caps)
  url = 'https://example.com/sign-in?b'
  const changed = await call(app, 'tools/call', { name: 'sign_in', requestState: first.body.result.requestState, inputResponses: { 'elicit-1': { action: 'accept' } } }, caps)
  t.same(changed.body.error.data, { reason: 'ledger_mismatch', ordinal: 1, part: 'url' })
})
