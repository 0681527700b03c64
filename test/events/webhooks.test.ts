import t from 'tap'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { randomBytes } from 'node:crypto'
import type { FastifyInstance } from 'fastify'
import { Webhook } from 'standardwebhooks'
import type { MocapiOptions } from '../../lib/index.js'
import { webhookReceiver, type WebhookReceiver } from '../../lib/testing/index.js'
import { build, call, capturedLogs } from '../helpers.js'
import { incident } from './incident.js'

type Test = Parameters<typeof build>[0]

const secret = (): string => `whsec_${randomBytes(32).toString('base64')}`
const asUser = (user: string) => ({ headers: { 'x-user': user } })
const wait = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms))

async function server (t: Test, options: MocapiOptions = {}, fastifyOptions = {}): Promise<FastifyInstance> {
  return await build(t, {
    principal: (request) => request.headers['x-user'] as string | undefined,
    ...options,
    events: { webhooks: { allow: ['http://127.0.0.1:*'], retryDelays: [50, 50] }, ...options.events },
  }, (app) => { app.mcp.event(incident) }, fastifyOptions)
}

async function receiver (t: Test, key: string, respond?: Parameters<typeof webhookReceiver>[0]['respond']): Promise<WebhookReceiver> {
  const made = await webhookReceiver({ secret: key, respond })
  t.teardown(() => made.close())
  return made
}

async function subscribe (app: FastifyInstance, url: string, key: string, extra: Record<string, unknown> = {}, user = 'ada') {
  const params = { name: 'incident.created', arguments: { service: 'api' }, delivery: { mode: 'webhook', url, secret: key }, ...extra }
  return (await call(app, 'events/subscribe', params, asUser(user))).body
}

/** A plain server that counts what reaches it and answers `status` (with `location` for a redirect). */
async function counter (t: Test, status: number, location?: string): Promise<{ url: string, hits: () => number, server: Server }> {
  let hits = 0
  const plain = createServer((request, response) => {
    hits++
    request.resume()
    response.writeHead(status, location === undefined ? {} : { location })
    response.end()
  })
  await new Promise<void>((resolve) => plain.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { plain.closeAllConnections(); plain.close() })
  return { url: `http://127.0.0.1:${(plain.address() as AddressInfo).port}/hooks`, hits: () => hits, server: plain }
}

t.test('a subscription is verified, then each matching occurrence is POSTed once, signed the Standard Webhooks way', async (t) => {
  const key = secret()
  const hook = await receiver(t, key)
  const app = await server(t)
  const subscribed = await subscribe(app, hook.url, key)
  const result = subscribed.result
  t.match(result.id, /^sub_[A-Za-z0-9_-]{22}$/)
  t.ok(Math.abs(Date.parse(result.refreshBefore) - Date.now() - 3_600_000) < 5000, 'an hour unless asked')
  t.equal(typeof result.cursor, 'string')
  t.equal(result.truncated, false)
  t.equal(hook.deliveries.length, 1, 'the verification')
  t.equal(hook.deliveries[0].body.type, 'verification')

  await app.mcp.emit('incident.created', { service: 'db', severity: 'P1' })
  const eventId = await app.mcp.emit('incident.created', { service: 'api', severity: 'P1' }, { eventId: 'inc-1' })
  t.equal(eventId, 'inc-1')
  const delivery = await hook.next()
  t.equal(delivery.id, 'inc-1', 'webhook-id is the eventId')
  t.equal(delivery.subscriptionId, result.id)
  t.match(delivery.body, { eventId: 'inc-1', name: 'incident.created', data: { service: 'api', severity: 'P1' } })
  t.equal(typeof delivery.body.cursor, 'string')
  const headers = { 'webhook-id': delivery.id, 'webhook-timestamp': String(delivery.timestamp), 'webhook-signature': '' }
  // What standardwebhooks verifies: the raw body under the client's secret, with the headers as sent.
  const signed = new Webhook(key).sign(delivery.id, new Date(delivery.timestamp * 1000), delivery.raw)
  headers['webhook-signature'] = signed
  t.same(new Webhook(key).verify(delivery.raw, headers), delivery.body, 'standardwebhooks verifies it')
  await wait(200)
  t.equal(hook.deliveries.length, 2, 'the db incident reached no one; nothing twice')

  // The delivered cursor is the subscription's own: a poll by the same caller, type and arguments opens it.
  const polled = await call(app, 'events/poll', { name: 'incident.created', arguments: { service: 'api' }, cursor: delivery.body.cursor }, asUser('ada'))
  t.same(polled.body.result.events, [])
})

