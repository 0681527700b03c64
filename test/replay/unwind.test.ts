import t from 'tap'
import { setTimeout as sleep } from 'node:timers/promises'
import { requestedSchema, type McpContext } from '../../lib/index.js'
import { build, call } from '../helpers.js'

const confirm = requestedSchema().boolean('ok')
const yes = { 'elicit-1': { action: 'accept', content: { ok: true } } }

/** A connection pool of `size`: acquire fails once every connection is out. */
function pool (size: number) {
  let out = 0
  return {
    get out () { return out },
    acquire () {
      if (out === size) throw new Error('pool exhausted')
      out++
      let released = false
      return { release () { if (!released) { released = true; out-- } }, [Symbol.dispose] () { this.release() } }
    },
  }
}

t.test('finally blocks run on every yielded round: a pool is never exhausted by first rounds', async (t) => {
  const connections = pool(3)
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'reserve' }, async (_args, ctx) => {
      const connection = connections.acquire()
      try {
        const answer = await ctx.elicit('Reserve the seat?', confirm)
        return answer.action
      } finally {
        connection.release()
      }
    })
  })
  for (let i = 0; i < 30; i++) {
    const { body } = await call(app, 'tools/call', { name: 'reserve' })
    t.equal(body.result?.resultType, 'input_required', `first round ${i + 1}`)
  }
  t.equal(connections.out, 0, 'every round released its connection')
  const first = await call(app, 'tools/call', { name: 'reserve' })
  const done = await call(app, 'tools/call', { name: 'reserve', requestState: first.body.result.requestState, inputResponses: yes })
  t.same(done.body.result.content, [{ type: 'text', text: 'accept' }])
  t.equal(connections.out, 0)
})

t.test('`using` disposals run on a yielded round', async (t) => {
  const connections = pool(1)
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'scoped' }, async (_args, ctx) => {
      using connection = connections.acquire()
      t.ok(connection)
      const answer = await ctx.elicit('Go on?', confirm)
      return answer.action
    })
  })
  for (let i = 0; i < 5; i++) t.equal((await call(app, 'tools/call', { name: 'scoped' })).body.result.resultType, 'input_required')
  t.equal(connections.out, 0)
})

t.test('a transaction wrapper rolls back a yielded round', async (t) => {
  const log: string[] = []
  async function transaction<T> (work: () => Promise<T>): Promise<T> {
    log.push('begin')
    try {
      const value = await work()
      log.push('commit')
      return value
    } catch (error) {
      log.push('rollback')
      throw error
    }
  }
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'transfer' }, (_args, ctx) => transaction(async () => {
      const answer = await ctx.elicit('Transfer 10 EUR?', confirm)
      return answer.action
    }))
  })
  const first = await call(app, 'tools/call', { name: 'transfer' })
  t.equal(first.body.result.resultType, 'input_required')
  t.same(log, ['begin', 'rollback'])
  const done = await call(app, 'tools/call', { name: 'transfer', requestState: first.body.result.requestState, inputResponses: yes })
  t.same(done.body.result.content, [{ type: 'text', text: 'accept' }])
  t.same(log, ['begin', 'rollback', 'begin', 'commit'])
})

t.test('inside Promise.race, a yield stops the handler: nothing after the race runs', async (t) => {
  const charged: string[] = []
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'pay' }, async (_args, ctx) => {
      const answer = await Promise.race([ctx.elicit('Pay EUR 12.00?', confirm), sleep(20).then(() => 'timeout' as const)])
      charged.push(answer === 'timeout' ? 'charged after a timeout' : `charged: ${answer.action}`)
      return 'paid'
    })
  })
  const first = await call(app, 'tools/call', { name: 'pay' })
  t.equal(first.body.result.resultType, 'input_required')
  await sleep(60)
  t.same(charged, [], 'no side effect ran in the background after input_required was sent')
  const done = await call(app, 'tools/call', { name: 'pay', requestState: first.body.result.requestState, inputResponses: yes })
  t.same(done.body.result.content, [{ type: 'text', text: 'paid' }])
  t.same(charged, ['charged: accept'])
})

