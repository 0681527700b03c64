/**
 * Receipts over real HTTP, counting each effect's runs: a retried round, a keyed tools/call of either era, duplicates
 * in sequence and at once, a duplicate while its first runs, a key reused with other arguments, two principals with
 * one key, errors, replies too large to keep, a task-creating call, `receipts: false`, and the stores' bounds.
 */
import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import mocapi, { MemoryReceiptStore, requestedSchema, type MocapiOptions } from '../../lib/index.js'
import { receiptStoreChecks } from '../../lib/testing/index.js'
import { EventStreamParser } from '../../lib/testing/transport.js'
import { KEY, capturedLogs, jwtServer, meta, openSession } from '../helpers.js'
import { WITH_TASKS } from '../tasks/client.js'

type Runs = Record<string, number>

function ran (runs: Runs, what: string): number {
  runs[what] = (runs[what] ?? 0) + 1
  return runs[what]
}

/** A listening app whose tools count their effects in `runs` (no `ctx.once`: receipts alone must keep them once). */
async function server (t: Test, options: MocapiOptions = {}) {
  const runs: Runs = {}
  const { app, url, lines, token } = await jwtServer(t, options, (app) => tools(app, runs))
  return { app, url, runs, lines, token: (sub: string) => token({ sub }) }
}

function tools (app: FastifyInstance, runs: Runs): void {
  const amount = { type: 'object', properties: { amount: { type: 'integer' }, ms: { type: 'integer' } } } as const
  app.mcp.tool({ name: 'pay', inputSchema: amount }, async (args: { amount?: number, ms?: number }, ctx) => {
    const ok = await ctx.elicit(`Pay? (call ${ctx.callId})`, requestedSchema().boolean('pay'))
    if (args.ms !== undefined) await sleep(args.ms)
    const charge = ran(runs, 'charge')
    await ctx.elicit('Receipt by mail?', requestedSchema().boolean('mail'))
    return `charge #${charge} of ${args.amount ?? 0}, ${ok.action}, call ${ctx.callId}`
  })
  app.mcp.tool({ name: 'order', inputSchema: amount }, async (args: { amount?: number, ms?: number }, ctx) => {
    if (args.ms !== undefined) await sleep(args.ms)
    return `order #${ran(runs, 'order')} of ${args.amount ?? 0}, call ${ctx.callId}`
  })
  app.mcp.tool({ name: 'fail' }, async () => {
    ran(runs, 'fail')
    throw new Error('the card was declined after the charge')
  })
  app.mcp.tool({ name: 'big', inputSchema: { type: 'object', properties: { size: { type: 'integer' } }, required: ['size'] } },
    async (args: { size: number }) => `${ran(runs, 'big')}`.padEnd(args.size, 'x'))
  app.mcp.tool({ name: 'export', task: { support: 'optional' } }, async () => {
    ran(runs, 'export')
    await sleep(50)
    return 'exported'
  })
}

interface Sent { status: number, headers: Headers, body: any, stream: boolean }

/** A 2026-07-28 request over real HTTP; an event stream's last message is its body. */
async function post (url: string, method: string, params: Record<string, unknown>, options: { id?: number, headers?: Record<string, string>, meta?: object } = {}): Promise<Sent> {
  const response = await fetch(url, {
    method: 'POST',
    signal: AbortSignal.timeout(20_000),
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': method,
      'mcp-name': String(params.name),
      ...options.headers,
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: options.id ?? 1, method, params: { ...params, _meta: options.meta ?? meta() } }),
  })
  const text = await response.text()
  const stream = (response.headers.get('content-type') ?? '').startsWith('text/event-stream')
  return { status: response.status, headers: response.headers, stream, body: stream ? (new EventStreamParser().push(text) as any[]).at(-1) : JSON.parse(text) }
}

const yes = (key: string) => ({ [key]: { action: 'accept', content: { [key === 'elicit-1' ? 'pay' : 'mail']: true } } })