t.test('subscribing again refreshes: the same id, a new TTL, no second challenge; the secret is replaced', async (t) => {
  const first = secret()
  const second = secret()
  const hook = await receiver(t, first)
  const app = await server(t)
  const one = (await subscribe(app, hook.url, first, { ttlMs: 600_000 })).result
  const two = (await subscribe(app, hook.url, first, { ttlMs: 1_200_000 })).result
  t.equal(two.id, one.id)
  t.ok(Date.parse(two.refreshBefore) > Date.parse(one.refreshBefore))
  t.equal(hook.deliveries.filter((delivery) => delivery.body.type === 'verification').length, 1)
  const other = await receiver(t, second)
  const moved = (await subscribe(app, other.url, second)).result
  t.not(moved.id, one.id, 'another callback URL is another subscription')
  const otherArgs = (await subscribe(app, hook.url, first, { arguments: { service: 'db' } })).result
  t.not(otherArgs.id, one.id, 'other arguments are another subscription')
  t.equal(hook.deliveries.filter((delivery) => delivery.body.type === 'verification').length, 1, 'a verified URL covers other arguments')
  const grace = (await subscribe(app, hook.url, first, {}, 'grace'))
  t.not(grace.result.id, one.id, 'another principal is another subscription')
  t.equal(hook.deliveries.filter((delivery) => delivery.body.type === 'verification').length, 2, 'and is verified for itself')
})

t.test('the TTL granted: an hour unless asked, from 5 minutes to a day; no expiry is never granted', async (t) => {
  const key = secret()
  const hook = await receiver(t, key)
  const app = await server(t)
  const granted = async (ttlMs: unknown) => Date.parse((await subscribe(app, hook.url, key, { ttlMs })).result.refreshBefore) - Date.now()
  t.ok(Math.abs(await granted(1000) - 300_000) < 5000, 'a short TTL is raised to 5 minutes')
  t.ok(Math.abs(await granted(7_200_000) - 7_200_000) < 5000, 'within the bounds, as asked')
  t.ok(Math.abs(await granted(10 * 86_400_000) - 86_400_000) < 5000, 'at most a day')
  t.ok(Math.abs(await granted(null) - 86_400_000) < 5000, 'null (no expiry) is a day')
  for (const ttlMs of [-1, 1.5, 'soon']) t.equal((await subscribe(app, hook.url, key, { ttlMs })).error.code, -32602, JSON.stringify(ttlMs))
})

t.test('webhooks need a principal, a whsec_ secret, mode webhook and a callback that is allowed', async (t) => {
  const key = secret()
  const hook = await receiver(t, key)
  const app = await server(t)
  const anonymous = (await call(app, 'events/subscribe', {
    name: 'incident.created', arguments: { service: 'api' }, delivery: { mode: 'webhook', url: hook.url, secret: key },
  })).body
  t.equal(anonymous.error.code, -32024)
  t.same(anonymous.error.data, { reason: 'unauthenticated' })
  t.equal((await call(app, 'events/unsubscribe', { name: 'incident.created', delivery: { url: hook.url } })).body.error.code, -32024)
  for (const bad of ['secret', 'whsec_short', `whsec_${randomBytes(16).toString('base64')}`, `whsec_${randomBytes(80).toString('base64')}`, 42]) {
    const refused = await subscribe(app, hook.url, bad as string)
    t.equal(refused.error.code, -32602)
    t.match(refused.error.message, /secret/)
  }
  const mode = (await call(app, 'events/subscribe', {
    name: 'incident.created', arguments: { service: 'api' }, delivery: { mode: 'email', url: hook.url, secret: key },
  }, asUser('ada'))).body
  t.equal(mode.error.code, -32026)
  t.same(mode.error.data, { feature: 'deliveryMode', value: 'email' })
  for (const url of ['', 'x'.repeat(3000), 7]) t.equal((await subscribe(app, url as string, key)).error.code, -32602)
  t.equal(hook.deliveries.length, 0, 'nothing was POSTed')
})

