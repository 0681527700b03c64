import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { connect, type Socket } from 'node:net'
import { once } from 'node:events'
import { setTimeout as sleep, setImmediate as tick } from 'node:timers/promises'
import { build, capturedLogs, listen, meta, VERSION, type build as Build } from '../helpers.js'
import { soakSize } from '../soak.js'

type Test = Parameters<typeof Build>[0]

async function served (t: Test, options: object, setup: (app: FastifyInstance) => void, fastifyOptions: object = {}) {
  const app = await build(t, options, setup, { forceCloseConnections: true, ...fastifyOptions })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  return { app, port, url: `http://127.0.0.1:${port}/mcp` }
}

/** Sends one MCP POST over a raw socket and then never reads: a client that stopped reading. */
async function stalled (port: number, method: string, params: object, extraMeta: object = {}): Promise<Socket> {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: { ...meta({}), ...extraMeta } } })
  const name = (params as { name?: string }).name
  const socket = connect(port, '127.0.0.1')
  await once(socket, 'connect')
  socket.write(`POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n` +
    `mcp-protocol-version: ${VERSION}\r\nmcp-method: ${method}\r\n${name === undefined ? '' : `mcp-name: ${name}\r\n`}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
  socket.pause()
  return socket
}

t.test('a client that stops reading a tool\'s stream is cut off at the buffer limit, and the handler is told', async (t) => {
  const logs = capturedLogs('warn')
  const seen = { sent: 0, reason: '' }
  const { port } = await served(t, { limits: { streamBufferBytes: 64 * 1024 } }, (app) => {
    app.mcp.tool({ name: 'chatty' }, async (_args, ctx) => {
      const line = 'x'.repeat(1024)
      while (!ctx.signal.aborted && seen.sent < 200_000) {
        ctx.log('info', line)
        seen.sent++
        if (seen.sent % 64 === 0) await tick()
      }
      seen.reason = (ctx.signal.reason as Error).message
      return 'done'
    })
  }, logs.options)
  const socket = await stalled(port, 'tools/call', { name: 'chatty' }, { 'io.modelcontextprotocol/logLevel': 'info' })
  for (let i = 0; i < 200 && seen.reason === ''; i++) await sleep(25)
  t.equal(seen.reason, 'the client stopped reading', 'ctx.signal aborted when the stream was cut off')
  t.ok(seen.sent < 200_000, `the handler stopped after ${seen.sent} messages`)
  const cut = logs.lines.find((line) => /ended an event stream/.test(line.msg))
  t.ok(cut !== undefined, 'the cut is logged at warn')
  t.ok(cut?.mcp.bufferedBytes > 64 * 1024 && cut?.mcp.limit === 64 * 1024)
  socket.destroy()
})

t.test('a listen stream whose client does not read is ended at the buffer limit', async (t) => {
  const logs = capturedLogs('warn')
  const { app, port } = await served(t, { limits: { streamBufferBytes: 32 * 1024 } }, (app) => {
    app.mcp.resourceTemplate({ uriTemplate: 'test://{path}', name: 'any' }, (_uri, v) => v.path)
  }, logs.options)
  // Long URIs make each notification about 4 kB, so the kernel's socket buffers fill in a few thousand.
  const uri = `test://${'x'.repeat(4000)}`
  const socket = await stalled(port, 'subscriptions/listen', { notifications: { resourceSubscriptions: [uri] } })
  const closed = once(socket, 'close')
  socket.on('error', () => {})
  await sleep(50)
  const cut = () => logs.lines.some((line) => /ended an event stream/.test(line.msg))
  let sent = 0
  for (; sent < 20_000 && !cut(); sent++) {
    app.mcp.notifyResourceUpdated(uri)
    if (sent % 100 === 0) await tick()
  }
  t.ok(cut(), `the server ended the stream after ${sent} updates of 4 kB, and said so at warn`)
  // The paused client sees the end once it reads what the kernel holds.
  socket.resume()
  // Unref'd, so that the deadline does not keep the file running for 10 s after the socket has closed.
  await Promise.race([closed, sleep(10_000, undefined, { ref: false })])
  t.equal(socket.destroyed, true, 'the connection is closed')
  const again = await listen(`http://127.0.0.1:${port}/mcp`, 2, { toolsListChanged: true })
  t.equal((await again.next()).method, 'notifications/subscriptions/acknowledged', 'the server keeps serving, and the cut stream no longer counts')
  again.close()
})

