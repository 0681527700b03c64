import t from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import mocapi, { InProcessBus, requestedSchema, type MocapiOptions } from '../../lib/index.js'
import { EventStreamParser } from '../../lib/testing/transport.js'
import { KEY, capturedLogs } from '../helpers.js'
import { openSession } from './client.js'

type Test = { teardown: (fn: () => unknown) => void }

const confirm = requestedSchema().boolean('ok')

function tools (app: FastifyInstance, runs: { count: number } = { count: 0 }): void {
  app.mcp.tool({ name: 'greet', description: 'Asks a name' }, async (_args, ctx) => {
    runs.count++
    const who = await ctx.elicit('Your name?', requestedSchema().string('name'))
    return who.action === 'accept' ? `Hello, ${who.content.name}` : `No name (${who.action})`
  })
    .tool({ name: 'two', description: 'Asks twice' }, async (_args, ctx) => {
      const a = await ctx.elicit('First?', confirm, { key: 'first' })
      const b = await ctx.elicit('Second?', confirm, { key: 'second' })
      return `${a.action} ${b.action}`
    })
    .tool({ name: 'all', description: 'Asks three kinds at once' }, async (_args, ctx) => {
      const [who, said, roots] = await Promise.all([
        ctx.elicit('Name?', requestedSchema().string('name')),
        ctx.sample({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 5 }),
        ctx.listRoots(),
      ])
      return `${who.action}|${JSON.stringify(said.content)}|${roots.map((root) => root.uri).join(',')}`
    })
    .tool({ name: 'link', description: 'URL mode' }, async (_args, ctx) => (await ctx.elicitUrl('Sign in', 'https://example.com/sign-in')).action)
    .tool({ name: 'chatty', description: 'Logs and reports progress' }, async (_args, ctx) => {
      ctx.progress(1, 2)
      for (const level of ['debug', 'info', 'error'] as const) ctx.log(level, `${level} line`)
      ctx.progress(2, 2)
      return 'said'
    })
    .tool({ name: 'diary', description: 'Logs before, between and after two questions' }, async (_args, ctx) => {
      ctx.log('info', 'before')
      ctx.log('debug', 'quiet before')
      const a = await ctx.elicit('First?', confirm, { key: 'first' })
      ctx.log('info', `between ${a.action}`)
      const b = await ctx.elicit('Second?', confirm, { key: 'second' })
      ctx.log('info', `after ${b.action}`)
      return 'written'
    })
    .tool({ name: 'wait', description: 'Waits to be cancelled' }, async (_args, ctx) => {
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve))
      return 'cancelled'
    })
    .resource({ uri: 'test://watched', name: 'watched' }, () => 'w')
}

