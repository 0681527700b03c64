import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import mocapi, { InProcessBus, MemoryTaskStore, requestedSchema, type McpContext, type MocapiOptions } from '../../lib/index.js'
import { KEY, build, call, capturedLogs, meta, postHttp } from '../helpers.js'
import { openSession } from '../legacy/client.js'
import { WITH_TASKS } from '../tasks/client.js'
import { count, poll, type Runs } from './runs.js'

/** A booking whose quote and charge are journaled: the quote's price differs on every run of its effect. */
function booking (app: FastifyInstance, runs: Runs): void {
  app.mcp.tool({ name: 'book' }, async (_args, ctx) => {
    const quote = await ctx.once('quote', () => ({ price: 100 + count(runs, 'quote'), note: undefined }))
    const ok = await ctx.elicit(`Book for EUR ${quote.price}?`, requestedSchema().boolean('confirm'))
    if (ok.action !== 'accept') return 'Nothing booked'
    const receipt = await ctx.once('charge', async () => {
      await sleep(5)
      return { id: `RCPT-SECRET-${count(runs, 'charge')}`, amount: quote.price }
    })
    const seat = await ctx.elicit('Window or aisle?', requestedSchema().choose('seat', ['window', 'aisle']))
    const meal = await ctx.elicit('Meal?', requestedSchema().choose('meal', ['veg', 'fish']))
    const chosen = `${seat.action === 'accept' ? seat.content.seat : '-'} seat, ${meal.action === 'accept' ? meal.content.meal : '-'}`
    return `Booked ${receipt.id} for EUR ${receipt.amount}, ${chosen}`
  })
}

/** The nodes of one deployment over real HTTP: the same keys, bus and tools. */
async function fleet (t: Test, count: number, options: MocapiOptions = {}, setup: (app: FastifyInstance) => void = () => {}) {
  const bus = options.bus ?? new InProcessBus()
  const urls: string[] = []
  for (let i = 0; i < count; i++) {
    const app = Fastify({ forceCloseConnections: true })
    await app.register(mocapi, { requestState: { keys: [KEY] }, ...options, bus })
    setup(app)
    t.teardown(() => app.close())
    await app.listen({ host: '127.0.0.1', port: 0 })
    urls.push(`http://127.0.0.1:${(app.server.address() as { port: number }).port}/mcp`)
  }
  return urls
}

const ELICITING = meta({ elicitation: {} })

t.test('an effect runs once per call through every MRTR round, rounds alternating between two nodes', async (t) => {
  const runs: Runs = {}
  const [a, b] = await fleet(t, 2, {}, (app) => booking(app, runs))
  const first = await postHttp(a, 'tools/call', { name: 'book' }, { meta: ELICITING })
  t.equal(first.body.result.resultType, 'input_required')
  t.equal(first.body.result.inputRequests['elicit-1'].params.message, 'Book for EUR 101?')
  const second = await postHttp(b, 'tools/call', {
    name: 'book',
    requestState: first.body.result.requestState,
    inputResponses: { 'elicit-1': { action: 'accept', content: { confirm: true } } },
  }, { meta: ELICITING })
  t.same(Object.keys(second.body.result.inputRequests), ['elicit-2'], 'the quote read back: the first question is the same')
  const third = await postHttp(a, 'tools/call', {
    name: 'book',
    requestState: second.body.result.requestState,
    inputResponses: { 'elicit-2': { action: 'accept', content: { seat: 'aisle' } } },
  }, { meta: ELICITING })
  t.same(Object.keys(third.body.result.inputRequests), ['elicit-3'])
  const done = await postHttp(b, 'tools/call', {
    name: 'book',
    requestState: third.body.result.requestState,
    inputResponses: { 'elicit-3': { action: 'accept', content: { meal: 'veg' } } },
  }, { meta: ELICITING })
  t.same(done.body.result.content, [{ type: 'text', text: 'Booked RCPT-SECRET-1 for EUR 101, aisle seat, veg' }])
  t.same(runs, { quote: 1, charge: 1 }, 'four passes on two nodes: each effect ran once')

  for (const token of [second.body.result.requestState, third.body.result.requestState] as string[]) {
    t.notOk(token.includes('RCPT'), 'the recorded value is not in the token')
    t.notOk(Buffer.from(token.replace(/^[^.]*\./, ''), 'base64url').toString('latin1').includes('RCPT'), 'nor in its decoded bytes')
  }
  const again = await postHttp(a, 'tools/call', { name: 'book' }, { meta: ELICITING })
  t.equal(again.body.result.inputRequests['elicit-1'].params.message, 'Book for EUR 102?', 'a call started over starts a new ledger')
})