t.test('listen streams are bounded per caller and per process', async (t) => {
  const { url } = await served(t, { limits: { streamsPerCaller: 3, streams: 5 } }, (app) => { app.mcp.tool({ name: 'one' }, () => '1') })
  const open = []
  for (let i = 0; i < 3; i++) {
    const stream = await listen(url, i, { toolsListChanged: true })
    t.equal((await stream.next()).method, 'notifications/subscriptions/acknowledged')
    open.push(stream)
  }
  const fourth = await listen(url, 9, { toolsListChanged: true })
  t.equal(fourth.response.status, 429)
  t.same(await fourth.json(), { jsonrpc: '2.0', id: 9, error: { code: -32600, message: 'Too many open streams for this caller: at most 3 (limits.streamsPerCaller)' } })
  open.pop()!.close()
  await sleep(50)
  const replacement = await listen(url, 10, { toolsListChanged: true })
  t.equal((await replacement.next()).method, 'notifications/subscriptions/acknowledged', 'a closed stream frees its place')
  open.push(replacement)
  for (const stream of open) stream.close()
})

t.test('the process-wide limit holds whoever asks', async (t) => {
  const { app, url } = await served(t, { limits: { streamsPerCaller: 100, streams: 4 } }, (app) => { app.mcp.tool({ name: 'one' }, () => '1') })
  const open = []
  for (let i = 0; i < 4; i++) {
    const stream = await listen(url, i, { toolsListChanged: true })
    await stream.next()
    open.push(stream)
  }
  const refused = await listen(url, 5, { toolsListChanged: true })
  t.equal(refused.response.status, 503)
  t.match(await refused.json(), { error: { code: -32600, message: /as many open streams as it accepts \(4, limits.streams\)/ } })
  for (const stream of open) stream.close()
  await sleep(50)
  t.equal((await (await listen(url, 6, { toolsListChanged: true })).next()).method, 'notifications/subscriptions/acknowledged')
  await app.close()
})

t.test('a filter is bounded in URIs and their length', async (t) => {
  const { url } = await served(t, { limits: { subscriptionUris: 10, uriLength: 100 } }, (app) => { app.mcp.tool({ name: 'one' }, () => '1') })
  const many = await listen(url, 1, { resourceSubscriptions: Array.from({ length: 11 }, (_, i) => `test://r/${i}`) })
  t.same(await many.json(), { jsonrpc: '2.0', id: 1, error: { code: -32602, message: 'params.notifications.resourceSubscriptions holds 11 URIs; at most 10 are accepted (limits.subscriptionUris)' } })
  const long = await listen(url, 2, { resourceSubscriptions: ['test://' + 'x'.repeat(100)] })
  t.same(await long.json(), { jsonrpc: '2.0', id: 2, error: { code: -32602, message: 'params.notifications.resourceSubscriptions has a URI longer than 100 characters' } })
  const repeated = await listen(url, 3, { resourceSubscriptions: Array.from({ length: 10 }, () => 'test://same') })
  t.equal((await repeated.next()).method, 'notifications/subscriptions/acknowledged', 'ten copies of one URI are one subscription')
  repeated.close()
})

t.test('each change reaches exactly the streams that asked for it, among many with large filters', async (t) => {
  const { app, url } = await served(t, { limits: { streamsPerCaller: 60 } }, (app) => {
    app.mcp.resourceTemplate({ uriTemplate: 'test://item/{n}', name: 'item' }, (_uri, v) => v.n)
  })
  const streams = []
  for (let i = 0; i < soakSize(10, 50); i++) {
    const uris = Array.from({ length: 256 }, (_, k) => `test://item/${i * 1000 + k}`)
    const stream = await listen(url, i, { resourceSubscriptions: uris })
    await stream.next()
    streams.push(stream)
  }
  app.mcp.notifyResourceUpdated('test://item/7005')
  app.mcp.notifyResourceUpdated('test://item/999999')
  const update = await streams[7].next()
  t.same(update.params.uri, 'test://item/7005')
  await sleep(50)
  t.same(streams.map((stream) => stream.frames.length).filter((n) => n > 1), [2], 'one stream, and only one, heard of it')
  for (const stream of streams) stream.close()
})