t.test('ctx.signal tells background work that the pass is over', async (t) => {
  const seen: Array<{ aborted: boolean, reason: string }> = []
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'background' }, async (_args, ctx) => {
      const signal = ctx.signal
      // Work the handler does not wait for, and that checks the signal before its side effect.
      sleep(30).then(() => { seen.push({ aborted: signal.aborted, reason: (signal.reason as Error | undefined)?.message ?? '' }) })
      t.equal(signal.aborted, false, 'live while the pass runs')
      const answer = await ctx.elicit('Continue?', confirm)
      return answer.action
    })
  })
  const first = await call(app, 'tools/call', { name: 'background' })
  t.equal(first.body.result.resultType, 'input_required')
  await sleep(60)
  t.same(seen, [{ aborted: true, reason: 'the pass is over' }])
})

t.test('an ask made after the pass ended rejects, and a dropped ask reports no unhandled rejection', async (t) => {
  const contexts: McpContext[] = []
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'late' }, async (_args, ctx) => {
      contexts.push(ctx)
      ctx.elicit('Never awaited', requestedSchema().string('x'), { key: 'dropped' })
      return 'done'
    })
      .tool({ name: 'quick' }, (_args, ctx) => {
        contexts.push(ctx)
        return 'done'
      })
  })
  const unhandled: unknown[] = []
  const onUnhandled = (reason: unknown) => unhandled.push(reason)
  process.on('unhandledRejection', onUnhandled)
  t.teardown(() => process.off('unhandledRejection', onUnhandled))
  const { body } = await call(app, 'tools/call', { name: 'late' })
  t.equal(body.result.resultType, 'input_required', 'what was asked is asked, awaited or not')
  t.same(Object.keys(body.result.inputRequests), ['dropped'])
  await t.rejects(contexts[0].elicit('Too late?', confirm), { name: 'InputRequired' }, 'an ask after a yielded pass rejects')
  await sleep(10)
  t.same(unhandled, [])

  t.same((await call(app, 'tools/call', { name: 'quick' })).body.result.content, [{ type: 'text', text: 'done' }])
  await t.rejects(contexts[1].elicit('After the end?', confirm), { message: 'ctx.elicit() and kin were called after the handler\'s pass ended' })
})

t.test('a signal first read after the pass ended is already aborted', async (t) => {
  const seen: boolean[] = []
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'late_look' }, async (_args, ctx) => {
      setTimeout(() => seen.push(ctx.signal.aborted), 20)
      return (await ctx.elicit('Go?', confirm)).action
    })
  })
  await call(app, 'tools/call', { name: 'late_look' })
  await sleep(50)
  t.same(seen, [true])
})

t.test('two bad answers in one round: the first is the error, the second changes nothing', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'pair' }, async (_args, ctx) => {
      const [a, b] = await Promise.all([ctx.elicit('A?', confirm, { key: 'a' }), ctx.elicit('B?', confirm, { key: 'b' })])
      return `${a.action} ${b.action}`
    })
  })
  const first = await call(app, 'tools/call', { name: 'pair' })
  const { body } = await call(app, 'tools/call', { name: 'pair', requestState: first.body.result.requestState, inputResponses: { a: { action: 'nope' }, b: { action: 'nope' } } })
  t.same(body.error, { code: -32602, message: 'inputResponses.a: result.action must be one of accept, decline, cancel' })
})

t.test('past eight asks, a repeated key is still found', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'many' }, async (_args, ctx) => {
      await Promise.all(Array.from({ length: 10 }, (_, i) => ctx.elicit(`Q${i}?`, confirm, { key: i === 9 ? 'k1' : `k${i}` })))
      return 'unreachable'
    })
  })
  const { body } = await call(app, 'tools/call', { name: 'many' })
  t.same(body.result.content, [{ type: 'text', text: 'Input key "k1" is used twice in one request: keys must be unique' }])
  t.equal(body.result.isError, true)
})
