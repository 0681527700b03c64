/**
 * Receipts at their edges, through the public surface: a claim renewed while a slow first runs, the bound on
 * duplicates waiting at once, a duplicate whose client leaves while it waits, a store that fails (the call runs, the
 * operator hears of it once a minute), an unbound caller, and the receipt event's shape on the bus.
 */
import t, { type Test } from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { MemoryReceiptStore, type MocapiOptions, type ReceiptStore } from '../../lib/index.js'
import { parseEvent } from '../../lib/bus/events.js'
import { jwtServer, meta, postHttp } from '../helpers.js'

async function server (t: Test, options: MocapiOptions = {}) {
  const runs = { order: 0 }
  const { app, url, lines } = await jwtServer(t, options, (app) => {
    app.mcp.tool({ name: 'order', inputSchema: { type: 'object', properties: { ms: { type: 'integer' } } } }, async (args: { ms?: number }) => {
      runs.order++
      await sleep(args.ms ?? 0)
      return `order #${runs.order}`
    })
  })
  return { app, url, runs, lines }
}

const keyed = (key: string) => ({ headers: { 'idempotency-key': key }, meta: meta({}) })

/** A memory store whose methods can be made to fail, and whose renewals can be made to find the claim gone. */
function faulty () {
  const inner = new MemoryReceiptStore()
  const failing = new Set<string>()
  const lost = { renew: false }
  const guard = <A extends unknown[], R>(name: string, fn: (...args: A) => Promise<R>) => async (...args: A): Promise<R> => {
    if (failing.has(name)) throw new Error(`the store's ${name} failed`)
    return await fn(...args)
  }
  const store: ReceiptStore = {
    claim: guard('claim', inner.claim.bind(inner)),
    renew: guard('renew', async (name: string, holder: string, leaseMs: number) => !lost.renew && await inner.renew(name, holder, leaseMs)),
    complete: guard('complete', inner.complete.bind(inner)),
    release: guard('release', inner.release.bind(inner)),
    read: inner.read.bind(inner),
  }
  return { store, failing, lost }
}

t.test('a first that outlasts its lease is renewed: its duplicate keeps waiting, and does not run it again', async (t) => {
  const { url, runs } = await server(t, { tasks: { lease: 300 } })
  const first = postHttp(url, 'tools/call', { name: 'order', arguments: { ms: 1_000 } }, keyed('long'))
  await sleep(100)
  const duplicate = await postHttp(url, 'tools/call', { name: 'order', arguments: { ms: 1_000 } }, keyed('long'))
  t.same(duplicate.body, (await first).body)
  t.equal(runs.order, 1, 'renewed every 100 ms: its lease never lapsed')
})

t.test('duplicates waiting at once are bounded by limits.waitingCalls; one whose client leaves stops waiting', async (t) => {
  const { url, runs } = await server(t, { limits: { waitingCalls: 1 } })
  const first = postHttp(url, 'tools/call', { name: 'order', arguments: { ms: 800 } }, keyed('busy'))
  await sleep(100)
  const leaving = new AbortController()
  const gone = fetch(url, {
    method: 'POST',
    signal: leaving.signal,
    headers: { 'content-type': 'application/json', accept: 'application/json', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'order', 'idempotency-key': 'busy' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'order', arguments: { ms: 800 }, _meta: meta({}) } }),
  }).catch((error: unknown) => error)
  await sleep(100)
  const refused = await postHttp(url, 'tools/call', { name: 'order', arguments: { ms: 800 } }, keyed('busy'))
  t.equal(refused.status, 429)
  t.match(refused.body.error, { code: -32600, message: /1 duplicate requests wait on this server already/ })
  leaving.abort()
  await gone
  await sleep(100)
  const waited = await postHttp(url, 'tools/call', { name: 'order', arguments: { ms: 800 } }, keyed('busy'))
  t.same(waited.body.result, (await first).body.result, 'the place the leaving one held is free again')
  t.equal(runs.order, 1)
})

t.test('a keyed call whose client leaves before its handler starts keeps no receipt: its retry runs', async (t) => {
  const inner = new MemoryReceiptStore()
  // Claims take 300 ms: the client is gone by the time its call would start.
  const store: ReceiptStore = {
    claim: async (...args) => { await sleep(300); return await inner.claim(...args) },
    renew: inner.renew.bind(inner),
    complete: inner.complete.bind(inner),
    release: inner.release.bind(inner),
    read: inner.read.bind(inner),
  }
  const published: unknown[] = []
  const bus = { publish: (event: unknown) => { published.push(event) }, subscribe: () => () => {} }
  const { url, runs } = await server(t, { receipts: { store }, bus })
  const leaving = new AbortController()
  const gone = fetch(url, {
    method: 'POST',
    signal: leaving.signal,
    headers: { 'content-type': 'application/json', accept: 'application/json', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'order', 'idempotency-key': 'left' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'order', arguments: {}, _meta: meta({}) } }),
  }).catch((error: unknown) => error)
  await sleep(100)
  leaving.abort()
  await gone
  await sleep(400)
  t.equal(runs.order, 0, 'the call did not run')
  t.equal(inner.bytes, 0, 'and left no receipt')
  const told = published.filter((event) => (event as { kind: string }).kind === 'receipt')
  t.match(told, [{ kind: 'receipt', name: String }], 'duplicates waiting on any node are told it was let go')
  t.equal(told.length, 1)
  const retry = await postHttp(url, 'tools/call', { name: 'order', arguments: {} }, keyed('left'))
  t.same(retry.body.result?.content, [{ type: 'text', text: 'order #1' }], 'the retry runs it')
  t.equal(runs.order, 1)
})

