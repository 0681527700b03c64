import t from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import mocapi, { InProcessBus, type MocapiOptions } from '../../lib/index.js'
import { EventStreamParser } from '../../lib/testing/transport.js'
import { KEY, capturedLogs } from '../helpers.js'
import { openSession } from '../legacy/client.js'

type Test = { teardown: (fn: () => unknown) => void }
type Session = Awaited<ReturnType<typeof openSession>>

async function served (t: Test, options: MocapiOptions, logs?: ReturnType<typeof capturedLogs>): Promise<{ app: FastifyInstance, url: string }> {
  const app = Fastify({ forceCloseConnections: true, ...logs?.options })
  await app.register(mocapi, { requestState: { keys: [KEY] }, ...options })
  app.mcp.resourceTemplate({ uriTemplate: 'test://r/{n}', name: 'r' }, (_uri, v) => v.n)
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}/mcp` }
}

/** The session's GET stream on `url`: `updated(n)` reads the next `n` resource updates it carries. */
async function getStream (url: string, session: Session) {
  const controller = new AbortController()
  const reply = await fetch(url, { headers: { ...session.headers(), accept: 'text/event-stream' }, signal: controller.signal })
  const reader = (reply.body as ReadableStream<Uint8Array>).getReader()
  const parser = new EventStreamParser()
  const decoder = new TextDecoder()
  const uris: string[] = []
  await sleep(20)
  return {
    async updated (n: number): Promise<string[]> {
      while (uris.length < n) {
        const { value } = await reader.read()
        for (const message of parser.push(decoder.decode(value, { stream: true })) as any[]) {
          if (message.method === 'notifications/resources/updated') uris.push(message.params.uri)
        }
      }
      return uris.splice(0, n)
    },
    close: () => controller.abort(),
  }
}

let nextId = 1

/** A `resources/subscribe` (or `unsubscribe`) of the session, posted to the node at `url`: the JSON-RPC response. */
async function subscribe (url: string, session: Session, uri: string, method = 'resources/subscribe'): Promise<any> {
  const reply = await fetch(url, { method: 'POST', headers: session.headers(), body: JSON.stringify({ jsonrpc: '2.0', id: nextId++, method, params: { uri } }) })
  return await reply.json()
}

const FULL = {
  code: -32602,
  message: 'This session\'s stream holds 2 subscriptions, the most it takes (limits.subscriptionUris); unsubscribe from one first',
}

t.test('a resources/subscribe past limits.subscriptionUris is answered with an error that names the limit, and changes nothing', async (t) => {
  const { app, url } = await served(t, { limits: { subscriptionUris: 2 } })
  const session = await openSession(url)
  t.same((await subscribe(url, session, 'test://r/0')).result, {}, 'with no stream open, there is nothing to refuse')
  const stream = await getStream(url, session)
  for (const n of [1, 2]) t.same((await subscribe(url, session, `test://r/${n}`)).result, {}, `subscription ${n}: within the limit`)
  const refused = await subscribe(url, session, 'test://r/3')
  t.same(refused.error, FULL, 'one past the limit')
  t.same((await subscribe(url, session, 'test://r/1')).result, {}, 'a URI the stream has is no new subscription')
  t.same((await subscribe(url, session, 'test://r/1', 'resources/unsubscribe')).result, {})
  t.same((await subscribe(url, session, 'test://r/3')).result, {}, 'an unsubscribe makes room, at once')
  for (const n of [1, 2, 3]) app.mcp.notifyResourceUpdated(`test://r/${n}`)
  t.same(await stream.updated(2), ['test://r/2', 'test://r/3'], 'the stream carries what it holds')
  stream.close()
})

t.test('on a fleet, the subscribe is refused by the node holding the stream; one that reaches another node is refused there, and logged', async (t) => {
  const bus = new InProcessBus()
  const logs = capturedLogs('warn')
  const holder = await served(t, { bus, limits: { subscriptionUris: 2 } }, logs)
  const other = await served(t, { bus, limits: { subscriptionUris: 2 } })
  const session = await openSession(holder.url)
  const stream = await getStream(holder.url, session)
  t.same((await subscribe(other.url, session, 'test://r/1')).result, {}, 'taken through another node')
  t.same((await subscribe(holder.url, session, 'test://r/2')).result, {}, 'and through the stream\'s node')
  await sleep(20)
  t.same((await subscribe(holder.url, session, 'test://r/3')).error, FULL, 'the stream\'s node refuses it in the answer')
  t.same((await subscribe(other.url, session, 'test://r/4')).result, {}, 'another node cannot know the stream is full')
  await sleep(20)
  const warned = logs.lines.filter((line) => line.level === 40)
  t.equal(warned.length, 1)
  t.match(warned[0], {
    msg: 'mocapi refused a resources/subscribe that reached another node: the session\'s stream here holds limits.subscriptionUris URIs',
    mcp: { uri: 'test://r/4' },
  }, 'the node holding the stream logs what it refused')
  for (const n of [1, 2, 3, 4]) holder.app.mcp.notifyResourceUpdated(`test://r/${n}`)
  t.same(await stream.updated(2), ['test://r/1', 'test://r/2'])
  stream.close()
})
