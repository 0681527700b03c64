import t from 'tap'
import { build, meta, VERSION } from '../helpers.js'

function post (url: string, id: number, name: string, extraMeta: object = {}) {
  return fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': VERSION, 'mcp-method': 'tools/call', 'mcp-name': name },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, _meta: { ...meta({}), ...extraMeta } } }),
  })
}

t.test('app.close() lets in-flight calls finish, streams included', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'slow' }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 300))
      return 'finished'
    })
      .tool({ name: 'streaming' }, async (_args, ctx) => {
        for (let step = 1; step <= 3; step++) {
          ctx.progress(step, 3)
          await new Promise((resolve) => setTimeout(resolve, 100))
        }
        return 'streamed'
      })
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(app.server.address() as { port: number }).port}/mcp`
  const slow = post(url, 1, 'slow')
  const streaming = post(url, 2, 'streaming', { progressToken: 'p' })
  await new Promise((resolve) => setTimeout(resolve, 50))
  const closing = Date.now()
  const closed = app.close()
  const slowReply = await slow
  t.equal(slowReply.headers.get('connection'), 'close', 'a reply sent while closing releases its connection')
  t.same((await slowReply.json() as { result: { content: unknown } }).result.content, [{ type: 'text', text: 'finished' }])
  const events = (await (await streaming).text()).split('\n\n').filter(Boolean).map((event) => JSON.parse(event.split('data: ')[1]))
  t.same(events.map((event) => event.method ?? 'response'), ['notifications/progress', 'notifications/progress', 'notifications/progress', 'response'])
  t.same(events.at(-1).result.content, [{ type: 'text', text: 'streamed' }])
  await closed
  t.ok(Date.now() - closing < 5000, 'close does not wait for keep-alive connections to time out')
  await t.rejects(post(url, 3, 'slow'), 'a closed server takes no new calls')
})