t.test('a pass that yields waits for the effect that raced its elicit, and records it', async (t) => {
  const runs: Runs = {}
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'race' }, async (_args, ctx) => {
      const [slow, answer] = await Promise.all([
        ctx.once('slow', async () => { await sleep(50); return count(runs, 'slow') }),
        ctx.elicit('Go?', requestedSchema().boolean('go')),
      ])
      return `slow=${slow} go=${answer.action === 'accept' ? answer.content.go : answer.action}`
    })
  })
  const first = await call(app, 'tools/call', { name: 'race' })
  t.equal(first.body.result.resultType, 'input_required')
  t.same(runs, { slow: 1 }, 'the round went out after the effect settled')
  const done = await call(app, 'tools/call', { name: 'race', requestState: first.body.result.requestState, inputResponses: { 'elicit-1': { action: 'accept', content: { go: true } } } })
  t.same(done.body.result.content, [{ type: 'text', text: 'slow=1 go=true' }])
  t.same(runs, { slow: 1 })
})

t.test('an effect that throws is not recorded: the next pass runs it again', async (t) => {
  const runs: Runs = {}
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'flaky' }, async (_args, ctx) => {
      const value = await ctx.once('flaky', async () => {
        if (count(runs, 'flaky') === 1) throw new Error('the service is down')
        return 'up'
      }).catch((error: Error) => error.message)
      await ctx.elicit('First?', requestedSchema().string('a'))
      await ctx.elicit('Second?', requestedSchema().string('b'))
      return `value=${value}`
    })
  })
  const first = await call(app, 'tools/call', { name: 'flaky' })
  const answer = { action: 'accept', content: { a: 'x' } }
  const second = await call(app, 'tools/call', { name: 'flaky', requestState: first.body.result.requestState, inputResponses: { 'elicit-1': answer } })
  t.equal(runs.flaky, 2, 'it threw on the first pass and ran again on the second')
  const done = await call(app, 'tools/call', { name: 'flaky', requestState: second.body.result.requestState, inputResponses: { 'elicit-2': { action: 'accept', content: { b: 'y' } } } })
  t.same(done.body.result.content, [{ type: 'text', text: 'value=up' }])
  t.equal(runs.flaky, 2, 'recorded on the second pass, read back on the third')
})

t.test('a 2025-era call whose answer lands on another node runs its effect once', async (t) => {
  const runs: Runs = {}
  const [a, b] = await fleet(t, 2, {}, (app) => booking(app, runs))
  const session = await openSession(a)
  const answers = [{ confirm: true }, { seat: 'window' }, { meal: 'fish' }]
  const reply = await session.call('tools/call', { name: 'book' }, async (request) => {
    const content = answers.shift()
    const posted = await fetch(b, { method: 'POST', headers: session.headers(), body: JSON.stringify({ jsonrpc: '2.0', id: request.id, result: { action: 'accept', content } }) })
    t.equal(posted.status, 202, 'node B took the answer for the call waiting on node A')
    return undefined
  })
  t.equal(reply.requests.length, 3)
  t.same(reply.response.result.content, [{ type: 'text', text: 'Booked RCPT-SECRET-1 for EUR 101, window seat, fish' }])
  t.same(runs, { quote: 1, charge: 1 })
})