t.test('the SSRF guard: loopback, private, link-local, a name for loopback and plain http reach no local receiver', async (t) => {
  const key = secret()
  const hook = await receiver(t, key)
  const port = new URL(hook.url).port
  const app = await server(t, { events: { webhooks: { allow: [] } } })
  const refused = [
    [`https://127.0.0.1:${port}/hooks`, /127\.0\.0\.1/],
    [`https://localhost:${port}/hooks`, /localhost/],
    [`https://[::1]:${port}/hooks`, /::1/],
    [`https://10.1.2.3:${port}/hooks`, /10\.1\.2\.3/],
    [`https://192.168.0.10:${port}/hooks`, /192\.168\.0\.10/],
    [`https://169.254.169.254:${port}/latest/meta-data`, /169\.254\.169\.254/],
    [`https://[::ffff:127.0.0.1]:${port}/hooks`, /127\.0\.0\.1|::ffff/],
    [hook.url, /https/],
  ] as const
  for (const [url, named] of refused) {
    const answer = await subscribe(app, url, key)
    t.equal(answer.error.code, -32602, url)
    t.match(answer.error.message, named, `names the host: ${answer.error.message}`)
  }
  t.equal(hook.deliveries.length + hook.refused.length, 0, 'the local receiver was never reached')
})

t.test('a verification that fails is -32027 naming why, and nothing is stored', async (t) => {
  const key = secret()
  const wrong = await receiver(t, secret())
  const { lines, options } = capturedLogs()
  const app = await server(t, {}, options)
  const unsigned = await subscribe(app, wrong.url, key)
  t.equal(unsigned.error.code, -32027)
  t.same(unsigned.error.data, { reason: 'challenge_failed' })
  const closed = await counter(t, 204)
  const closedUrl = closed.url
  await new Promise((resolve) => closed.server.close(resolve))
  const refused = await subscribe(app, closedUrl, key)
  t.equal(refused.error.code, -32027)
  t.same(refused.error.data, { reason: 'connection_refused' })
  const silent = await counter(t, 204)
  const noEcho = await subscribe(app, silent.url, key)
  t.same(noEcho.error.data, { reason: 'challenge_failed' }, 'a 2xx without the challenge echoed')
  t.equal((await call(app, 'events/unsubscribe', { name: 'incident.created', arguments: { service: 'api' }, delivery: { url: silent.url } }, asUser('ada'))).body.error.code,
    -32023, 'no subscription was kept')
  t.ok(lines.some((line) => line.level === 40 && /failed its verification/.test(line.msg)), 'the operator sees it at warn')
  t.notOk(JSON.stringify(lines).includes(key.slice(6)), 'the secret is never logged')
})

t.test('a failed delivery is retried with the same webhook-id; 410 and 413 are final; a redirect is not followed', async (t) => {
  const key = secret()
  const statuses = [500, 503, 204]
  const hook = await receiver(t, key, () => statuses.shift() ?? 204)
  const app = await server(t)
  await subscribe(app, hook.url, key)
  await app.mcp.emit('incident.created', { service: 'api', severity: 'P1' }, { eventId: 'retried' })
  const attempts = [await hook.next(), await hook.next(), await hook.next()]
  t.same(attempts.map((attempt) => attempt.id), ['retried', 'retried', 'retried'], 'the same id each attempt')
  t.same(attempts.map((attempt) => attempt.status), [500, 503, 204])
  t.ok(attempts[1].timestamp >= attempts[0].timestamp, 'each attempt signed anew')
  await wait(300)
  t.equal(hook.deliveries.filter((delivery) => delivery.id === 'retried').length, 3, 'nothing after the 2xx')

  for (const final of [410, 413]) {
    const gone = secret()
    let answered = 0
    const refusing = await receiver(t, gone, () => { answered++; return answered === 1 ? final : 204 })
    await subscribe(app, refusing.url, gone)
    await app.mcp.emit('incident.created', { service: 'api', severity: 'P2' }, { eventId: `final-${final}` })
    t.equal((await refusing.next()).status, final)
    await wait(300)
    t.equal(answered, 1, `${final} is not retried`)
    await app.mcp.emit('incident.created', { service: 'api', severity: 'P3' }, { eventId: `after-${final}` })
    t.equal((await refusing.next()).id, `after-${final}`, 'the subscription goes on')
  }

  const target = await counter(t, 204)
  const redirecting = await receiver(t, key, () => 302)
  await subscribe(app, redirecting.url, key, { arguments: { service: 'redirect' } })
  await app.mcp.emit('incident.created', { service: 'redirect', severity: 'P1' })
  await redirecting.next()
  await redirecting.next()
  await redirecting.next()
  await wait(300)
  t.equal(target.hits(), 0, 'the redirect target is never reached')
  t.equal(redirecting.deliveries.filter((delivery) => delivery.status === 302).length, 3, 'three attempts, then given up')
})

