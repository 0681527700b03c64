import t from 'tap'
import { MemoryEventLog, type EventLog, type MocapiOptions } from '../../lib/index.js'
import { capturedLogs, jwtServer, openSession, openStream, postHttp } from '../helpers.js'

type Test = Parameters<typeof jwtServer>[0]

const tick = { name: 'tick', payloadSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } } as const

async function server (t: Test, options: MocapiOptions = {}, setup?: Parameters<typeof jwtServer>[2]) {
  return await jwtServer(t, { events: { heartbeat: 300 }, ...options }, async (app) => {
    app.mcp.event(tick)
    await setup?.(app)
  })
}

t.test('a stream sends active, then each occurrence with its cursor, and heartbeats carrying the cursor', async (t) => {
  const { app, url } = await server(t)
  const stream = await openStream(url, 'sub-1' as unknown as number, 'events/stream', { name: 'tick' })
  t.equal(stream.response.headers.get('content-type'), 'text/event-stream')
  const active = await stream.next()
  t.same(active.params, { cursor: active.params.cursor, truncated: false, _meta: { 'io.modelcontextprotocol/subscriptionId': 'sub-1' } })
  t.equal(typeof active.params.cursor, 'string')
  await app.mcp.emit('tick', { n: 1 }, { eventId: 't1' })
  await app.mcp.emit('tick', { n: 2 }, { eventId: 't2' })
  const first = await stream.next()
  const second = await stream.next()
  t.same([first.params.eventId, second.params.eventId], ['t1', 't2'])
  t.same(first.params.data, { n: 1 })
  t.equal(first.params._meta['io.modelcontextprotocol/subscriptionId'], 'sub-1')
  t.not(first.params.cursor, second.params.cursor)
  const started = Date.now()
  const beat = await stream.next()
  t.equal(beat.method, 'notifications/events/heartbeat')
  t.ok(Date.now() - started < 1000, 'within the heartbeat')
  t.equal(typeof beat.params.cursor, 'string')
  // The cursor a stream gives is the subscription's: a poll with it reads from there.
  await app.mcp.emit('tick', { n: 3 }, { eventId: 't3' })
  const polled = await postHttp(url, 'events/poll', { name: 'tick', cursor: second.params.cursor })
  t.same(polled.body.result.events.map((event: any) => event.eventId), ['t3'])
  stream.close()
})

t.test('a stream given a cursor first sends what came after it; one older than the log keeps says truncated', async (t) => {
  const log = new MemoryEventLog({ maxBytes: 40 })
  const { app, url } = await server(t, { events: { log, heartbeat: 300 } })
  const cursor = (await postHttp(url, 'events/poll', { name: 'tick', cursor: null })).body.result.cursor
  await app.mcp.emit('tick', { n: 1 }, { eventId: 'a' })
  const caughtUp = await openStream(url, 1, 'events/stream', { name: 'tick', cursor })
  t.equal((await caughtUp.next()).params.truncated, false)
  t.equal((await caughtUp.next()).params.eventId, 'a', 'what came after the cursor')
  caughtUp.close()
  for (let n = 0; n < 10; n++) await app.mcp.emit('tick', { n }, { eventId: `b${n}` })
  const late = await openStream(url, 2, 'events/stream', { name: 'tick', cursor })
  t.equal((await late.next()).params.truncated, false, 'active first')
  const gap = await late.next()
  t.equal(gap.method, 'notifications/events/active', 'again, mid-stream, on a gap')
  t.equal(gap.params.truncated, true)
  const next = await late.next()
  t.equal(next.method, 'notifications/events/event')
  t.not(next.params.eventId, 'a', 'what the log dropped is gone')
  late.close()
})

t.test('streams count against limits.streamsPerCaller (429) and are released when the client leaves', async (t) => {
  const { url, token } = await server(t, { limits: { streamsPerCaller: 1 } })
  const auth = { authorization: `Bearer ${token()}` }
  const one = await openStream(url, 1, 'events/stream', { name: 'tick' }, auth)
  await one.next()
  const two = await openStream(url, 2, 'events/stream', { name: 'tick' }, auth)
  t.equal(two.response.status, 429)
  t.match((await two.json()).error.message, /streamsPerCaller/)
  one.close()
  await new Promise((resolve) => setTimeout(resolve, 100))
  const three = await openStream(url, 3, 'events/stream', { name: 'tick' }, auth)
  t.equal((await three.next()).method, 'notifications/events/active', 'the first one was released')
  three.close()
})

t.test('a bad subscription is an error at once, not a stream', async (t) => {
  const { url } = await server(t, {}, (app) => { app.mcp.event({ name: 'webhook.only', delivery: ['webhook'] }) })
  for (const [params, code] of [[{ name: 'nope' }, -32023], [{ name: 'webhook.only' }, -32026], [{ name: 'tick', cursor: 'bad' }, -32602]] as const) {
    const refused = await openStream(url, 1, 'events/stream', params)
    t.match(refused.response.headers.get('content-type'), /^application\/json/)
    t.equal((await refused.json()).error.code, code, JSON.stringify(params))
  }
})