async function served (t: Test, options: MocapiOptions = {}, logs?: ReturnType<typeof capturedLogs>, setup?: (app: FastifyInstance) => void) {
  const app = Fastify({ forceCloseConnections: true, ...logs?.options })
  await app.register(mocapi, { requestState: { keys: [KEY] }, ...options })
  const runs = { count: 0 }
  tools(app, runs)
  setup?.(app)
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, runs, url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}/mcp` }
}

/** Opens the session's GET stream and gives the server a moment to attach it. */
async function getStream (url: string, session: Awaited<ReturnType<typeof openSession>>) {
  const controller = new AbortController()
  const stream = await fetch(url, { headers: { ...session.headers(), accept: 'text/event-stream' }, signal: controller.signal })
  const reader = (stream.body as ReadableStream<Uint8Array>).getReader()
  await sleep(20)
  return { reader, controller }
}

t.test('a tool asks on its own stream, and replays with the answer', async (t) => {
  const { url, runs } = await served(t)
  const session = await openSession(url)
  const call = await session.call('tools/call', { name: 'greet' }, () => ({ action: 'accept', content: { name: 'Ada' } }))
  t.equal(call.response.result.content[0].text, 'Hello, Ada')
  t.equal(call.requests.length, 1)
  const [request] = call.requests
  t.match(request.id, /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.0$/, 'the id names the node, the call and the request')
  t.same(request.method, 'elicitation/create')
  t.same(request.params, { mode: 'form', message: 'Your name?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } })
  t.same(call.answerStatuses, [202])
  t.equal(runs.count, 2, 'the handler ran twice: once to ask, once with the answer')
  const declined = await session.call('tools/call', { name: 'greet' }, () => ({ action: 'decline' }))
  t.equal(declined.response.result.content[0].text, 'No name (decline)')
  const cancelled = await session.call('tools/call', { name: 'greet' }, () => ({ action: 'cancel' }))
  t.equal(cancelled.response.result.content[0].text, 'No name (cancel)')
})

t.test('two rounds, and three kinds asked at once', async (t) => {
  const { url } = await served(t)
  const session = await openSession(url)
  const two = await session.call('tools/call', { name: 'two' }, (request) => ({ action: request.params.message === 'First?' ? 'accept' : 'decline', content: { ok: true } }))
  t.same(two.requests.map((request) => request.params.message), ['First?', 'Second?'])
  t.equal(two.response.result.content[0].text, 'accept decline')
  const all = await session.call('tools/call', { name: 'all' }, (request) => {
    if (request.method === 'elicitation/create') return { action: 'accept', content: { name: 'Ada' } }
    if (request.method === 'sampling/createMessage') return { role: 'assistant', content: { type: 'text', text: 'hey' }, model: 'm' }
    return { roots: [{ uri: 'file:///work' }] }
  })
  t.same(all.requests.map((request) => request.method).sort(), ['elicitation/create', 'roots/list', 'sampling/createMessage'], 'sent together')
  t.equal(all.response.result.content[0].text, 'accept|{"type":"text","text":"hey"}|file:///work')
})

t.test('what each revision knows of elicitation: URL mode with an id from 2025-11-25, no mode before', async (t) => {
  const { url } = await served(t)
  const modern = await openSession(url, { capabilities: { elicitation: { form: {}, url: {} } } })
  const link = await modern.call('tools/call', { name: 'link' }, () => ({ action: 'accept' }))
  t.same(link.requests[0].params, { mode: 'url', message: 'Sign in', url: 'https://example.com/sign-in', elicitationId: link.requests[0].id })
  t.equal(link.response.result.content[0].text, 'accept')
  const formOnly = await openSession(url, { capabilities: { elicitation: {} } })
  const refused = await formOnly.call('tools/call', { name: 'link' })
  t.same(refused.response.error, { code: -32602, message: 'Server requires the elicitation client capability for this request', data: { requiredCapabilities: { elicitation: { url: {} } } } },
    'a clear error, never a request the client cannot take')
  const older = await openSession(url, { version: '2025-06-18', capabilities: { elicitation: {} } })
  const greet = await older.call('tools/call', { name: 'greet' }, () => ({ action: 'accept', content: { name: 'Bo' } }))
  t.notOk('mode' in greet.requests[0].params, 'a 2025-06-18 client gets the shape it knows')
  t.equal(greet.response.result.content[0].text, 'Hello, Bo')
  const none = await openSession(url, { version: '2025-03-26', capabilities: {} })
  t.equal((await none.call('tools/call', { name: 'greet' })).response.error.code, -32602)
})

t.test('a bad answer, an error answer, and no answer at all end the call with a clear error', async (t) => {
  const { url } = await served(t, { session: { answerTimeout: 150 } })
  const session = await openSession(url)
  const bad = await session.call('tools/call', { name: 'greet' }, () => ({ action: 'accept', content: { name: 5 } }))
  t.same(bad.response.error, { code: -32602, message: 'inputResponses.elicit-1: content.name must be string' })
  const refused = await session.call('tools/call', { name: 'greet' }, () => ({ error: { code: -1, message: 'User rejected the request' } }))
  t.same(refused.response.error, { code: -32603, message: 'The client answered elicitation/create with an error (-1): User rejected the request' })
  for (const code of [-32601, -32700, 0]) {
    const coded = await session.call('tools/call', { name: 'greet' }, () => ({ error: { code, message: 'no' } }))
    t.same(coded.response.error, { code: -32603, message: `The client answered elicitation/create with an error (${code}): no` }, `the client's ${code} is not the call's`)
  }
  const odd = await session.call('tools/call', { name: 'greet' }, () => ({ error: 'nope' }))
  t.same(odd.response.error, { code: -32603, message: 'The client answered elicitation/create with an error' })
  const started = Date.now()
  const silent = await session.call('tools/call', { name: 'greet' })
  t.same(silent.response.error, { code: -32001, message: "tool greet waited for the client's answer longer than session.answerTimeout allows" })
  t.ok(Date.now() - started < 2000, 'and does not hang')
  t.equal(silent.requests.length, 1)
  const late = await session.post({ jsonrpc: '2.0', id: silent.requests[0].id, result: { action: 'accept', content: { name: 'Late' } } })
  t.equal(late.status, 400, 'an answer after the timeout is refused: nothing waits for it')
})

t.test('when a session expires, its GET stream ends and a call waiting for its answer ends with a clear error', async (t) => {
  const ttl = 600
  const { url } = await served(t, { session: { ttl, answerTimeout: 60_000 } })
  const session = await openSession(url)
  const opened = Date.now()
  const stream = await fetch(url, { headers: { ...session.headers(), accept: 'text/event-stream' } })
  const reader = (stream.body as ReadableStream<Uint8Array>).getReader()
  const streamEnded = (async () => {
    while (!(await reader.read()).done);
    return Date.now() - opened
  })()
  const call = await session.call('tools/call', { name: 'greet' })
  const waited = Date.now() - opened
  t.same(call.response.error, { code: -32001, message: "tool greet waited for the client's answer until its session expired (session.ttl); a new session can call again" })
  t.ok(waited >= ttl - 100 && waited < ttl + 2000, `the call ended when the session expired (${waited} ms), not after answerTimeout`)
  const ended = await streamEnded
  t.ok(ended >= ttl - 100 && ended < ttl + 2000, `the GET stream ended with the session (${ended} ms)`)
  t.equal((await session.post({ jsonrpc: '2.0', id: 1, method: 'ping' })).status, 404, 'the session is gone')
})

t.test('an answer from another session, or another caller, is refused; the right one completes the call', async (t) => {
  const { url } = await served(t)
  const alice = await openSession(url)
  const mallory = await openSession(url)
  let stolen = 0
  const call = await alice.call('tools/call', { name: 'greet' }, async (request) => {
    stolen = (await mallory.post({ jsonrpc: '2.0', id: request.id, result: { action: 'accept', content: { name: 'Mallory' } } })).status
    const unsessioned = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', 'mcp-protocol-version': '2025-11-25' }, body: JSON.stringify({ jsonrpc: '2.0', id: request.id, result: { action: 'accept', content: { name: 'Nobody' } } }) })
    t.equal(unsessioned.status, 400, 'without a session')
    return { action: 'accept', content: { name: 'Alice' } }
  })
  t.equal(stolen, 400, 'another session\'s answer')
  t.equal(call.response.result.content[0].text, 'Hello, Alice')
})

t.test('notifications ride the call\'s stream; the session\'s log level holds', async (t) => {
  const { url } = await served(t)
  const session = await openSession(url)
  const defaults = await session.call('tools/call', { name: 'chatty', _meta: { progressToken: 'p1' } })
  t.same(defaults.notifications.map((n) => n.method === 'notifications/progress' ? `progress ${n.params.progress}/${n.params.total} ${n.params.progressToken}` : n.params.data),
    ['progress 1/2 p1', 'info line', 'error line', 'progress 2/2 p1'], 'info and above unless the session set a level')
  t.equal(defaults.response.result.content[0].text, 'said')
  await session.call('logging/setLevel', { level: 'debug' })
  t.same((await session.call('tools/call', { name: 'chatty' })).notifications.map((n) => n.params.data), ['debug line', 'info line', 'error line'])
  await session.call('logging/setLevel', { level: 'error' })
  t.same((await session.call('tools/call', { name: 'chatty' })).notifications.map((n) => n.params.data), ['error line'])
})

t.test('a handler replayed on one stream logs each line once: the lines of earlier passes are not sent again', async (t) => {
  const { url } = await served(t)
  const session = await openSession(url)
  const call = await session.call('tools/call', { name: 'diary' }, (request) => request.params.message === 'First?' ? { action: 'accept', content: { ok: true } } : { action: 'decline' })
  t.equal(call.response.result.content[0].text, 'written')
  t.same(call.notifications.map((n) => n.params.data), ['before', 'between accept', 'after decline'], 'three passes, each line once')
  await session.call('logging/setLevel', { level: 'debug' })
  const loud = await session.call('tools/call', { name: 'diary' }, () => ({ action: 'cancel' }))
  t.same(loud.notifications.map((n) => n.params.data), ['before', 'quiet before', 'between cancel', 'after cancel'], 'a lower level: the same, with the debug line')
})

t.test('notifications/cancelled stops a request of the session, and only that one', async (t) => {
  const { url } = await served(t)
  const session = await openSession(url)
  const send = (id: string) => fetch(url, { method: 'POST', headers: session.headers(), body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'wait' } }) })
  const target = send('to-cancel')
  const other = send('keep-running')
  await sleep(50)
  const cancel = await session.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'to-cancel', reason: 'the user changed their mind' } })
  t.equal(cancel.status, 202)
  t.same((await (await target).json() as any).result.content[0].text, 'cancelled', 'the handler saw its signal abort')
  const stranger = await openSession(url)
  await stranger.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'keep-running' } })
  await sleep(50)
  let settled = false
  const racing = other.then(() => { settled = true })
  await sleep(50)
  t.equal(settled, false, 'another session cannot cancel it')
  await session.post({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'keep-running' } })
  await racing
})

t.test('the GET stream tells of list changes, and of updates to the resources the session subscribed to', async (t) => {
  const { app, url } = await served(t)
  const session = await openSession(url)
  const controller = new AbortController()
  const stream = await fetch(url, { headers: { ...session.headers(), accept: 'text/event-stream' }, signal: controller.signal })
  t.equal(stream.status, 200)
  t.equal(stream.headers.get('content-type'), 'text/event-stream')
  const reader = (stream.body as ReadableStream<Uint8Array>).getReader()
  const decoder = new TextDecoder()
  const parser = new EventStreamParser()
  const waiting: any[] = []
  const next = async (): Promise<any> => {
    while (waiting.length === 0) {
      const { value, done } = await reader.read()
      if (done) return undefined
      waiting.push(...parser.push(decoder.decode(value, { stream: true })))
    }
    return waiting.shift()
  }
  await sleep(20)
  app.mcp.tool({ name: 'late', description: 'Late' }, () => 'l')
  t.same(await next(), { jsonrpc: '2.0', method: 'notifications/tools/list_changed' })
  app.mcp.notifyResourceUpdated('test://watched')
  await session.call('resources/subscribe', { uri: 'test://watched' })
  await sleep(20)
  app.mcp.notifyResourceUpdated('test://watched')
  t.same(await next(), { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: 'test://watched' } }, 'only after the subscribe')
  await session.call('resources/unsubscribe', { uri: 'test://watched' })
  await sleep(20)
  app.mcp.notifyResourceUpdated('test://watched')
  app.mcp.notifyListChanged('prompts')
  t.same(await next(), { jsonrpc: '2.0', method: 'notifications/prompts/list_changed' }, 'and no update after the unsubscribe')
  controller.abort()
})

t.test('apps that share a bus are one deployment: an answer that reaches the other node completes the call', async (t) => {
  const bus = new InProcessBus()
  const a = await served(t, { bus })
  const b = await served(t, { bus })
  const session = await openSession(a.url)
  const onB = async (request: any) => {
    const reply = await fetch(b.url, { method: 'POST', headers: session.headers(), body: JSON.stringify({ jsonrpc: '2.0', id: request.id, result: { action: 'accept', content: { name: 'Cross' } } }) })
    t.equal(reply.status, 202, 'node B took the answer for a call that waits on node A')
    return undefined
  }
  const call = await session.call('tools/call', { name: 'greet' }, onB)
  t.equal(call.response.result.content[0].text, 'Hello, Cross')
  await b.app.close()
  const gone = await session.call('tools/call', { name: 'greet' }, async (request) => {
    const reply = await fetch(a.url, { method: 'POST', headers: session.headers(), body: JSON.stringify({ jsonrpc: '2.0', id: request.id.replace(/^[^.]+/, 'nobody'), result: { action: 'decline' } }) })
    t.equal(reply.status, 400, 'an answer for a node no one listens as is refused at once')
    return { action: 'decline' }
  })
  t.equal(gone.response.result.content[0].text, 'No name (decline)')
})

t.test('without a bus that routes, an answer for another node is refused', async (t) => {
  const a = await served(t)
  const b = await served(t, { bus: { publish () {}, subscribe () { return () => {} } } })
  const session = await openSession(a.url)
  const call = await session.call('tools/call', { name: 'greet' }, async (request) => {
    const reply = await fetch(b.url, { method: 'POST', headers: session.headers(), body: JSON.stringify({ jsonrpc: '2.0', id: request.id, result: { action: 'decline' } }) })
    t.equal(reply.status, 400)
    return { action: 'accept', content: { name: 'Home' } }
  })
  t.equal(call.response.result.content[0].text, 'Hello, Home')
})

t.test('a GET stream\'s subscriptions are bounded, and subscribing twice or unsubscribing what was not is harmless', async (t) => {
  const { app, url } = await served(t, { limits: { subscriptionUris: 1 } })
  app.mcp.resourceTemplate({ uriTemplate: 'test://many/{n}', name: 'many' }, (_uri, v) => v.n)
  const session = await openSession(url)
  const { reader, controller } = await getStream(url, session)
  await session.call('resources/unsubscribe', { uri: 'test://many/1' })
  await session.call('resources/subscribe', { uri: 'test://many/1' })
  await session.call('resources/subscribe', { uri: 'test://many/1' })
  await session.call('resources/subscribe', { uri: 'test://many/2' })
  await sleep(20)
  app.mcp.notifyResourceUpdated('test://many/2')
  app.mcp.notifyResourceUpdated('test://many/1')
  const { value } = await reader.read()
  const text = new TextDecoder().decode(value)
  t.match(text, 'test://many/1')
  t.notMatch(text, 'test://many/2', 'past the limit, a subscription is not taken')
  controller.abort()
})

t.test('a subscribed URI is bounded by limits.uriLength, as a read URI is', async (t) => {
  const { app, url } = await served(t, { limits: { uriLength: 100 } })
  app.mcp.resourceTemplate({ uriTemplate: 'test://x/{n}', name: 'x' }, (_uri, v) => v.n)
  const session = await openSession(url)
  const { reader, controller } = await getStream(url, session)
  const at = `test://x/${'a'.repeat(100 - 'test://x/'.length)}`
  t.equal(at.length, 100)
  for (const method of ['resources/subscribe', 'resources/unsubscribe']) {
    t.same((await session.call(method, { uri: at + 'b' })).response.error, { code: -32602, message: 'params.uri is longer than 100 characters' }, `${method}: one past the limit`)
    t.same((await session.call(method, { uri: 'x'.repeat(900_000) })).response.error?.code, -32602, `${method}: a URI of 900,000 characters`)
  }
  t.same((await session.call('resources/subscribe', { uri: at })).response.result, {}, 'at the limit')
  await sleep(20)
  app.mcp.notifyResourceUpdated(at)
  const { value } = await reader.read()
  t.match(new TextDecoder().decode(value), at, 'the URI at the limit is subscribed')
  controller.abort()
})

