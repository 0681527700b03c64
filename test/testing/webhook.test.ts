import t from 'tap'
import { randomBytes } from 'node:crypto'
import { request as httpRequest } from 'node:http'
import { Webhook } from 'standardwebhooks'
import { jwtServer, type build } from '../helpers.js'
import {
  MAX_WEBHOOK_BODY, WebhookError, createTestClient, verifyWebhook, webhookReceiver, type WebhookReceiver,
} from '../../lib/testing/index.js'

type Test = Parameters<typeof build>[0]

const SECRET = `whsec_${randomBytes(32).toString('base64')}`
const OTHER = `whsec_${randomBytes(32).toString('base64')}`

const occurrence = (eventId: string, data: object = { service: 'api' }) =>
  ({ eventId, name: 'incident.created', timestamp: '2026-12-05T01:00:00.000Z', data, cursor: `c-${eventId}` })

/** The three Standard Webhooks headers, signed by the npm `standardwebhooks` package, and the subscription id. */
function signed (id: string, body: string, options: { secret?: string, at?: Date } = {}): Record<string, string> {
  const at = options.at ?? new Date()
  return {
    'content-type': 'application/json',
    'webhook-id': id,
    'webhook-timestamp': String(Math.floor(at.getTime() / 1000)),
    'webhook-signature': new Webhook(options.secret ?? SECRET).sign(id, at, body),
    'x-mcp-subscription-id': 'sub-1',
  }
}

async function post (url: string, body: string, headers: Record<string, string>, method = 'POST') {
  const response = await fetch(url, { method, headers, body: method === 'GET' ? undefined : body })
  return { status: response.status, text: await response.text() }
}

async function receiver (t: Test, options: Partial<Parameters<typeof webhookReceiver>[0]> = {}): Promise<WebhookReceiver> {
  const hooks = await webhookReceiver({ secret: SECRET, ...options })
  t.teardown(() => hooks.close())
  return hooks
}

t.test('accepts a delivery signed by standardwebhooks and hands it to next()', async (t) => {
  const hooks = await receiver(t)
  t.match(hooks.url, /^http:\/\/127\.0\.0\.1:\d+\/hooks$/)
  const waiting = hooks.next()
  const body = JSON.stringify(occurrence('inc-1'))
  const reply = await post(hooks.url, body, signed('inc-1', body))
  t.equal(reply.status, 204)
  const delivery = await waiting
  const { timestamp, ...rest } = delivery
  t.same(rest, { id: 'inc-1', subscriptionId: 'sub-1', body: occurrence('inc-1'), raw: body, status: 204 })
  t.ok(Math.abs(timestamp * 1000 - Date.now()) < 5_000, 'webhook-timestamp, in seconds')
  t.same(hooks.deliveries, [delivery])
  t.same(hooks.refused, [])
})

t.test('next() takes deliveries in order, those that came before it first, and skips verifications', async (t) => {
  const hooks = await receiver(t)
  const verification = JSON.stringify({ type: 'verification', challenge: 'nonce-1' })
  t.same(await post(hooks.url, verification, signed('msg_v', verification)), { status: 200, text: '{"challenge":"nonce-1"}' })
  for (const body of [JSON.stringify(occurrence('a')), JSON.stringify({ type: 'gap', cursor: 'fresh' }),
    JSON.stringify({ type: 'terminated', error: { code: -32024, message: 'revoked' } })]) {
    t.equal((await post(hooks.url, body, signed(`id-${body.length}`, body))).status, 204)
  }
  t.equal((await hooks.next()).body.eventId, 'a')
  t.same((await hooks.next()).body, { type: 'gap', cursor: 'fresh' })
  t.equal((await hooks.next()).body.type, 'terminated')
  t.equal(hooks.deliveries.length, 4, 'the verification is a delivery too')
  await t.rejects(hooks.next(20), /no webhook delivery within 20 ms \(4 accepted, 0 refused so far\)/)
})

t.test('answers a verification challenge with 200 and the challenge, whatever respond says', async (t) => {
  const hooks = await receiver(t, { respond: () => 503 })
  const body = JSON.stringify({ type: 'verification', challenge: 'c-42' })
  const reply = await post(hooks.url, body, signed('msg_verification_1', body))
  t.equal(reply.status, 200)
  t.same(JSON.parse(reply.text), { challenge: 'c-42' })
  const bad = JSON.stringify({ type: 'verification', challenge: 42 })
  t.equal((await post(hooks.url, bad, signed('msg_v2', bad))).status, 400)
  t.match(hooks.refused, [{ status: 400, reason: /string challenge/, id: 'msg_v2' }])
})

t.test('answers events with the status respond gives, async too', async (t) => {
  let calls = 0
  const hooks = await receiver(t, { respond: async (delivery) => ++calls === 1 ? 503 : delivery.body.eventId === 'x' ? 410 : 200 })
  const body = JSON.stringify(occurrence('x'))
  t.equal((await post(hooks.url, body, signed('x', body))).status, 503)
  t.equal((await post(hooks.url, body, signed('x', body))).status, 410)
  t.same(hooks.deliveries.map((d) => d.status), [503, 410], 'each attempt is recorded with its answer')
  t.equal((await hooks.next()).status, 503)
})