t.test('a detached task records what ran before it detached, and its next pass on another node reads it back', async (t) => {
  const runs: Runs = {}
  const store = new MemoryTaskStore()
  const [a, b] = await fleet(t, 2, { tasks: { store } }, (app) => {
    app.mcp.tool({ name: 'reserve', task: { support: 'optional', detach: true } }, async (_args, ctx) => {
      const hold = await ctx.once('hold', () => `HOLD-${count(runs, 'hold')}`)
      await ctx.detach()
      const ok = await ctx.elicit('Keep the hold?', requestedSchema().boolean('keep'))
      return `${hold} kept=${ok.action === 'accept' ? ok.content.keep : ok.action}`
    })
  })
  const taskMeta = meta(WITH_TASKS)
  const created = await postHttp(a, 'tools/call', { name: 'reserve' }, { meta: taskMeta })
  const taskId = created.body.result.taskId
  t.ok(taskId, 'the call became a task')
  const waiting = await poll(a, taskId, 'input_required')
  t.ok(waiting.inputRequests['elicit-1'])
  await postHttp(b, 'tasks/update', { taskId, inputResponses: { 'elicit-1': { action: 'accept', content: { keep: true } } } }, { meta: taskMeta })
  const done = await poll(b, taskId, 'completed')
  t.same(done.result.content, [{ type: 'text', text: 'HOLD-1 kept=true' }])
  t.same(runs, { hold: 1 })
})

t.test('what ctx.once refuses, naming the key, with nothing recorded', async (t) => {
  const runs: Runs = {}
  const app = await build(t, { once: { maxBytes: 32 } }, (app) => {
    const tool = (name: string, body: (ctx: McpContext) => Promise<unknown>) => {
      app.mcp.tool({ name }, async (_args, ctx) => {
        const value = await body(ctx)
        return JSON.stringify(value) ?? 'undefined'
      })
    }
    tool('twice', async (ctx) => { await ctx.once('k', () => 1); return await ctx.once('k', () => 2) })
    // Typed unknown: the types refuse these values, so only untyped code meets the check at run time.
    tool('date', (ctx) => ctx.once('when', (): unknown => new Date(0)))
    tool('infinite', (ctx) => ctx.once('n', () => [1, Infinity]))
    tool('big', (ctx) => ctx.once('big', () => 'x'.repeat(40)))
    tool('bigint', (ctx) => ctx.once('b', (): unknown => ({ n: 1n })))
    tool('hole', (ctx) => ctx.once('h', (): unknown => [undefined]))
    tool('deep', (ctx) => {
      let value: unknown = 'leaf'
      for (let i = 0; i < 70; i++) value = [value]
      return ctx.once('deep', () => value)
    })
    tool('keyless', (ctx) => ctx.once('', () => 1))
    tool('fnless', (ctx) => ctx.once('k', 'not a function' as never))
    tool('sync', (ctx) => ctx.once('s', () => { count(runs, 'sync'); throw new Error('thrown at once') }))
    tool('nothing', (ctx) => ctx.once('nothing', () => {}))
    tool('bare', (ctx) => ctx.once('bare', () => Object.assign(Object.create(null), { fine: true, gone: undefined })))
    tool('orphan', (ctx) => ctx.once('orphan', () => Object.create(Object.create(null))))
    tool('list', (ctx) => ctx.once('list', () => [1, 'two', { three: [3] }, null]))
  })
  const failures: Record<string, string> = {
    twice: 'ctx.once("k") was called twice in one pass: a key names one effect',
    date: 'ctx.once("when") cannot record its value: it holds an object of class Date, which is not JSON',
    infinite: 'ctx.once("n") cannot record its value: it holds the number Infinity, which is not JSON',
    big: 'ctx.once("big") cannot record its value: its JSON takes 42 bytes, more than once.maxBytes (32)',
    bigint: 'ctx.once("b") cannot record its value: it holds a bigint, which is not JSON',
    hole: 'ctx.once("h") cannot record its value: it holds undefined in an array, which is not JSON',
    deep: 'ctx.once("deep") cannot record its value: it holds nesting deeper than 64 levels, which is not JSON',
    keyless: 'ctx.once() needs a non-empty key string and a function, got string and function',
    fnless: 'ctx.once() needs a non-empty key string and a function, got string and string',
    sync: 'thrown at once',
    orphan: 'ctx.once("orphan") cannot record its value: it holds an object of class (unnamed), which is not JSON',
  }
  for (const [name, message] of Object.entries(failures)) {
    const { body } = await call(app, 'tools/call', { name })
    t.equal(body.result.isError, true, name)
    t.same(body.result.content, [{ type: 'text', text: message }], name)
  }
  t.equal(runs.sync, 1)
  t.same((await call(app, 'tools/call', { name: 'nothing' })).body.result.content, [{ type: 'text', text: 'null' }], 'undefined is recorded as null')
  t.same((await call(app, 'tools/call', { name: 'bare' })).body.result.content, [{ type: 'text', text: '{"fine":true}' }], 'a field left undefined is left out')
  t.same((await call(app, 'tools/call', { name: 'list' })).body.result.content, [{ type: 'text', text: '[1,"two",{"three":[3]},null]' }])
})