t.test('a 2025-era call waiting for its answer when the server closes ends as routine, not as a failure', async (t) => {
  const logs = capturedLogs('info')
  const { app, url } = await served(t, {}, logs)
  const session = await openSession(url)
  let closing: Promise<void> | undefined
  const call = await session.call('tools/call', { name: 'greet' }, () => {
    closing = app.close()
    return undefined
  })
  await closing
  t.equal(call.requests.length, 1, 'the question was asked')
  t.same(call.response.error, { code: -32603, message: "tool greet stopped waiting for the client's answer: the server is shutting down" },
    'the call ends with an error that says why, not as a tool that failed')
  t.same(logs.lines.filter((line) => line.level >= 40), [], 'nothing at warn or error: a shutdown is routine')
  t.match(logs.lines.find((line) => line.msg === 'mcp call' && line.mcp.method === 'tools/call'), { level: 30, mcp: { outcome: 'error', code: -32603 } })
})

t.test('a 2025-era call is held to requestState.maxRounds, and needs a principal to ask', async (t) => {
  const { url } = await served(t, { requestState: { keys: [KEY], maxRounds: 2 } }, undefined, (app) => {
    app.addHook('onRequest', async (request) => {
      if (request.headers['x-user'] !== undefined) (request as unknown as { user: object }).user = { name: request.headers['x-user'] }
    })
    app.mcp.tool({ name: 'insatiable' }, async (_args, ctx) => {
      for (let i = 0; ; i++) await ctx.elicit(`Question ${i}`, confirm, { key: `q${i}` })
    })
  })
  const session = await openSession(url)
  const endless = await session.call('tools/call', { name: 'insatiable' }, () => ({ action: 'accept', content: { ok: true } }))
  t.equal(endless.requests.length, 2, 'the two rounds allowed were asked')
  t.same(endless.response.error, { code: -32602, message: 'tool insatiable still needs input after 2 rounds, the limit (requestState.maxRounds)' })
  // Authenticated (request.user is set) with no sub: no principal to bind, so no round is asked.
  const nameless = await openSession(url, { headers: { 'x-user': 'ada' } })
  const refused = await nameless.call('tools/call', { name: 'greet' }, () => ({ action: 'accept', content: { name: 'Ada' } }))
  t.equal(refused.requests.length, 0, 'nothing was asked')
  t.match(refused.response.error, { message: /found no principal to bind/ })
})