t.test('on shutdown each stream hears terminated, then its result', async (t) => {
  const { app, url } = await server(t)
  const stream = await openStream(url, 5, 'events/stream', { name: 'tick' })
  await stream.next()
  const closing = app.close()
  const terminated = await stream.next()
  t.equal(terminated.method, 'notifications/events/terminated')
  t.equal(terminated.params.error.data.reason, 'shutdown')
  const last = await stream.next()
  t.match(last.result, { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': 5 } })
  await closing
})

t.test('an upstream type streams what its check returns, read at once and at each heartbeat', async (t) => {
  let calls = 0
  const { url } = await server(t, {}, (app) => {
    app.mcp.event({
      name: 'upstream',
      check: async (_args, cursor) => {
        calls++
        return { events: cursor === null ? [] : [{ eventId: `u${calls}`, data: { calls } }], cursor: `c${calls}` }
      },
    })
  })
  const stream = await openStream(url, 1, 'events/stream', { name: 'upstream' })
  const active = await stream.next()
  t.equal(active.params.cursor, null, 'an upstream stream starts with no cursor of its own')
  const frames = [await stream.next(), await stream.next(), await stream.next()]
  t.ok(frames.some((frame) => frame.method === 'notifications/events/event' && frame.params.eventId.startsWith('u')), JSON.stringify(frames))
  stream.close()
})

t.test('a log that fails a read is a notifications/events/error on the stream, which stays open and logs it', async (t) => {
  const memory = new MemoryEventLog()
  let failing = false
  const log: EventLog = Object.assign(Object.create(memory), {
    read: (name: string, after: string, limit: number) => failing ? Promise.reject(new Error('log down')) : memory.read(name, after, limit),
    append: memory.append.bind(memory),
  })
  const { lines, options: logging } = capturedLogs()
  t.ok(logging)
  const { app, url, lines: serverLines } = await server(t, { events: { log, heartbeat: 300 } })
  const stream = await openStream(url, 1, 'events/stream', { name: 'tick' })
  await stream.next()
  failing = true
  await app.mcp.emit('tick', { n: 1 })
  const error = await stream.next()
  t.equal(error.method, 'notifications/events/error')
  t.match(error.params.error.message, /could not be read/)
  failing = false
  let next = await stream.next()
  while (next.method === 'notifications/events/heartbeat') next = await stream.next()
  t.equal(next.method, 'notifications/events/event', 'it delivers once the log reads again')
  t.ok(serverLines.some((line) => line.level === 50 && /could not read its events/.test(line.msg)))
  t.same(lines, [])
  stream.close()
})

t.test('a client that leaves while its stream reads the log is sent nothing more', async (t) => {
  const memory = new MemoryEventLog()
  let slow = false
  let reads = 0
  const log = new Proxy(memory, {
    get: (target, key) => {
      if (key === 'read') {
        return async (name: string, after: string, limit: number) => {
          reads++
          if (slow) await new Promise((resolve) => setTimeout(resolve, 300))
          return await target.read(name, after, limit)
        }
      }
      const own = Reflect.get(target, key)
      return typeof own === 'function' ? own.bind(target) : own
    },
  }) as EventLog
  const { app, url, lines } = await server(t, { events: { log, heartbeat: 5000 } })
  const stream = await openStream(url, 1, 'events/stream', { name: 'tick' })
  await stream.next()
  slow = true
  const before = reads
  await app.mcp.emit('tick', { n: 1 })
  const started = () => reads > before
  for (let i = 0; i < 200 && !started(); i++) await new Promise((resolve) => setTimeout(resolve, 5))
  stream.close()
  await new Promise((resolve) => setTimeout(resolve, 500))
  t.same(lines.filter((line) => line.level >= 40), [], 'nothing went wrong')
})

t.test('removing a type ends its streams with terminated (NotFound), then their results', async (t) => {
  const { app, url } = await server(t)
  const stream = await openStream(url, 3, 'events/stream', { name: 'tick' })
  await stream.next()
  t.equal(app.mcp.removeEvent('tick'), true)
  const terminated = await stream.next()
  t.equal(terminated.method, 'notifications/events/terminated')
  t.same(terminated.params.error, { code: -32023, message: 'Event type tick was removed', data: { kind: 'event' } })
  t.match((await stream.next()).result, { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': 3 } })
  t.equal(await stream.next(), undefined, 'the stream ended')
})

t.test('a 2025-era session holds an events/stream too', async (t) => {
  const { app, url } = await server(t)
  const session = await openSession(url)
  const controller = new AbortController()
  const response = await fetch(url, {
    method: 'POST',
    signal: controller.signal,
    headers: {
      'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25',
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 4, method: 'events/stream', params: { name: 'tick' } }),
  })
  t.equal(response.headers.get('content-type'), 'text/event-stream')
  const reader = response.body!.getReader()
  let text = ''
  const read = async (until: RegExp) => {
    while (!until.test(text)) text += new TextDecoder().decode((await reader.read()).value)
  }
  await read(/notifications\/events\/active/)
  await app.mcp.emit('tick', { n: 7 }, { eventId: 'legacy-7' })
  await read(/"eventId":"legacy-7"/)
  t.match(text, /"method":"notifications\/events\/event","params":\{"eventId":"legacy-7","name":"tick"[^}]*"data":\{"n":7\}/)
  controller.abort()
})