t.test('a respond that throws or returns no status answers 500 and says why', async (t) => {
  const answers: Array<() => number> = [() => { throw new Error('boom') }, () => 42]
  const hooks = await receiver(t, { respond: () => (answers.shift() as () => number)() })
  const body = JSON.stringify(occurrence('e'))
  t.equal((await post(hooks.url, body, signed('e', body))).status, 500)
  t.equal((await post(hooks.url, body, signed('e', body))).status, 500)
  t.match(hooks.refused, [{ status: 500, reason: 'respond threw: boom' }, { status: 500, reason: /respond returned 42/ }])
})

t.test('accepts any one of several space-separated signatures (a secret being rotated)', async (t) => {
  const hooks = await receiver(t)
  const body = JSON.stringify(occurrence('r'))
  const headers = signed('r', body)
  const old = signed('r', body, { secret: OTHER })['webhook-signature']
  headers['webhook-signature'] = `v1a,ZmFrZQ== ${old} ${headers['webhook-signature']}`
  t.equal((await post(hooks.url, body, headers)).status, 204)
})

t.test('refuses what is not signed with its secret: 401 and the reason', async (t) => {
  const hooks = await receiver(t)
  const body = JSON.stringify(occurrence('t'))
  const tampered = JSON.stringify(occurrence('t', { service: 'db' }))
  t.equal((await post(hooks.url, tampered, signed('t', body))).status, 401, 'a tampered body')
  t.equal((await post(hooks.url, body, signed('t', body, { secret: OTHER }))).status, 401, 'another secret')
  t.equal((await post(hooks.url, body, { ...signed('t', body), 'webhook-id': 'u' })).status, 401, 'another id')
  t.equal((await post(hooks.url, body, signed('t', body, { at: new Date(Date.now() - 6 * 60_000) }))).status, 401, 'six minutes old')
  t.equal((await post(hooks.url, body, signed('t', body, { at: new Date(Date.now() + 6 * 60_000) }))).status, 401, 'six minutes ahead')
  for (const name of ['webhook-id', 'webhook-timestamp', 'webhook-signature']) {
    const headers = signed('t', body)
    delete headers[name]
    const reply = await post(hooks.url, body, headers)
    t.equal(reply.status, 401, `without ${name}`)
    t.match(JSON.parse(reply.text), { error: `the delivery has no ${name} header` })
  }
  t.equal(hooks.refused.length, 8)
  t.match(hooks.refused[0], { status: 401, reason: /no v1 signature/, id: 't' })
  t.match(hooks.refused[3], { reason: /is 36\d s from now, more than 5 minutes/ })
  t.same(hooks.deliveries, [])
  await t.rejects(hooks.next(10), /0 accepted, 8 refused/)
})

t.test('refuses a body that is not a JSON object with 400', async (t) => {
  const hooks = await receiver(t)
  for (const body of ['not json', '[1,2]', '"text"']) {
    t.equal((await post(hooks.url, body, signed('b', body))).status, 400, body)
  }
  t.match(hooks.refused, [{ reason: 'the body is not JSON' }, { reason: 'the body is not a JSON object' }, { status: 400 }])
})

t.test('refuses other methods with 405', async (t) => {
  const hooks = await receiver(t)
  const response = await fetch(hooks.url)
  t.equal(response.status, 405)
  t.equal(response.headers.get('allow'), 'POST')
  t.match(hooks.refused, [{ status: 405, reason: 'GET is not POST' }])
})

/** POSTs `size` bytes in chunks, without a content-length when `chunked`; resolves with the status. */
function postLarge (url: string, size: number, chunked: boolean): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = chunked ? {} : { 'content-length': String(size) }
    const request = httpRequest(url, { method: 'POST', headers }, (response) => {
      response.resume()
      resolve(response.statusCode as number)
    })
    request.on('error', reject)
    const chunk = Buffer.alloc(16 * 1024, 'a')
    for (let sent = 0; sent < size; sent += chunk.length) request.write(chunk.subarray(0, Math.min(chunk.length, size - sent)))
    request.end()
  })
}

t.test('refuses a body past 256 KiB with 413, whether its length is declared or not', async (t) => {
  const hooks = await receiver(t)
  t.equal(MAX_WEBHOOK_BODY, 262_144)
  t.equal(await postLarge(hooks.url, MAX_WEBHOOK_BODY + 1, false), 413)
  t.equal(await postLarge(hooks.url, 4 * MAX_WEBHOOK_BODY, true), 413)
  t.match(hooks.refused, [{ status: 413, reason: 'the body is over 262144 bytes' }, { status: 413 }])
  const body = JSON.stringify(occurrence('big', { blob: 'x'.repeat(MAX_WEBHOOK_BODY - 200) }))
  t.equal((await post(hooks.url, body, signed('big', body))).status, 204, 'just under the bound is taken')
})

