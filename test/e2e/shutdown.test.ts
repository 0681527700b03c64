import t from 'tap'
import { build, capturedLogs, meta, VERSION } from '../helpers.js'
import { EventStreamParser } from '../../lib/testing/transport.js'

function post (url: string, id: number, name: string, extraMeta: object = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': VERSION, 'mcp-method': 'tools/call', 'mcp-name': name },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, _meta: { ...meta({}), ...extraMeta } } }),
  })
}

/** `running` resolves once `count` handlers have called `started()`: their calls are in flight, however busy the machine. */
function handlers (count: number): { started: () => void, running: Promise<void> } {
  let all!: () => void
  const running = new Promise<void>((resolve) => { all = resolve })
  return { started: () => { if (--count === 0) all() }, running }
}

t.test('app.close() lets in-flight calls finish, streams included', async (t) => {
  const calls = handlers(2)
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'slow' }, async () => {
      calls.started()
      await new Promise((resolve) => setTimeout(resolve, 300))
      return 'finished'
    })
      .tool({ name: 'streaming' }, async (_args, ctx) => {
        for (let step = 1; step <= 3; step++) {
          ctx.progress(step, 3)
          if (step === 1) calls.started()
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        return 'streamed'
      })
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/mcp`
  const slow = post(url, 1, 'slow')
  const streaming = post(url, 2, 'streaming', { progressToken: 'p' })
  await calls.running
  const closing = Date.now()
  const closed = app.close()
  const slowReply = await slow
  t.equal(slowReply.headers.get('connection'), 'close', 'a reply sent while closing releases its connection')
  t.same((await slowReply.json() as { result: { content: unknown } }).result.content, [{ type: 'text', text: 'finished' }])
  const events = new EventStreamParser().push(await (await streaming).text()) as any[]
  t.same(events.map((event) => event.method ?? 'response'), ['notifications/progress', 'notifications/progress', 'notifications/progress', 'response'])
  t.same(events.at(-1).result.content, [{ type: 'text', text: 'streamed' }])
  await closed
  t.ok(Date.now() - closing < 5000, 'close does not wait for keep-alive connections to time out')
  await t.rejects(post(url, 3, 'slow'), 'a closed server takes no new calls')
})

t.test('app.close() aborts handlers\' signals, waits shutdownGrace, then ends what still runs', async (t) => {
  const seen: string[] = []
  const calls = handlers(3)
  const app = await build(t, { shutdownGrace: 300 }, (app) => {
    app.mcp.tool({ name: 'hung' }, async (_args, ctx) => {
      ctx.signal.addEventListener('abort', () => seen.push(`aborted: ${(ctx.signal.reason as Error).message}`))
      calls.started()
      await new Promise(() => {})
    })
      .tool({ name: 'hung_stream' }, async (_args, ctx) => {
        ctx.progress(1)
        calls.started()
        await new Promise(() => {})
      })
      .tool({ name: 'polite' }, async (_args, ctx) => {
        await new Promise((resolve) => { ctx.signal.addEventListener('abort', resolve); calls.started() })
        return 'stopped when asked'
      })
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/mcp`
  const hung = post(url, 1, 'hung')
  const stream = post(url, 2, 'hung_stream', { progressToken: 'p' })
  const polite = post(url, 3, 'polite')
  await calls.running
  const started = Date.now()
  await app.close()
  const took = Date.now() - started
  t.ok(took >= 280 && took < 5000, `close took ${took} ms: the grace period, then no longer`)
  t.same(seen, ['aborted: the server is shutting down'], 'the signal told the handler at once')
  const politeReply = await polite
  t.same((await politeReply.json()).result.content, [{ type: 'text', text: 'stopped when asked' }], 'a handler that honours the signal finishes')
  const hungReply = await hung
  t.equal(hungReply.status, 503)
  t.same(await hungReply.json(), { jsonrpc: '2.0', id: 1, error: { code: -32603, message: 'The server shut down before the request completed' } })
  const streamReply = await stream
  await t.rejects(streamReply.text(), 'a stream still running is cut')
})

t.test('a handler that gives up when its call is aborted is logged as routine, one that fails as an error', async (t) => {
  const logs = capturedLogs('info')
  const calls = handlers(2)
  const app = await build(t, { shutdownGrace: 2000 }, (app) => {
    app.mcp.tool({ name: 'gives_up' }, async (_args, ctx) => {
      await new Promise((resolve) => { ctx.signal.addEventListener('abort', resolve); calls.started() })
      ctx.signal.throwIfAborted()
    })
      .tool({ name: 'breaks' }, async (_args, ctx) => {
        await new Promise((resolve) => { ctx.signal.addEventListener('abort', resolve); calls.started() })
        throw new Error('the database went away')
      })
  }, logs.options)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/mcp`
  const givesUp = post(url, 1, 'gives_up')
  const breaks = post(url, 2, 'breaks')
  await calls.running
  await app.close()
  const gaveUp = (await (await givesUp).json()).result
  t.equal(gaveUp.isError, true)
  t.same(gaveUp.content, [{ type: 'text', text: 'the server is shutting down' }], 'the client is told why')
  const broke = (await (await breaks).json()).result
  t.same(broke.content, [{ type: 'text', text: 'the database went away' }])
  const about = (tool: string) => logs.lines.filter((line) => line.mcp?.handler === `tool ${tool}`).map((line) => [line.level, line.msg])
  t.same(about('gives_up'), [[30, 'mocapi: tool gives_up stopped, its call aborted']], 'an aborted call is routine: info')
  t.same(about('breaks'), [[50, 'mocapi: tool breaks threw']], 'a real failure while closing is still an error')
})
