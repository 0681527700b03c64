/**
 * Events across nodes on a real redis-server: two node processes deliver each occurrence once per subscription, over
 * many emits from both; a node SIGKILLed while a delivery hangs loses it to the other node, which delivers it; a poll
 * on one node reads what the other emitted; a stream held on one node hears an emit on the other.
 */
import t, { type Test } from 'tap'
import { randomBytes } from 'node:crypto'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { webhookReceiver, type WebhookReceiver } from '../../lib/testing/index.js'
import { KEY, openStream, postHttp } from '../helpers.js'
import { nodeProcess } from '../node-process.js'
import { startRedis } from '../redis-server.js'

const FIXTURE = fileURLToPath(new URL('../fixtures/event-node.ts', import.meta.url))
const ADA = { headers: { 'x-user': 'ada' } }

function child (t: Test, redisUrl: string, name: string, timeout = 10_000) {
  return nodeProcess(t, FIXTURE, name, { REDIS_URL: redisUrl, MOCAPI_REQUEST_STATE_KEYS: KEY, WEBHOOK_TIMEOUT: String(timeout) })
}

const secret = (): string => `whsec_${randomBytes(32).toString('base64')}`

async function receiver (t: Test, respond?: Parameters<typeof webhookReceiver>[0]['respond']) {
  const key = secret()
  const made = await webhookReceiver({ secret: key, respond })
  t.teardown(() => made.close())
  return { hook: made, key }
}

async function subscribe (nodeUrl: string, hook: WebhookReceiver, key: string) {
  const { body } = await postHttp(nodeUrl, 'events/subscribe', { name: 'tick', delivery: { mode: 'webhook', url: hook.url, secret: key } }, ADA)
  if (body.result === undefined) throw new Error(JSON.stringify(body))
  return body.result
}

/** The event deliveries a receiver accepted (2xx), by webhook-id. */
function accepted (hook: WebhookReceiver): string[] {
  return hook.deliveries.filter((delivery) => delivery.body.type === undefined && delivery.status < 300).map((delivery) => delivery.id)
}

async function until (check: () => boolean, ms: number, what: string): Promise<void> {
  const end = Date.now() + ms
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`)
    await sleep(25)
  }
}

t.test('two nodes deliver each occurrence exactly once per subscription, over 200 emits from both', async (t) => {
  const redis = await startRedis(t)
  const [a, b] = await Promise.all([child(t, redis.url, 'a'), child(t, redis.url, 'b')])
  const receivers = await Promise.all([receiver(t), receiver(t), receiver(t)])
  await subscribe(a.url, receivers[0].hook, receivers[0].key)
  await subscribe(a.url, receivers[1].hook, receivers[1].key)
  await subscribe(b.url, receivers[2].hook, receivers[2].key)
  const emitted = await Promise.all([
    postHttp(a.url, 'tools/call', { name: 'emit', arguments: { from: 'a', count: 100 } }),
    postHttp(b.url, 'tools/call', { name: 'emit', arguments: { from: 'b', count: 100 } }),
  ])
  t.same(emitted.map(({ body }) => body.result.content[0].text), ['emitted 100', 'emitted 100'])
  const expected = [...Array.from({ length: 100 }, (_, n) => `a-${n}`), ...Array.from({ length: 100 }, (_, n) => `b-${n}`)].sort()
  for (const { hook } of receivers) await until(() => new Set(accepted(hook)).size === 200, 60_000, 'every delivery')
  // Time for a second delivery of anything, were one to come.
  await sleep(1500)
  for (const [index, { hook }] of receivers.entries()) {
    t.same([...accepted(hook)].sort(), expected, `subscription ${index}: each of the 200 once, none twice`)
  }
})

t.test('a node SIGKILLed while its delivery hangs loses nothing: the other node delivers it once its claim lapses', async (t) => {
  const redis = await startRedis(t)
  const a = await child(t, redis.url, 'a', 1000)
  let first = true
  let release: (() => void) | undefined
  const { hook, key } = await receiver(t, async () => {
    if (!first) return 204
    first = false
    // The first attempt never gets an answer its node could read: the node dies while it waits.
    await new Promise<void>((resolve) => { release = resolve })
    return 204
  })
  await subscribe(a.url, hook, key)
  await postHttp(a.url, 'tools/call', { name: 'emit', arguments: { from: 'x', count: 1 } })
  await until(() => release !== undefined, 10_000, 'the first attempt')
  a.kill()
  const b = await child(t, redis.url, 'b', 1000)
  t.ok(b.url)
  release?.()
  await until(() => accepted(hook).length >= 2, 20_000, 'the delivery by node b')
  const attempts = hook.deliveries.filter((delivery) => delivery.body.type === undefined)
  t.same(attempts.map((delivery) => delivery.id), ['x-0', 'x-0'], 'the same webhook-id both times')
  t.ok(attempts[1].timestamp >= attempts[0].timestamp, 'signed again')
  await sleep(1500)
  t.equal(hook.deliveries.filter((delivery) => delivery.body.type === undefined).length, 2, 'and no more')
})

t.test('a poll on one node reads what another emitted; a stream on one node hears an emit on the other', async (t) => {
  const redis = await startRedis(t)
  const [a, b] = await Promise.all([child(t, redis.url, 'a'), child(t, redis.url, 'b')])
  const start = (await postHttp(a.url, 'events/poll', { name: 'tick', cursor: null }, ADA)).body.result.cursor
  const stream = await openStream(b.url, 9, 'events/stream', { name: 'tick' }, ADA.headers)
  t.equal((await stream.next()).method, 'notifications/events/active')
  await postHttp(a.url, 'tools/call', { name: 'emit', arguments: { from: 'p', count: 3 } })
  const heard = [await stream.next(), await stream.next(), await stream.next()]
  t.same(heard.map((frame) => frame.params.eventId), ['p-0', 'p-1', 'p-2'], 'node b streams what node a emitted, in order')
  stream.close()
  const polled = (await postHttp(b.url, 'events/poll', { name: 'tick', cursor: start }, ADA)).body.result
  t.same(polled.events.map((event: any) => event.eventId), ['p-0', 'p-1', 'p-2'], 'a cursor of node a polls on node b')
})