t.test('ctx.once outside a call, and after the pass that made it ended', async (t) => {
  const seen: string[] = []
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'late' }, (_args, ctx) => {
      setTimeout(() => { ctx.once('late', () => 1).catch((error: Error) => seen.push(error.message)) }, 10)
      return 'done'
    })
    app.mcp.tool({ name: 'draining' }, async (_args, ctx) => {
      const asked = ctx.elicit('Go?', requestedSchema().boolean('go'))
      setImmediate(() => { ctx.once('after', () => 1).catch((error: Error) => seen.push(error.message)) })
      await asked
      return 'unreachable'
    })
  })
  app.addHook('onResponse', async (request) => {
    if (request.mcp?.method !== 'server/discover') return
    await request.mcp.once('hook', () => 1).catch((error: Error) => seen.push(error.message))
  })
  await call(app, 'server/discover')
  await call(app, 'tools/call', { name: 'late' })
  const drained = await call(app, 'tools/call', { name: 'draining' })
  t.equal(drained.body.result.resultType, 'input_required')
  await sleep(30)
  t.same(seen.sort(), [
    'ctx.once() journals an effect in a call\'s ledger: it is only available in tools/call, prompts/get and resources/read handlers, not in server/discover',
    'ctx.once() was called after the handler\'s pass ended',
    'mocapi: this round needs input from the client; the handler runs again when the client answers',
  ].sort())
})

t.test('single-use rounds on one node: a second retry is refused, and of two at once exactly one runs', async (t) => {
  const logs = capturedLogs()
  const runs: Runs = {}
  const app = Fastify(logs.options)
  await app.register(mocapi, { requestState: { keys: [KEY], singleUse: true } })
  booking(app, runs)
  t.teardown(() => app.close())
  const first = await call(app, 'tools/call', { name: 'book' })
  const retry = { name: 'book', requestState: first.body.result.requestState, inputResponses: { 'elicit-1': { action: 'accept', content: { confirm: true } } } }
  const [one, two] = await Promise.all([call(app, 'tools/call', retry), call(app, 'tools/call', retry)])
  const outcomes = [one.body, two.body].map((body) => body.result?.resultType ?? body.error.message).sort()
  t.same(outcomes, [
    'This round was already answered: a requestState is good for one retry (requestState.singleUse); start the call over without requestState',
    'input_required',
  ])
  t.same(runs, { quote: 1, charge: 1 }, 'the refused retry ran nothing')
  const refused = logs.lines.find((line) => line.msg === 'mocapi refused a requestState: its round was already answered (singleUse)')
  t.equal(refused?.level, 30, 'logged at info')
  t.same(refused?.mcp, { method: 'tools/call', round: 1 })
  t.notOk(JSON.stringify(logs.lines).includes(first.body.result.requestState), 'the token is not logged')
})

t.test('without single use or receipts, a round may be retried again, each retry from its own token', async (t) => {
  const runs: Runs = {}
  const app = await build(t, { receipts: false }, (app) => booking(app, runs))
  const first = await call(app, 'tools/call', { name: 'book' })
  const retry = { name: 'book', requestState: first.body.result.requestState, inputResponses: { 'elicit-1': { action: 'accept', content: { confirm: true } } } }
  const one = await call(app, 'tools/call', retry)
  const two = await call(app, 'tools/call', retry)
  t.equal(one.body.result.resultType, 'input_required')
  t.equal(two.body.result.resultType, 'input_required')
  t.equal(runs.charge, 2, 'each retry starts from the token it carries: what the charge recorded in one did not reach the other')
})