t.test('unsubscribing stops deliveries; an unknown subscription is -32023', async (t) => {
  const key = secret()
  const hook = await receiver(t, key)
  const app = await server(t)
  await subscribe(app, hook.url, key)
  const unsubscribed = await call(app, 'events/unsubscribe', {
    name: 'incident.created', arguments: { service: 'api' }, delivery: { mode: 'webhook', url: hook.url },
  }, asUser('ada'))
  t.same(unsubscribed.body.result.resultType, 'complete')
  await app.mcp.emit('incident.created', { service: 'api', severity: 'P1' })
  await wait(300)
  t.equal(hook.deliveries.length, 1, 'the verification only')
  const again = (await call(app, 'events/unsubscribe', {
    name: 'incident.created', arguments: { service: 'api' }, delivery: { url: hook.url },
  }, asUser('ada'))).body
  t.equal(again.error.code, -32023)
  t.same(again.error.data, { kind: 'subscription' })
  const other = (await call(app, 'events/unsubscribe', {
    name: 'incident.created', arguments: { service: 'api' }, delivery: { url: hook.url },
  }, asUser('grace'))).body
  t.equal(other.error.code, -32023, 'nor can another principal')
})

t.test('a principal holds events.subscriptionsPerPrincipal subscriptions; past it -32025', async (t) => {
  const key = secret()
  const hook = await receiver(t, key)
  const app = await server(t, { events: { subscriptionsPerPrincipal: 2, webhooks: { allow: ['http://127.0.0.1:*'] } } })
  t.ok((await subscribe(app, hook.url, key, { arguments: { service: 'a' } })).result)
  t.ok((await subscribe(app, hook.url, key, { arguments: { service: 'b' } })).result)
  t.ok((await subscribe(app, hook.url, key, { arguments: { service: 'a' } })).result, 'a refresh is no new subscription')
  const third = await subscribe(app, hook.url, key, { arguments: { service: 'c' } })
  t.equal(third.error.code, -32025)
  t.same(third.error.data, { limit: 'subscriptions', max: 2 })
  t.ok((await subscribe(app, hook.url, key, { arguments: { service: 'c' } }, 'grace')).result, 'another principal has its own')
})

t.test('a new subscription given a cursor is sent what it missed', async (t) => {
  const key = secret()
  const hook = await receiver(t, key)
  const app = await server(t)
  const cursor = (await call(app, 'events/poll', { name: 'incident.created', arguments: { service: 'api' }, cursor: null }, asUser('ada'))).body.result.cursor
  await app.mcp.emit('incident.created', { service: 'api', severity: 'P1' }, { eventId: 'missed-1' })
  await app.mcp.emit('incident.created', { service: 'db', severity: 'P1' }, { eventId: 'other' })
  await app.mcp.emit('incident.created', { service: 'api', severity: 'P2' }, { eventId: 'missed-2' })
  await subscribe(app, hook.url, key, { cursor })
  const got = [(await hook.next()).id, (await hook.next()).id].sort()
  t.same(got, ['missed-1', 'missed-2'])
  const foreign = await subscribe(app, hook.url, key, { cursor, arguments: { service: 'db' } })
  t.equal(foreign.error.code, -32602, 'a cursor of other arguments does not open')
})

t.test('events/subscribe for a type without webhook delivery is -32026', async (t) => {
  const key = secret()
  const hook = await receiver(t, key)
  const app = await build(t, { principal: () => 'ada', events: { webhooks: { allow: ['http://127.0.0.1:*'] } } }, (app) => {
    app.mcp.event({ name: 'poll.only', delivery: ['poll'] })
  })
  const refused = (await call(app, 'events/subscribe', { name: 'poll.only', delivery: { mode: 'webhook', url: hook.url, secret: key } })).body
  t.equal(refused.error.code, -32026)
})