t.test('a failing store keeps no receipt, the call runs, and the operator hears of it once a minute', async (t) => {
  const { store, failing } = faulty()
  const { url, runs, lines } = await server(t, { receipts: { store } })
  failing.add('claim')
  await postHttp(url, 'tools/call', { name: 'order', arguments: {} }, keyed('a'))
  await postHttp(url, 'tools/call', { name: 'order', arguments: {} }, keyed('a'))
  t.equal(runs.order, 2, 'no claim, so each runs')
  failing.clear()
  failing.add('complete')
  await postHttp(url, 'tools/call', { name: 'order', arguments: {} }, keyed('b'))
  failing.clear()
  failing.add('release')
  const refused = await postHttp(url, 'tools/call', { name: 'order', arguments: { ms: 'x' } }, keyed('c'))
  t.equal(refused.body.result.isError, true, 'refused before the handler: released (and the release failed)')
  t.equal(runs.order, 3)
  const warned = lines.filter((line) => line.level === 40 && /receipt store kept no receipt/.test(line.msg))
  t.equal(warned.length, 1, 'three failures, one line')
  t.equal(warned[0].err.message, 'the store\'s claim failed')
})

t.test('a receipt whose sealed reply does not open (a store writer changed it) answers 409 reply-not-kept, and nothing runs again', async (t) => {
  const inner = new MemoryReceiptStore()
  let corrupt = false
  const spoil = async (answer: Promise<any>) => {
    const got = await answer
    return corrupt && typeof got === 'object' && got !== null ? { ...got, sealed: `${got.sealed as string}x` } : got
  }
  const store: ReceiptStore = {
    claim: (...args) => spoil(inner.claim(...args)),
    renew: inner.renew.bind(inner),
    complete: inner.complete.bind(inner),
    release: inner.release.bind(inner),
    read: (name) => spoil(inner.read(name)),
  }
  const { url, runs } = await server(t, { receipts: { store } })
  await postHttp(url, 'tools/call', { name: 'order', arguments: {} }, keyed('spoiled'))
  corrupt = true
  const duplicate = await postHttp(url, 'tools/call', { name: 'order', arguments: {} }, keyed('spoiled'))
  t.equal(duplicate.status, 409)
  t.match(duplicate.body.error, { code: -32600, data: { reason: 'reply-not-kept' } })
  t.equal(runs.order, 1)
})

t.test('a memory store with no room even for a claim: the call runs without a receipt', async (t) => {
  const { url, runs, lines } = await server(t, { receipts: { store: new MemoryReceiptStore({ maxBytes: 10 }) } })
  await postHttp(url, 'tools/call', { name: 'order', arguments: {} }, keyed('full'))
  await postHttp(url, 'tools/call', { name: 'order', arguments: {} }, keyed('full'))
  t.equal(runs.order, 2)
  t.ok(lines.some((line) => line.level === 40 && line.err?.message === 'the receipt store is full'))
})

t.test('a renewal that fails, or finds the claim gone, is let go; the call still answers', async (t) => {
  const { store, failing, lost } = faulty()
  const { url, runs, lines } = await server(t, { tasks: { lease: 150 }, receipts: { store } })
  failing.add('renew')
  const answered = await postHttp(url, 'tools/call', { name: 'order', arguments: { ms: 300 } }, keyed('renew'))
  t.equal(answered.body.result.content[0].text, 'order #1')
  t.ok(lines.some((line) => line.level === 40 && line.err?.message === 'the store\'s renew failed'))
  failing.clear()
  lost.renew = true
  const again = await postHttp(url, 'tools/call', { name: 'order', arguments: { ms: 300 } }, keyed('gone'))
  t.equal(again.body.result.content[0].text, 'order #2', 'a claim its renewal found gone still answers')
  t.equal(runs.order, 2)
})

t.test('an authenticated caller without a principal is refused a keyed call with 403; its rounds are the token\'s to refuse', async (t) => {
  const { app, url, runs } = await server(t)
  const token = app.jwt.sign({ scope: 'none' })
  const refused = await postHttp(url, 'tools/call', { name: 'order', arguments: {} }, { ...keyed('x'), token })
  t.equal(refused.status, 403)
  t.equal(runs.order, 0)
  const plain = await postHttp(url, 'tools/call', { name: 'order', arguments: {} }, { token })
  t.equal(plain.body.result.content[0].text, 'order #1', 'without a key, a plain call is served as before')
})

t.test('the bus carries a receipt event by its name, and drops one without', async (t) => {
  t.same(parseEvent(JSON.stringify({ kind: 'receipt', name: 'n', extra: 1 })), { kind: 'receipt', name: 'n' })
  t.equal(parseEvent(JSON.stringify({ kind: 'receipt', name: 7 })), undefined)
})