t.test('a listener hears of a resource only when its caller may read it: hidden is absent', async (t) => {
  const { app, port } = await served(t, {}, (app) => {
    app.mcp.resource({ uri: 'test://salaries', name: 'salaries', canAccess: (ctx) => ctx.request.headers['x-role'] === 'hr' }, () => 'secret')
      .resource({ uri: 'test://menu', name: 'menu' }, () => 'soup')
  })
  const url = `http://127.0.0.1:${port}/mcp`
  const filter = { resourceSubscriptions: ['test://salaries', 'test://menu', 'test://absent'] }
  const anonymous = await listen(url, 1, filter)
  const hrStream = await fetchListen(url, 2, filter, { 'x-role': 'hr' })
  await anonymous.next()
  await hrStream.next()
  for (const uri of ['test://salaries', 'test://absent', 'test://menu']) app.mcp.notifyResourceUpdated(uri)
  t.same((await anonymous.next()).params.uri, 'test://menu', 'the anonymous listener hears of the menu only')
  // Each update is checked on its own, so two may arrive in either order.
  t.same([(await hrStream.next()).params.uri, (await hrStream.next()).params.uri].sort(), ['test://menu', 'test://salaries'])
  await sleep(30)
  t.same(anonymous.frames.map((frame) => frame.params.uri ?? frame.method), ['notifications/subscriptions/acknowledged', 'test://menu'])
  anonymous.close()
  hrStream.close()
})

/** `listen` with extra request headers. */
async function fetchListen (url: string, id: number, notifications: object, headers: Record<string, string>) {
  const original = globalThis.fetch
  globalThis.fetch = ((input: string, init: RequestInit) => original(input, { ...init, headers: { ...(init.headers as Record<string, string>), ...headers } })) as typeof fetch
  try {
    return await listen(url, id, notifications)
  } finally {
    globalThis.fetch = original
  }
}

t.test('updates to a URI nothing serves reach no one; callers with principals count apart', async (t) => {
  const { app, url } = await served(t, { limits: { streamsPerCaller: 1 }, principal: (request: { headers: Record<string, unknown> }) => (request.headers['x-user'] as string | undefined) ?? null }, (app) => {
    app.mcp.resource({ uri: 'test://there', name: 'there' }, () => 't')
  })
  const stream = await listen(url, 1, { resourceSubscriptions: ['test://nowhere', 'test://there'] })
  await stream.next()
  app.mcp.notifyResourceUpdated('test://nowhere')
  app.mcp.notifyResourceUpdated('test://there')
  t.same((await stream.next()).params.uri, 'test://there')
  const alice = await fetchListen(url, 2, { toolsListChanged: true }, { 'x-user': 'alice' })
  t.equal((await alice.next()).method, 'notifications/subscriptions/acknowledged', 'alice is not the anonymous caller of this address')
  const again = await fetchListen(url, 3, { toolsListChanged: true }, { 'x-user': 'alice' })
  t.equal(again.response.status, 429, 'and has her own limit')
  stream.close()
  alice.close()
})

t.test('a listen request whose client left before it got to mocapi holds no stream', async (t) => {
  const { url } = await served(t, { limits: { streamsPerCaller: 1 } }, (app) => {
    app.addHook('preHandler', async () => { await sleep(100) })
    app.mcp.tool({ name: 'one' }, () => '1')
  })
  const gone = await stalled(Number(new URL(url).port), 'subscriptions/listen', { notifications: { toolsListChanged: true } })
  await sleep(20)
  gone.destroy()
  await sleep(200)
  const next = await listen(url, 2, { toolsListChanged: true })
  t.equal((await next.next()).method, 'notifications/subscriptions/acknowledged', 'the place of the stream that never opened is free')
  next.close()
})

t.test('an events/stream whose client does not read is ended at the buffer limit, and its slot released', async (t) => {
  const logs = capturedLogs('warn')
  const { app, port, url } = await served(t, { limits: { streamBufferBytes: 32 * 1024, streamsPerCaller: 1 } }, (app) => {
    app.mcp.event({ name: 'big' })
  }, logs.options)
  const socket = await stalled(port, 'events/stream', { name: 'big' })
  const closed = once(socket, 'close')
  socket.on('error', () => {})
  await sleep(50)
  const cut = () => logs.lines.some((line) => /ended an event stream/.test(line.msg))
  const pad = 'x'.repeat(4000)
  let sent = 0
  for (; sent < 5000 && !cut(); sent++) {
    await app.mcp.emit('big', { pad })
    if (sent % 20 === 0) await sleep(1)
  }
  t.ok(cut(), `the server ended the stream after ${sent} occurrences of 4 kB, and said so at warn`)
  socket.resume()
  await Promise.race([closed, sleep(10_000, undefined, { ref: false })])
  t.equal(socket.destroyed, true, 'the connection is closed')
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': VERSION, 'mcp-method': 'events/stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'events/stream', params: { name: 'big', _meta: meta({}) } }),
  })
  t.equal(response.status, 200, 'the cut stream no longer counts against streamsPerCaller')
  await response.body?.cancel()
})