t.test('close() rejects a pending next() and stops listening', async (t) => {
  const hooks = await webhookReceiver({ secret: SECRET })
  const waiting = hooks.next(60_000)
  await hooks.close()
  await t.rejects(waiting, /closed/)
  await t.rejects(hooks.next(), /closed/)
  await t.rejects(fetch(hooks.url, { method: 'POST', body: '{}' }))
})

t.test('listens on the host given', async (t) => {
  const hooks = await receiver(t, { host: '::1' })
  t.match(hooks.url, /^http:\/\/\[::1\]:\d+\/hooks$/)
  const body = JSON.stringify(occurrence('v6'))
  t.equal((await post(hooks.url, body, signed('v6', body))).status, 204)
})

t.test('webhookReceiver refuses bad options', async (t) => {
  await t.rejects(webhookReceiver({ secret: 'abc' }), /"whsec_" and base64, got a string of 3 characters without that prefix/)
  await t.rejects(webhookReceiver({ secret: 'whsec_@@@@' }), /what follows whsec_ is not base64/)
  await t.rejects(webhookReceiver({ secret: 'whsec_' }), /not base64/)
  await t.rejects(webhookReceiver({ secret: 42 as unknown as string }), /got number/)
  await t.rejects(webhookReceiver({ secret: SECRET, respond: 204 as never }), /respond must be a function, got number/)
  await t.rejects(webhookReceiver(undefined as never), /takes \{ secret, respond\?, host\? \}/)
})

t.test('verifyWebhook checks a delivery for a receiver of your own', async (t) => {
  const body = JSON.stringify(occurrence('own'))
  const at = new Date('2026-12-05T01:00:00Z')
  const headers = signed('own', body, { at })
  const now = at.getTime() + 60_000
  t.same(verifyWebhook(SECRET, headers, body, now), occurrence('own'), 'Node-style headers, a string body')
  t.same(verifyWebhook(SECRET, new Headers(headers), new TextEncoder().encode(body), now), occurrence('own'), 'fetch Headers, bytes')
  t.same(verifyWebhook(SECRET, { ...headers, 'Webhook-Id': ['own'], 'webhook-id': undefined }, body, now), occurrence('own'), 'any case, arrays')
  const refused = (fn: () => unknown, status: number, message: RegExp) => {
    try {
      fn()
      t.fail(`accepted; expected ${status}`)
    } catch (error) {
      t.ok(error instanceof WebhookError, 'a WebhookError')
      t.match(error, { status, message })
    }
  }
  refused(() => verifyWebhook(SECRET, headers, body), 401, /from now, more than 5 minutes/)
  refused(() => verifyWebhook(OTHER, headers, body, now), 401, /no v1 signature/)
  refused(() => verifyWebhook(SECRET, headers, `${body} `, now), 401, /no v1 signature/)
  refused(() => verifyWebhook(SECRET, { ...headers, 'webhook-signature': `${headers['webhook-signature']}AA` }, body, now), 401, /no v1 signature/)
  refused(() => verifyWebhook(SECRET, { ...headers, 'webhook-timestamp': 'soon' }, body, now), 401, /Unix seconds, got "soon"/)
  refused(() => verifyWebhook(SECRET, { ...headers, 'webhook-signature': '' }, body, now), 401, /no webhook-signature header/)
  refused(() => verifyWebhook(SECRET, new Headers({}), body, now), 401, /no webhook-id header/)
  const text = 'plain'
  refused(() => verifyWebhook(SECRET, signed('p', text, { at }), text, now), 400, /not JSON/)
  t.throws(() => verifyWebhook('secret', headers, body, now), TypeError)
})

t.test('receives what a mocapi server delivers to an events/subscribe webhook', async (t) => {
  const { app, url, token } = await jwtServer(t, { events: { webhooks: { allow: ['http://127.0.0.1:*'] } } }, (app) => {
    app.mcp.event({
      name: 'incident.created',
      inputSchema: { type: 'object', properties: { service: { type: 'string' } }, required: ['service'] },
      payloadSchema: { type: 'object', properties: { service: { type: 'string' } }, required: ['service'] },
      match: (args: { service: string }, data: { service: string }) => data.service === args.service,
    })
  })
  const hooks = await receiver(t)
  const client = createTestClient(url, { token: token() })
  const subscribed = await client.request('events/subscribe', {
    name: 'incident.created', arguments: { service: 'api' }, delivery: { mode: 'webhook', url: hooks.url, secret: SECRET },
  })
  t.match(hooks.deliveries, [{ body: { type: 'verification' }, status: 200 }], 'the challenge was answered')
  await app.mcp.emit('incident.created', { service: 'api' }, { eventId: 'inc-123' })
  const delivery = await hooks.next()
  t.match(delivery, { id: 'inc-123', subscriptionId: subscribed.id, body: { eventId: 'inc-123', name: 'incident.created', data: { service: 'api' } }, status: 204 })
  t.same(hooks.refused, [])
})