t.test('a retried round has a receipt: twice in sequence and twice at once, its effect runs once', async (t) => {
  const { url, runs } = await server(t)
  const first = await post(url, 'tools/call', { name: 'pay', arguments: { amount: 5 } })
  const retry = { name: 'pay', arguments: { amount: 5 }, requestState: first.body.result.requestState, inputResponses: yes('elicit-1') }
  const once = await post(url, 'tools/call', retry, { id: 2 })
  t.equal(once.body.result.resultType, 'input_required')
  t.equal(once.headers.get('idempotent-replayed'), null)
  const again = await post(url, 'tools/call', retry, { id: 3 })
  t.equal(again.headers.get('idempotent-replayed'), 'true')
  t.equal(again.body.id, 3, 'under its own id')
  t.same(again.body.result, once.body.result, 'the first retry\'s reply, its token included')
  t.same(runs, { charge: 1 })

  // Two retries of the next round at once: one runs, the other waits for it.
  const next = { ...retry, requestState: once.body.result.requestState, inputResponses: yes('elicit-2') }
  const [a, b] = await Promise.all([post(url, 'tools/call', next, { id: 4 }), post(url, 'tools/call', next, { id: 5 })])
  t.same(a.body.result.content, b.body.result.content)
  t.same([a.body.id, b.body.id], [4, 5])
  t.same([a.headers.get('idempotent-replayed'), b.headers.get('idempotent-replayed')].sort(), ['true', null].sort())
  // The last round replays the handler from the top, so the code before its last question runs once more (ADR-0021):
  // once for the two retries, not twice.
  t.same(runs, { charge: 2 })
  t.match(a.body.result.content[0].text, /^charge #2 of 5, accept, call [A-Za-z0-9_-]{22}$/)
  // The same round with other answers is another request: it runs.
  const other = await post(url, 'tools/call', { ...retry, inputResponses: { 'elicit-1': { action: 'decline' } } }, { id: 6 })
  t.equal(other.headers.get('idempotent-replayed'), null)
  t.same(runs, { charge: 3 })
})

t.test('ctx.callId is the call\'s on every round, and another call\'s is another', async (t) => {
  const { url } = await server(t)
  const idOf = (text: string) => /call ([A-Za-z0-9_-]{22})\)?$/.exec(text)?.[1]
  const calls: string[] = []
  for (let n = 0; n < 2; n++) {
    const first = await post(url, 'tools/call', { name: 'pay', arguments: {} })
    const second = await post(url, 'tools/call', { name: 'pay', arguments: {}, requestState: first.body.result.requestState, inputResponses: yes('elicit-1') })
    const done = await post(url, 'tools/call', { name: 'pay', arguments: {}, requestState: second.body.result.requestState, inputResponses: yes('elicit-2') })
    const seen = [first.body.result.inputRequests['elicit-1'].params.message, done.body.result.content[0].text].map(idOf)
    t.equal(seen[0], seen[1], `call ${n}: the same id in its first round and its last`)
    calls.push(seen[0] as string)
  }
  t.not(calls[0], calls[1], 'two calls, two ids')
})