t.test('a bus whose claim fails answers 503 and is logged; the token is still good once it is back', async (t) => {
  const logs = capturedLogs()
  let down = true
  const claimed = new Set<string>()
  const bus = {
    publish () {},
    subscribe () { return () => {} },
    async claim (id: string) {
      if (down) throw new Error('claims are down')
      if (claimed.has(id)) return false
      claimed.add(id)
      return true
    },
  }
  const app = Fastify(logs.options)
  await app.register(mocapi, { requestState: { keys: [KEY], singleUse: true }, bus })
  booking(app, {})
  t.teardown(() => app.close())
  const first = await call(app, 'tools/call', { name: 'book' })
  const retry = { name: 'book', requestState: first.body.result.requestState, inputResponses: { 'elicit-1': { action: 'accept', content: { confirm: true } } } }
  const failed = await call(app, 'tools/call', retry)
  t.equal(failed.status, 503)
  t.equal(failed.body.error.message, 'The server could not check that this round is answered once (requestState.singleUse): retry it, and start the call over if the retry is refused as already answered')
  const logged = logs.lines.find((line) => line.msg === 'mocapi could not claim a single-use requestState: the bus failed')
  t.equal(logged?.level, 50)
  t.equal(logged?.err.message, 'claims are down')
  down = false
  t.equal((await call(app, 'tools/call', retry)).body.result.resultType, 'input_required')
})

t.test('the in-process bus holds a bounded number of claims, each for its TTL', async (t) => {
  const bus = new InProcessBus({ maxClaims: 2 })
  // Long enough that a loaded machine does not end the claim between two lines.
  t.equal(await bus.claim('a', 300), true)
  t.equal(await bus.claim('a', 300), false, 'a claim holds')
  t.equal(await bus.claim('b', 5000), true)
  await t.rejects(bus.claim('c', 5000), { message: 'mocapi: the in-process bus holds 2 claims, its limit (maxClaims): none is refused for reuse, so this one fails' })
  await sleep(350)
  t.equal(await bus.claim('c', 5000), true, 'an ended claim makes room')
  t.equal(await bus.claim('b', 5000), false)
  t.throws(() => new InProcessBus({ maxClaims: 0 }), { code: 'FST_MOCAPI_INVALID_OPTION', message: 'InProcessBus maxClaims must be a positive integer, got 0' })
})

t.test('options of ctx.once and single use are checked at registration, naming the bad value', async (t) => {
  const register = async (options: object): Promise<void> => {
    const app = Fastify()
    t.teardown(() => app.close())
    await app.register(mocapi, { requestState: { keys: [KEY] }, ...options })
  }
  await t.rejects(register({ once: { maxBytes: 0 } }), { code: 'FST_MOCAPI_INVALID_OPTION', message: /once\.maxBytes must be a positive integer, got 0/ })
  await t.rejects(register({ once: { bytes: 1 } }), { code: 'FST_MOCAPI_INVALID_OPTION', message: /once\.bytes/ })
  await t.rejects(register({ once: 'small' }), { code: 'FST_MOCAPI_INVALID_OPTION', message: /once must be an object, got "small"/ })
  await t.rejects(register({ requestState: { keys: [KEY], singleUse: 'yes' } }), { code: 'FST_MOCAPI_INVALID_OPTION', message: /requestState\.singleUse must be true or false, got "yes"/ })
  await t.rejects(register({ requestState: { keys: [KEY], singleUse: true }, bus: { publish () {}, subscribe () { return () => {} } } }), {
    code: 'FST_MOCAPI_INVALID_OPTION',
    message: 'requestState.singleUse needs a bus with a claim(id, ttlMs) method to refuse a second retry fleet-wide; the bus given has none',
  })
})

t.test('recorded values count against the token: one that makes it too long is a clear -32602', async (t) => {
  const app = await build(t, { requestState: { keys: [KEY], maxTokenLength: 2000 }, once: { maxBytes: 4000 } }, (app) => {
    app.mcp.tool({ name: 'bulky' }, async (_args, ctx) => {
      await ctx.once('page', () => 'p'.repeat(3000))
      await ctx.elicit('Keep it?', requestedSchema().boolean('keep'))
      return 'kept'
    })
  })
  const { body } = await call(app, 'tools/call', { name: 'bulky' })
  t.equal(body.error.code, -32602)
  t.match(body.error.message, /^tool bulky asked for more input than a requestState token holds \(\d+ characters, requestState\.maxTokenLength is 2000\): its answers and ctx\.once values count$/)
})
