/**
 * The Vercel AI SDK's MCP client (`@ai-sdk/mcp`, pinned) against mocapi over real HTTP: it lists the event types,
 * subscribes a webhook (its own secret, its own callback URL with a query), and its own receiver
 * (`experimental_createMCPEventWebhook`) answers mocapi's verification and accepts the signed delivery.
 */
import t from 'tap'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createMCPClient, experimental_createMCPEventWebhook as createMCPEventWebhook } from '@ai-sdk/mcp'
import { jwtServer } from '../helpers.js'

t.test('the AI SDK lists, subscribes, and its receiver accepts a delivery; it unsubscribes', async (t) => {
  const { app, url, token } = await jwtServer(t, { events: { webhooks: { allow: ['http://127.0.0.1:*'] } } }, (app) => {
    app.mcp.event({
      name: 'deploy.finished',
      description: 'A deploy of one service finished',
      inputSchema: { type: 'object', properties: { service: { type: 'string' } } },
      payloadSchema: { type: 'object', properties: { service: { type: 'string' }, ok: { type: 'boolean' } }, required: ['service', 'ok'] },
      match: (args, data) => args.service === undefined || args.service === data.service,
    })
  })
  const records = new Map<string, any>()
  const store = {
    get: async (key: string) => records.get(key),
    getById: async (id: string) => [...records.values()].find((record) => record.id === id),
    set: async (record: any) => { records.set(record.key, structuredClone(record)) },
    update: async (key: string, patch: object) => { records.set(key, { ...records.get(key), ...patch }) },
    delete: async (key: string) => { records.delete(key) },
  }
  const received: any[] = []
  let settle: () => void
  const arrived = new Promise<void>((resolve) => { settle = resolve })
  const handler = createMCPEventWebhook({ store, onEvent: async ({ event }: { event: any }) => { received.push(event); settle() } } as any)
  const statuses: number[] = []
  const receiver = createServer((request, response) => {
    const chunks: Buffer[] = []
    request.on('data', (chunk: Buffer) => chunks.push(chunk)).on('end', () => {
      const body = request.method === 'POST' ? Buffer.concat(chunks) : undefined
      handler(new Request(new URL(request.url as string, 'http://127.0.0.1'), { method: request.method, headers: request.headers as Record<string, string>, body }))
        .then(async (answer: Response) => {
          statuses.push(answer.status)
          const headers: Record<string, string> = {}
          answer.headers.forEach((value, name) => { headers[name] = value })
          response.writeHead(answer.status, headers)
          response.end(Buffer.from(await answer.arrayBuffer()))
        })
    })
  })
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve))
  t.teardown(() => { receiver.closeAllConnections(); receiver.close() })
  const callback = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/hooks/mcp`

  const client = await createMCPClient({
    transport: { type: 'http', url, headers: { authorization: `Bearer ${token()}` } },
    experimental_events: { store },
  } as any)
  t.teardown(() => client.close())
  const events = (client as any).experimental_events
  const listed = await events.list()
  t.same(listed.events.map((event: any) => [event.name, event.delivery]), [['deploy.finished', ['poll', 'push', 'webhook']]])
  const subscription = await events.subscribe({
    name: 'deploy.finished', arguments: { service: 'api' }, delivery: { mode: 'webhook', url: callback, allowInsecureLocalhost: true },
  })
  t.match(subscription.id, /^sub_/)
  t.equal(statuses[0], 200, 'the receiver answered the verification challenge')

  await app.mcp.emit('deploy.finished', { service: 'web', ok: true }, { eventId: 'dep-0' })
  await app.mcp.emit('deploy.finished', { service: 'api', ok: true }, { eventId: 'dep-1' })
  await arrived
  while (statuses.length < 2) await new Promise((resolve) => setTimeout(resolve, 10))
  t.equal(received.length, 1)
  t.match(received[0], { eventId: 'dep-1', name: 'deploy.finished', data: { service: 'api', ok: true } })
  t.same(statuses.slice(1), [204], 'the receiver accepted it: signature, webhook-id and X-MCP-Subscription-Id all checked')

  await events.unsubscribe({ id: subscription.id })
  await app.mcp.emit('deploy.finished', { service: 'api', ok: false }, { eventId: 'dep-2' })
  await new Promise((resolve) => setTimeout(resolve, 300))
  t.equal(received.length, 1, 'nothing after unsubscribing')
})