t.test('a keyed tools/call: a duplicate gets the first reply; both spellings name one receipt; a bad or split key is -32602', async (t) => {
  const { url, runs } = await server(t)
  const first = await post(url, 'tools/call', { name: 'order', arguments: { amount: 3 } }, { headers: { 'idempotency-key': 'order-0001' } })
  t.match(first.body.result.content[0].text, /^order #1 of 3/)
  const viaMeta = await post(url, 'tools/call', { name: 'order', arguments: { amount: 3 } }, { id: 7, meta: meta({}, { 'mocapi/idempotencyKey': 'order-0001' }) })
  t.equal(viaMeta.headers.get('idempotent-replayed'), 'true')
  t.same(viaMeta.body, { ...first.body, id: 7 })
  t.same(runs, { order: 1 })
  const reused = await post(url, 'tools/call', { name: 'order', arguments: { amount: 4 } }, { headers: { 'idempotency-key': 'order-0001' } })
  t.same(reused.body.error, { code: -32602, message: 'The idempotency key "order-0001" was used for another call: its tool or arguments differed; nothing ran' })
  const split = await post(url, 'tools/call', { name: 'order', arguments: {} }, { headers: { 'idempotency-key': 'a' }, meta: meta({}, { 'mocapi/idempotencyKey': 'b' }) })
  t.equal(split.body.error.code, -32602)
  for (const bad of ['', 'has space', 'x'.repeat(256), 'é']) {
    const refused = await post(url, 'tools/call', { name: 'order', arguments: {} }, { meta: meta({}, { 'mocapi/idempotencyKey': bad }) })
    t.match(refused.body.error, { code: -32602, message: /1 to 255 characters/ }, `key ${JSON.stringify(bad.slice(0, 10))}`)
  }
  t.same(runs, { order: 1 }, 'nothing ran for a refused key')
  // A keyed call without arguments is the call with `{}`; one whose arguments JSON cannot write back has no receipt.
  const bare = await post(url, 'tools/call', { name: 'order' }, { headers: { 'idempotency-key': 'order-0001' } })
  t.same(reused.body.error, bare.body.error, 'no arguments are other arguments than { amount: 3 }')
  const atBound = await post(url, 'tools/call', { name: 'order', arguments: {} }, { headers: { 'idempotency-key': '~'.repeat(255) } })
  t.match(atBound.body.result.content[0].text, /^order #2/, 'a key of 255 characters is taken')
  const other = await post(url, 'tools/call', { name: 'order', arguments: { amount: 3 } }, { headers: { 'idempotency-key': 'order-0002' } })
  t.match(other.body.result.content[0].text, /^order #3/, 'another key is another call')
  for (const n of [4, 5]) {
    const response = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'order', 'idempotency-key': 'huge' },
      body: `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"order","arguments":{"note":1e400},"_meta":${JSON.stringify(meta())}}}`,
    })
    const body = await response.json() as any
    t.match(body.result.content[0].text, new RegExp(`^order #${n}`), 'arguments JSON cannot write back: no receipt, so each runs')
  }
})

t.test('two principals with one key each get their own call and callId; an anonymous caller\'s key is its only secret', async (t) => {
  const { url, runs, token } = await server(t)
  const headers = (sub: string) => ({ 'idempotency-key': 'shared-key', authorization: `Bearer ${token(sub)}` })
  const ada = await post(url, 'tools/call', { name: 'order', arguments: {} }, { headers: headers('ada') })
  const bob = await post(url, 'tools/call', { name: 'order', arguments: {} }, { headers: headers('bob') })
  const adaAgain = await post(url, 'tools/call', { name: 'order', arguments: {} }, { headers: headers('ada') })
  t.same(runs, { order: 2 })
  t.equal(adaAgain.headers.get('idempotent-replayed'), 'true')
  const callOf = (sent: Sent) => /call (\S+)$/.exec(sent.body.result.content[0].text)?.[1]
  t.not(callOf(ada), callOf(bob), 'two principals, two callIds')
})

t.test('a duplicate while its first runs waits for it, on an event stream past the heartbeat, and gets its reply', async (t) => {
  const { url, runs } = await server(t, { heartbeat: 100 })
  const key = { 'idempotency-key': 'slow-order' }
  const first = post(url, 'tools/call', { name: 'order', arguments: { ms: 600 } }, { id: 1, headers: key })
  await sleep(100)
  const duplicate = await post(url, 'tools/call', { name: 'order', arguments: { ms: 600 } }, { id: 2, headers: key })
  const answered = await first
  t.same(runs, { order: 1 })
  t.same(duplicate.body.result, answered.body.result)
  t.equal(duplicate.body.id, 2)
  t.equal(duplicate.stream, true, 'it waited past the heartbeat on an event stream')
  t.equal(answered.stream, true, 'as its first did')
})