t.test('a webhook subscription\'s arguments are bounded: past 16 KiB of JSON -32602, before any POST', async (t) => {
  const key = secret()
  const hook = await receiver(t, key)
  const app = await build(t, { principal: () => 'ada', events: { webhooks: { allow: ['http://127.0.0.1:*'] } } }, (app) => {
    app.mcp.event({ name: 'open' })
  })
  const params = (pad: number) => ({ name: 'open', arguments: { pad: 'x'.repeat(pad) }, delivery: { url: hook.url, secret: key } })
  const refused = (await call(app, 'events/subscribe', params(200_000))).body
  t.equal(refused.error.code, -32602)
  t.match(refused.error.message, /at most 16384 bytes of JSON/)
  t.equal(hook.deliveries.length, 0)
  t.match((await call(app, 'events/subscribe', params(15_000))).body.result.id, /^sub_/, 'a large but bounded one is kept')
})

t.test('verification challenges to one host are bounded per minute (events.webhooks.verificationsPerMinute): -32025', async (t) => {
  const key = secret()
  const hook = await receiver(t, key)
  const app = await server(t, { events: { webhooks: { allow: ['http://127.0.0.1:*'], verificationsPerMinute: 2 } } })
  t.ok((await subscribe(app, `${hook.url}?a`, key)).result)
  t.ok((await subscribe(app, `${hook.url}?b`, key)).result)
  t.ok((await subscribe(app, `${hook.url}?a`, key, { ttlMs: 600_000 })).result, 'a verified callback is not asked again')
  const third = await subscribe(app, `${hook.url}?c`, key)
  t.equal(third.error.code, -32025)
  t.same(third.error.data, { limit: 'verifications', max: 2 })
  t.match(third.error.message, /127\.0\.0\.1 2 verification challenges in the last minute/)
  t.equal(hook.deliveries.filter((delivery) => delivery.body.type === 'verification').length, 2)
})

t.test('a refresh with a new secret: deliveries are signed with both for an hour, so either secret verifies them', async (t) => {
  const before = secret()
  const after = secret()
  const seen: Array<{ headers: Record<string, string>, raw: string }> = []
  const capture = createServer((request, response) => {
    let raw = ''
    request.setEncoding('utf8').on('data', (chunk: string) => { raw += chunk }).on('end', () => {
      const body = JSON.parse(raw)
      if (body.type === 'verification') {
        response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ challenge: body.challenge }))
        return
      }
      seen.push({ headers: request.headers as Record<string, string>, raw })
      response.writeHead(204).end()
    })
  })
  await new Promise<void>((resolve) => capture.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { capture.closeAllConnections(); capture.close() })
  const url = `http://127.0.0.1:${(capture.address() as AddressInfo).port}/hooks`
  const app = await server(t)
  await subscribe(app, url, before)
  await app.mcp.emit('incident.created', { service: 'api', severity: 'P1' }, { eventId: 'one-key' })
  await subscribe(app, url, after)
  await app.mcp.emit('incident.created', { service: 'api', severity: 'P1' }, { eventId: 'two-keys' })
  while (seen.length < 2) await wait(10)
  const [first, second] = seen
  t.equal(first.headers['webhook-signature'].split(' ').length, 1, 'one signature before the refresh')
  t.equal(second.headers['webhook-signature'].split(' ').length, 2, 'two after it')
  t.ok(new Webhook(before).verify(second.raw, second.headers), 'the old secret verifies it')
  t.ok(new Webhook(after).verify(second.raw, second.headers), 'and so does the new one')
  t.throws(() => new Webhook(after).verify(first.raw, first.headers), 'the new secret did not sign what came before it')
  await subscribe(app, url, after)
  await app.mcp.emit('incident.created', { service: 'api', severity: 'P1' }, { eventId: 'still-two' })
  while (seen.length < 3) await wait(10)
  t.equal(seen[2].headers['webhook-signature'].split(' ').length, 2, 'a refresh with the same secret keeps the grace')
})
