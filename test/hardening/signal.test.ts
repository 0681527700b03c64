import t from 'tap'
import type { AddressInfo } from 'node:net'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { setImmediate as tick } from 'node:timers/promises'
import { requestedSchema } from '../../lib/index.js'
import { build, call, rpc } from '../helpers.js'

setFlagsFromString('--expose-gc')
const gc = runInNewContext('gc') as () => void

/** How many of the referenced objects are still alive after collecting garbage, with turns of the loop between. */
async function alive (refs: Array<WeakRef<object>>): Promise<number> {
  for (let i = 0; i < 5; i++) {
    await tick()
    gc()
  }
  return refs.filter((ref) => ref.deref() !== undefined).length
}

t.test('a handler that listens on ctx.signal leaves nothing behind once its call is done', async (t) => {
  const refs: Array<WeakRef<object>> = []
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'listens' }, (_args, ctx) => {
      ctx.signal.addEventListener('abort', () => {})
      refs.push(new WeakRef(ctx.signal))
      return 'ok'
    })
    app.mcp.tool({ name: 'asks' }, async (_args, ctx) => {
      ctx.signal.addEventListener('abort', () => {})
      refs.push(new WeakRef(ctx.signal))
      return (await ctx.elicit('Go?', requestedSchema().boolean('go'))).action
    })
  })
  for (let i = 0; i < 50; i++) {
    t.equal((await call(app, 'tools/call', { name: 'listens' })).body.result.content[0].text, 'ok')
    t.equal((await call(app, 'tools/call', { name: 'asks' })).body.result.resultType, 'input_required')
  }
  t.equal(refs.length, 100)
  t.equal(await alive(refs), 0, 'every call\'s signal was collected')
})

t.test('ctx.signal aborts with the reason of whichever source ends first, and only once', async (t) => {
  const seen: string[] = []
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'asks' }, async (_args, ctx) => {
      const signal = ctx.signal
      signal.addEventListener('abort', () => seen.push((signal.reason as Error).message))
      try {
        return (await ctx.elicit('Go?', requestedSchema().boolean('go'))).action
      } finally {
        seen.push(`in finally: ${String(signal.aborted)}`)
      }
    })
  })
  t.equal((await call(app, 'tools/call', { name: 'asks' })).body.result.resultType, 'input_required')
  await tick()
  t.same(seen, ['in finally: false', 'the pass is over'], 'the handler unwound, then the pass ended and aborted it, once')
})

t.test('ctx.signal read after its pass or its request ended is already aborted, with the reason', async (t) => {
  const late: unknown[] = []
  let release!: () => void
  const released = new Promise<void>((resolve) => { release = resolve })
  const app = await build(t, { shutdownGrace: 1000 }, (app) => {
    app.mcp.tool({ name: 'background' }, async (_args, ctx) => {
      const asked = ctx.elicit('Go?', requestedSchema().boolean('go'))
      setTimeout(() => late.push(ctx.signal.aborted, (ctx.signal.reason as Error).message), 20)
      return (await asked).action
    })
    app.mcp.tool({ name: 'watches' }, async (_args, ctx) => {
      const signal = ctx.signal
      await new Promise((resolve) => signal.addEventListener('abort', resolve))
      return `${String(signal.aborted)}: ${(signal.reason as Error).message}`
    })
    app.mcp.tool({ name: 'waits' }, async (_args, ctx) => {
      await released
      return `${String(ctx.signal.aborted)}: ${(ctx.signal.reason as Error).message}`
    })
  })
  // Over a real socket: under inject every reply looks abandoned once sent.
  await app.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`
  const post = async (name: string) => {
    const request = rpc('tools/call', { name })
    const reply = await fetch(url + request.url, { method: 'POST', headers: request.headers as Record<string, string>, body: JSON.stringify(request.payload) })
    return (await reply.json() as { result: any }).result
  }
  t.equal((await post('background')).resultType, 'input_required')
  await new Promise((resolve) => setTimeout(resolve, 50))
  t.same(late, [true, 'the pass is over'], 'read after the pass ended')
  const waiting = post('waits')
  const watching = post('watches')
  await new Promise((resolve) => setTimeout(resolve, 50))
  const closing = app.close()
  await new Promise((resolve) => setTimeout(resolve, 30))
  release()
  t.equal((await watching).content[0].text, 'true: the server is shutting down', 'listened on before the server began to close')
  t.equal((await waiting).content[0].text, 'true: the server is shutting down', 'read after the server began to close')
  await closing
})