t.test('an error after the handler ran is kept; one before it is not; a reply over receipts.maxBytes is not kept, and its duplicate is refused', async (t) => {
  const { url, runs } = await server(t, { receipts: { maxBytes: 2000 } })
  const failed = await post(url, 'tools/call', { name: 'fail', arguments: {} }, { headers: { 'idempotency-key': 'fail-1' } })
  const failedAgain = await post(url, 'tools/call', { name: 'fail', arguments: {} }, { id: 9, headers: { 'idempotency-key': 'fail-1' } })
  t.same(failedAgain.body, { ...failed.body, id: 9 })
  t.equal(failedAgain.headers.get('idempotent-replayed'), 'true')
  t.same(runs, { fail: 1 }, 'a tool that threw may have done something: not run again')
  // Refused before the handler (its arguments): no receipt, so the corrected call runs.
  const refused = await post(url, 'tools/call', { name: 'order', arguments: { amount: 'x' } }, { headers: { 'idempotency-key': 'bad-args' } })
  t.equal(refused.body.result.isError, true)
  t.equal((await post(url, 'tools/call', { name: 'order', arguments: { amount: 'x' } }, { headers: { 'idempotency-key': 'bad-args' } })).headers.get('idempotent-replayed'), null)
  t.equal(runs.order, undefined)
  // The reply's JSON-RPC message is kept up to 2000 bytes, and not past it.
  const fits = await post(url, 'tools/call', { name: 'big', arguments: { size: 1 } }, { headers: { 'idempotency-key': 'probe' } })
  const overhead = Buffer.byteLength(JSON.stringify(fits.body)) - 1
  const atBound = await post(url, 'tools/call', { name: 'big', arguments: { size: 2000 - overhead } }, { headers: { 'idempotency-key': 'at-bound' } })
  t.equal(Buffer.byteLength(JSON.stringify(atBound.body)), 2000)
  t.equal((await post(url, 'tools/call', { name: 'big', arguments: { size: 2000 - overhead } }, { headers: { 'idempotency-key': 'at-bound' } })).headers.get('idempotent-replayed'), 'true')
  const over = await post(url, 'tools/call', { name: 'big', arguments: { size: 2001 - overhead } }, { headers: { 'idempotency-key': 'over' } })
  t.equal(over.status, 200)
  const notKept = await post(url, 'tools/call', { name: 'big', arguments: { size: 2001 - overhead } }, { headers: { 'idempotency-key': 'over' } })
  t.equal(notKept.status, 409)
  t.match(notKept.body.error, { code: -32600, data: { reason: 'reply-not-kept', ranAt: /^\d{4}-\d\d-\d\dT/ } })
  t.same(runs.big, 3, 'probe, at the bound once, over the bound once')
})

t.test('a keyed task-creating call: its duplicate answers the same task, with its status now', async (t) => {
  const { url, runs } = await server(t)
  const key = { 'idempotency-key': 'export-june' }
  const created = await post(url, 'tools/call', { name: 'export', arguments: {} }, { headers: key, meta: meta(WITH_TASKS) })
  t.equal(created.body.result.resultType, 'task')
  t.equal(created.body.result.status, 'working')
  await sleep(300)
  const duplicate = await post(url, 'tools/call', { name: 'export', arguments: {} }, { id: 8, headers: key, meta: meta(WITH_TASKS) })
  t.equal(duplicate.headers.get('idempotent-replayed'), 'true')
  t.equal(duplicate.body.result.taskId, created.body.result.taskId)
  t.equal(duplicate.body.result.status, 'completed', 'its status now')
  t.same(runs, { export: 1 })
})

t.test('a keyed 2025-era tools/call runs once', async (t) => {
  const { url, runs } = await server(t)
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
  const session = { ...headers, 'mcp-session-id': await openSession(url), 'mcp-protocol-version': '2025-11-25', 'idempotency-key': 'legacy-1' }
  const send = async (id: number) => {
    const response = await fetch(url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'order', arguments: { amount: 2 } } }) })
    return { replayed: response.headers.get('idempotent-replayed'), body: await response.json() as any }
  }
  const first = await send(1)
  const second = await send(2)
  t.same(runs, { order: 1 })
  t.equal(second.replayed, 'true')
  t.same(second.body, { ...first.body, id: 2 })
  t.equal(first.body.result.resultType, undefined, 'shaped for its era')
})

t.test('receipts: false: a duplicate runs again, as before receipts', async (t) => {
  const { url, runs } = await server(t, { receipts: false })
  await post(url, 'tools/call', { name: 'order', arguments: {} }, { headers: { 'idempotency-key': 'k' } })
  await post(url, 'tools/call', { name: 'order', arguments: {} }, { headers: { 'idempotency-key': 'k' } })
  t.same(runs, { order: 2 })
})

t.test('a full memory store still renews a claim it holds, whose lease has grown a digit', async (t) => {
  const now = 9_000
  const [a, b] = ['a'.repeat(22), 'b'.repeat(22)]
  // Each claim is 31 characters (name, state, holder, a four-digit lease end, bar, fingerprint): two fill 62.
  const store = new MemoryReceiptStore({ maxBytes: 62, now: () => now })
  t.equal(await store.claim('a', a, 'fp', 500), 'claimed')
  t.equal(await store.claim('b', b, 'fp', 500), 'claimed')
  t.equal(await store.claim('c', b, 'fp', 500), 'full', 'a third finds no room')
  t.equal(await store.renew('a', a, 1_000), true)
  t.match(await store.read('a'), { state: 'running', holder: a, until: 10_000, sealed: 'fp' }, 'held, its lease end now five digits')
  t.equal(store.bytes, 63, 'counted as it is, one past the bound until it ends')
  t.equal(await store.complete('a', a, 'fp', 500), 'written', 'the claim completes, back within the bound')
})

t.test('a full memory store keeps no new receipt and says so; the call still runs, and its duplicate runs again', async (t) => {
  const store = new MemoryReceiptStore({ maxBytes: 2400 })
  const { url, runs, lines } = await server(t, { receipts: { store } })
  let kept = 0
  for (; kept < 20; kept++) {
    const key = { 'idempotency-key': `fill-${kept}` }
    await post(url, 'tools/call', { name: 'order', arguments: {} }, { headers: key })
    const duplicate = await post(url, 'tools/call', { name: 'order', arguments: {} }, { headers: key })
    if (duplicate.headers.get('idempotent-replayed') !== 'true') break
  }
  t.ok(kept >= 2 && kept < 20, `${kept} receipts fit in 2400 characters, and then no more`)
  t.ok(store.bytes <= 2400, `the store holds ${store.bytes} characters, within its bound`)
  t.equal(runs.order, kept + 2, 'each kept call ran once; past the bound a call and its duplicate both ran')
  const warned = lines.filter((line) => line.level === 40 && /receipt store kept no receipt/.test(line.msg))
  t.equal(warned.length, 1, 'said once a minute')
  t.throws(() => new MemoryReceiptStore({ maxBytes: 0 }), { code: 'FST_MOCAPI_INVALID_OPTION' })
})

t.test('a shared bus with receipts in one process\'s memory is warned of once at startup; a shared store is not', async (t) => {
  const shared = { publish () {}, subscribe () { return () => {} } }
  for (const [receipts, warned] of [[undefined, 1], [{ store: new MemoryReceiptStore() }, 1], [{ store: sharedStore() }, 0], [false, 0]] as const) {
    const logs = capturedLogs('warn')
    const app = Fastify(logs.options)
    await app.register(mocapi, { requestState: { keys: [KEY] }, bus: shared, receipts: receipts as MocapiOptions['receipts'] })
    await app.ready()
    t.equal(logs.lines.filter((line) => /receipts are kept in memory/.test(line.msg)).length, warned)
    await app.close()
  }
  const logs = capturedLogs('warn')
  const alone = Fastify(logs.options)
  await alone.register(mocapi, { requestState: { keys: [KEY] } })
  await alone.ready()
  t.equal(logs.lines.length, 0, 'one node with its in-process bus: nothing to say')
  await alone.close()
})

/** A store other than the memory one (a fleet's), which mocapi cannot tell apart from a shared one: memory-backed here. */
function sharedStore () {
  const inner = new MemoryReceiptStore()
  return {
    claim: inner.claim.bind(inner),
    renew: inner.renew.bind(inner),
    complete: inner.complete.bind(inner),
    release: inner.release.bind(inner),
    read: inner.read.bind(inner),
  }
}

t.test('receipts options are checked at registration, naming the value', async (t) => {
  for (const [receipts, message] of [
    [{ store: {} }, /receipts.store must be a ReceiptStore/],
    [{ ttl: 0 }, /receipts.ttl must be a positive integer, got 0/],
    [{ maxBytes: -1 }, /receipts.maxBytes must be a positive integer, got -1/],
    [{ other: 1 }, /unknown option receipts.other/],
    [true, /receipts must be an object/],
  ] as const) {
    const app = Fastify()
    await t.rejects(async () => { await app.register(mocapi, { requestState: { keys: [KEY] }, receipts: receipts as never }) }, { code: 'FST_MOCAPI_INVALID_OPTION', message })
  }
})

t.test('the memory store passes receiptStoreChecks', async (t) => {
  for (const check of receiptStoreChecks(() => new MemoryReceiptStore())) await t.test(check.name, () => check.run())
})
