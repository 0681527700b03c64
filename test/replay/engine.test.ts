import t from 'tap'
import Fastify from 'fastify'
import { randomBytes } from 'node:crypto'
import { Writable } from 'node:stream'
import mocapi, { requestedSchema } from '../../lib/index.js'
import { KEY, build, call, MOCAPI_VERSION } from '../helpers.js'

const confirm = requestedSchema().boolean('confirm', { title: 'Confirm' }).choose('cabin', ['economy', 'business'])

/** A travel server whose book_flight tool asks one question, counting its runs. */
async function travel (t: Parameters<typeof build>[0], options = {}) {
  const runs = { count: 0, args: [] as unknown[] }
  const app = await build(t, options, (app) => {
    app.mcp.tool({
      name: 'book_flight',
      inputSchema: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
    }, async (args: { to: string }, ctx) => {
      runs.count++
      runs.args.push(args)
      const answer = await ctx.elicit(`Book a flight to ${args.to}?`, confirm)
      if (answer.action !== 'accept') return `Nothing booked (${answer.action})`
      return `Booked ${answer.content.cabin} to ${args.to}`
    })
  })
  return { app, runs }
}

const book = { name: 'book_flight', arguments: { to: 'Lisbon' } }

t.test('one question: input_required, then the retry completes', async (t) => {
  const { app, runs } = await travel(t)
  const first = await call(app, 'tools/call', book)
  t.equal(first.status, 200)
  const result = first.body.result
  t.equal(result.resultType, 'input_required')
  t.same(result.inputRequests, {
    'elicit-1': {
      method: 'elicitation/create',
      params: {
        mode: 'form',
        message: 'Book a flight to Lisbon?',
        requestedSchema: {
          type: 'object',
          properties: { confirm: { type: 'boolean', title: 'Confirm' }, cabin: { type: 'string', enum: ['economy', 'business'] } },
          required: ['confirm', 'cabin'],
        },
      },
    },
  })
  t.type(result.requestState, 'string')
  t.same(result._meta, { 'io.modelcontextprotocol/serverInfo': { name: 'mocapi', version: MOCAPI_VERSION } })
  t.notOk('ttlMs' in result)

  const retry = await call(app, 'tools/call', {
    ...book,
    inputResponses: { 'elicit-1': { action: 'accept', content: { confirm: true, cabin: 'business' } } },
    requestState: result.requestState,
  })
  t.same(retry.body.result.content, [{ type: 'text', text: 'Booked business to Lisbon' }])
  t.equal(retry.body.result.resultType, 'complete')
  t.equal(runs.count, 2, 'a handler with one elicit runs twice')
  t.same(runs.args, [{ to: 'Lisbon' }, { to: 'Lisbon' }], 'the replay gets the original arguments')
})

t.test('decline and cancel come back as values', async (t) => {
  const { app } = await travel(t)
  for (const action of ['decline', 'cancel']) {
    const first = await call(app, 'tools/call', book)
    const retry = await call(app, 'tools/call', { ...book, inputResponses: { 'elicit-1': { action } }, requestState: first.body.result.requestState })
    t.same(retry.body.result.content, [{ type: 'text', text: `Nothing booked (${action})` }])
  }
})

t.test('n elicits run the handler n + 1 times, the ledger growing each round', async (t) => {
  let runs = 0
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'three' }, async (_args, ctx) => {
      runs++
      const answers: unknown[] = []
      for (let i = 1; i <= 3; i++) {
        const answer = await ctx.elicit(`Question ${i}`, requestedSchema().integer('n'))
        answers.push(answer.action === 'accept' ? answer.content.n : null)
      }
      return answers.join(',')
    })
  })
  let state: string | undefined
  const keys: string[] = []
  const states = new Set<string>()
  for (let round = 1; round <= 3; round++) {
    const params: Record<string, unknown> = { name: 'three' }
    if (state !== undefined) {
      params.requestState = state
      params.inputResponses = { [keys.at(-1)!]: { action: 'accept', content: { n: round - 1 } } }
    }
    const { body } = await call(app, 'tools/call', params)
    t.equal(body.result.resultType, 'input_required')
    const [key] = Object.keys(body.result.inputRequests)
    keys.push(key)
    state = body.result.requestState
    states.add(state!)
  }
  t.same(keys, ['elicit-1', 'elicit-2', 'elicit-3'])
  t.equal(states.size, 3, 'each round mints a new token')
  const done = await call(app, 'tools/call', { name: 'three', requestState: state, inputResponses: { 'elicit-3': { action: 'accept', content: { n: 3 } } } })
  t.same(done.body.result.content, [{ type: 'text', text: '1,2,3' }])
  t.equal(runs, 4)
})

t.test('concurrent elicits are asked together, with stable keys', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'both' }, async (_args, ctx) => {
      const [a, b] = await Promise.all([
        ctx.elicit('Your name?', requestedSchema().string('name'), { key: 'name' }),
        ctx.elicit('Your email?', requestedSchema().string('email', { format: 'email' }), { key: 'email' }),
      ])
      return a.action === 'accept' && b.action === 'accept' ? `${a.content.name} <${b.content.email}>` : 'no'
    })
  })
  const first = await call(app, 'tools/call', { name: 'both' })
  t.same(Object.keys(first.body.result.inputRequests), ['name', 'email'])
  const retry = await call(app, 'tools/call', {
    name: 'both',
    requestState: first.body.result.requestState,
    inputResponses: { name: { action: 'accept', content: { name: 'Ada' } }, email: { action: 'accept', content: { email: 'ada@example.com' } } },
  })
  t.same(retry.body.result.content, [{ type: 'text', text: 'Ada <ada@example.com>' }])
})

t.test('an input key named __proto__ is asked as any other', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'odd' }, async (_args, ctx) => {
      const answer = await ctx.elicit('Odd?', requestedSchema().boolean('ok'), { key: '__proto__' })
      return answer.action === 'accept' ? `ok ${String(answer.content.ok)}` : answer.action
    })
  })
  const first = await call(app, 'tools/call', { name: 'odd' })
  t.same(Object.keys(first.body.result.inputRequests), ['__proto__'], 'an own key of the reply, not its prototype')
  t.equal(Object.getOwnPropertyDescriptor(first.body.result.inputRequests, '__proto__')?.value.params.message, 'Odd?')
})

t.test('many concurrent elicits get ordinal keys, all asked in one round and all answered by key', async (t) => {
  const count = 70
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'survey' }, async (_args, ctx) => {
      const answers = await Promise.all(Array.from({ length: count }, (_, i) => ctx.elicit(`Question ${i + 1}?`, requestedSchema().integer('n'))))
      return answers.map((a) => a.action === 'accept' ? a.content.n : 0).join(',')
    })
  })
  const first = await call(app, 'tools/call', { name: 'survey' })
  const keys = Array.from({ length: count }, (_, i) => `elicit-${i + 1}`)
  t.same(Object.keys(first.body.result.inputRequests), keys)
  t.equal(first.body.result.inputRequests['elicit-70'].params.message, 'Question 70?')
  const inputResponses = Object.fromEntries(keys.map((key, i) => [key, { action: 'accept', content: { n: i + 1 } }]))
  const done = await call(app, 'tools/call', { name: 'survey', requestState: first.body.result.requestState, inputResponses })
  t.same(done.body.result.content, [{ type: 'text', text: keys.map((_, i) => i + 1).join(',') }])
})

t.test('a broad try/catch around ctx.elicit cannot change the round\'s outcome', async (t) => {
  const caught: string[] = []
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'careful' }, async (_args, ctx) => {
      try {
        const answer = await ctx.elicit('Sure?', requestedSchema().boolean('sure'))
        return answer.action
      } catch (error) {
        caught.push((error as Error).name)
        return 'swallowed'
      }
    })
  })
  const { body } = await call(app, 'tools/call', { name: 'careful' })
  t.equal(body.result.resultType, 'input_required', 'the yield wins over what the catch returns')
  t.same(caught, ['InputRequired'], 'the handler unwinds through its catch')
  const retry = await call(app, 'tools/call', { name: 'careful', requestState: body.result.requestState, inputResponses: { 'elicit-1': { action: 'decline' } } })
  t.same(retry.body.result.content, [{ type: 'text', text: 'decline' }])
})

t.test('a retry that lacks the answer is asked again; extra keys are ignored', async (t) => {
  const { app } = await travel(t)
  const first = await call(app, 'tools/call', book)
  const again = await call(app, 'tools/call', { ...book, requestState: first.body.result.requestState, inputResponses: { other: { action: 'accept' } } })
  t.equal(again.body.result.resultType, 'input_required')
  t.same(Object.keys(again.body.result.inputRequests), ['elicit-1'])
  const done = await call(app, 'tools/call', {
    ...book,
    requestState: again.body.result.requestState,
    inputResponses: { 'elicit-1': { action: 'accept', content: { confirm: true, cabin: 'economy' } }, stray: 1 },
  })
  t.same(done.body.result.content, [{ type: 'text', text: 'Booked economy to Lisbon' }])
})

t.test('an invalid answer is -32602 naming the field, and is not recorded', async (t) => {
  const { app } = await travel(t)
  const first = await call(app, 'tools/call', book)
  const state = first.body.result.requestState
  const cases: Array<[unknown, string]> = [
    [{ action: 'accept', content: { confirm: true, cabin: 'first' } }, 'inputResponses.elicit-1: content.cabin must be equal to one of the allowed values'],
    [{ action: 'accept', content: { confirm: 'yes', cabin: 'economy' } }, 'inputResponses.elicit-1: content.confirm must be boolean'],
    [{ action: 'accept', content: { cabin: 'economy' } }, "inputResponses.elicit-1: content must have required property 'confirm'"],
    [{ action: 'maybe' }, 'inputResponses.elicit-1: result.action must be one of accept, decline, cancel'],
    [12345, 'inputResponses.elicit-1: result must be an object'],
  ]
  for (const [answer, message] of cases) {
    const { body } = await call(app, 'tools/call', { ...book, requestState: state, inputResponses: { 'elicit-1': answer } })
    t.same(body.error, { code: -32602, message })
  }
  const ok = await call(app, 'tools/call', { ...book, requestState: state, inputResponses: { 'elicit-1': { action: 'accept', content: { confirm: true, cabin: 'economy' } } } })
  t.same(ok.body.result.content, [{ type: 'text', text: 'Booked economy to Lisbon' }])
})

t.test('a first call may answer by key without requestState', async (t) => {
  const { app } = await travel(t)
  const { body } = await call(app, 'tools/call', { ...book, inputResponses: { 'elicit-1': { action: 'accept', content: { confirm: true, cabin: 'economy' } } } })
  t.same(body.result.content, [{ type: 'text', text: 'Booked economy to Lisbon' }])
  const nulls = await call(app, 'tools/call', { ...book, inputResponses: null })
  t.same(nulls.body.error, { code: -32602, message: 'params.inputResponses must be an object' })
})

t.test('a handler that asks something else on replay breaks the ledger, and says which part differed', async (t) => {
  const asked = { message: 'First question?', schema: requestedSchema().string('x'), key: undefined as string | undefined, url: false }
  // The same round retried once per case: without receipts, each retry runs the handler again.
  const app = await build(t, { receipts: false }, (app) => {
    app.mcp.tool({ name: 'fickle' }, async (_args, ctx) => {
      const a = asked.url
        ? await ctx.elicitUrl(asked.message, 'https://example.com/step', { key: asked.key ?? 'elicit-1' })
        : await ctx.elicit(asked.message, asked.schema, { key: asked.key })
      await ctx.elicit('Second?', requestedSchema().string('y'))
      return a.action
    })
  })
  const first = await call(app, 'tools/call', { name: 'fickle' })
  const second = await call(app, 'tools/call', { name: 'fickle', requestState: first.body.result.requestState, inputResponses: { 'elicit-1': { action: 'accept', content: { x: 'a secret answer' } } } })
  t.same(Object.keys(second.body.result.inputRequests), ['elicit-2'])
  const retry = () => call(app, 'tools/call', { name: 'fickle', requestState: second.body.result.requestState, inputResponses: { 'elicit-2': { action: 'accept', content: { y: 'b' } } } })
  const cases: Array<[string, () => void, string, string]> = [
    ['message', () => { asked.message = 'A different question?' }, 'message', 'message'],
    ['schema', () => { asked.message = 'First question?'; asked.schema = requestedSchema().string('x', { title: 'X' }) }, 'schema', 'requested schema'],
    ['key', () => { asked.schema = requestedSchema().string('x'); asked.key = 'renamed' }, 'key', 'input key'],
    ['kind', () => { asked.key = undefined; asked.url = true }, 'kind', 'kind of request'],
  ]
  for (const [label, change, part, words] of cases) {
    change()
    const { status, body } = await retry()
    t.equal(status, 200, label)
    t.equal(body.error.code, -32602, label)
    t.match(body.error.message, new RegExp(`^Input request #1 has a different ${words} from the one answered in an earlier round: .* idempotent up to their last elicit`), label)
    t.notMatch(body.error.message, /secret/, 'never the answers')
    t.same(body.error.data, { reason: 'ledger_mismatch', ordinal: 1, part }, label)
  }
  asked.url = false
  const { body } = await retry()
  t.same(body.result.content, [{ type: 'text', text: 'accept' }], 'the same question again replays')
})

t.test('a key used twice in one request is refused to the handler', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'twice' }, async (_args, ctx) => {
      const schema = requestedSchema().string('x')
      ctx.elicit('One', schema, { key: 'same' }).catch(() => {})
      await ctx.elicit('Two', schema, { key: 'same' })
      return 'unreachable'
    })
  })
  const { body } = await call(app, 'tools/call', { name: 'twice' })
  t.equal(body.result.isError, true)
  t.same(body.result.content, [{ type: 'text', text: 'Input key "same" is used twice in one request: keys must be unique' }])
})

t.test('a message that is not a string is refused to the handler, before anything is asked', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'numbered' }, async (_args, ctx) => {
      await ctx.elicit(42 as unknown as string, requestedSchema().string('x'))
      return 'unreachable'
    })
    app.mcp.tool({ name: 'linked' }, async (_args, ctx) => {
      await ctx.elicitUrl('Open it', new URL('https://example.com/') as unknown as string)
      return 'unreachable'
    })
  })
  const { body } = await call(app, 'tools/call', { name: 'numbered' })
  t.equal(body.result.isError, true)
  t.same(body.result.content, [{ type: 'text', text: 'ctx.elicit() needs a message string, got number' }])
  const linked = await call(app, 'tools/call', { name: 'linked' })
  t.same(linked.body.result.content, [{ type: 'text', text: 'ctx.elicitUrl() needs a message string and a url string, got string and object' }])
})

t.test('the round cap ends a runaway loop', async (t) => {
  const app = await build(t, { requestState: { keys: [KEY], maxRounds: 2 } }, (app) => {
    app.mcp.tool({ name: 'forever' }, async (_args, ctx) => {
      for (;;) await ctx.elicit('Again?', requestedSchema().boolean('again'))
    })
  })
  let params: Record<string, unknown> = { name: 'forever' }
  for (let round = 1; round <= 2; round++) {
    const { body } = await call(app, 'tools/call', params)
    t.equal(body.result.resultType, 'input_required')
    const key = Object.keys(body.result.inputRequests)[0]
    params = { name: 'forever', requestState: body.result.requestState, inputResponses: { [key]: { action: 'accept', content: { again: true } } } }
  }
  const { body } = await call(app, 'tools/call', params)
  t.same(body.error, { code: -32602, message: 'tool forever still needs input after 2 rounds, the limit (requestState.maxRounds)' })
})

t.test('eliciting without the client capability is -32021 with 400', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'form' }, async (_args, ctx) => (await ctx.elicit('Name?', requestedSchema().string('name'))).action)
      .tool({ name: 'url' }, async (_args, ctx) => (await ctx.elicitUrl('Sign in', 'https://auth.example/start')).action)
  })
  const none = await call(app, 'tools/call', { name: 'form' }, { capabilities: {}, id: 5 })
  t.equal(none.status, 400)
  t.same(none.body, {
    jsonrpc: '2.0',
    id: 5,
    error: { code: -32021, message: 'Server requires the elicitation client capability for this request', data: { requiredCapabilities: { elicitation: {} } } },
  })
  const urlOnly = await call(app, 'tools/call', { name: 'form' }, { capabilities: { elicitation: { url: {} } } })
  t.same(urlOnly.body.error.data, { requiredCapabilities: { elicitation: { form: {} } } })
  const formOnly = await call(app, 'tools/call', { name: 'url' }, { capabilities: { elicitation: {} } })
  t.equal(formOnly.status, 400)
  t.same(formOnly.body.error.data, { requiredCapabilities: { elicitation: { url: {} } } })
  const explicitForm = await call(app, 'tools/call', { name: 'form' }, { capabilities: { elicitation: { form: {} } } })
  t.equal(explicitForm.body.result.resultType, 'input_required')
})

t.test('url mode: the link is asked for, and accept comes back', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'connect' }, async (_args, ctx) => {
      const answer = await ctx.elicitUrl('Connect your calendar', 'https://calendar.example/connect', { key: 'calendar' })
      return `calendar: ${answer.action}`
    })
  })
  const caps = { elicitation: { url: {} } }
  const first = await call(app, 'tools/call', { name: 'connect' }, { capabilities: caps })
  t.same(first.body.result.inputRequests, {
    calendar: { method: 'elicitation/create', params: { mode: 'url', message: 'Connect your calendar', url: 'https://calendar.example/connect' } },
  })
  const bad = await call(app, 'tools/call', { name: 'connect', requestState: first.body.result.requestState, inputResponses: { calendar: 'yes' } }, { capabilities: caps })
  t.same(bad.body.error, { code: -32602, message: 'inputResponses.calendar: result must be an object' })
  const wrong = await call(app, 'tools/call', { name: 'connect', requestState: first.body.result.requestState, inputResponses: { calendar: { action: 'ok' } } }, { capabilities: caps })
  t.match(wrong.body.error.message, 'result.action must be one of accept, decline, cancel')
  const done = await call(app, 'tools/call', { name: 'connect', requestState: first.body.result.requestState, inputResponses: { calendar: { action: 'accept' } } }, { capabilities: caps })
  t.same(done.body.result.content, [{ type: 'text', text: 'calendar: accept' }])
})

t.test('elicit outside an interactive handler is refused', async (t) => {
  const app = await build(t)
  let message = ''
  app.addHook('onResponse', async (request) => {
    await request.mcp?.elicit('Hi', requestedSchema().string('x')).catch((error: Error) => { message = error.message })
  })
  await call(app, 'server/discover')
  t.equal(message, 'input requests (ctx.elicit, ctx.sample, ctx.listRoots) are only available in tools/call, prompts/get and resources/read handlers, not in server/discover')
})

t.test('each pass logs one debug line, and answers never appear in logs', async (t) => {
  const lines: Array<Record<string, any>> = []
  const stream = new Writable({ write (chunk, _enc, done) { lines.push(JSON.parse(chunk.toString())); done() } })
  const app = Fastify({ logger: { level: 'debug', stream } })
  await app.register(mocapi, { requestState: { keys: [KEY] } })
  app.mcp.tool({ name: 'secret' }, async (_args, ctx) => {
    const answer = await ctx.elicit('Code?', requestedSchema().string('code'))
    return answer.action === 'accept' ? 'ok' : 'no'
  })
  t.teardown(() => app.close())
  const first = await call(app, 'tools/call', { name: 'secret' })
  await call(app, 'tools/call', { name: 'secret', requestState: first.body.result.requestState, inputResponses: { 'elicit-1': { action: 'accept', content: { code: 'hunter2-secret' } } } })
  const passes = lines.filter((line) => line.msg === 'mocapi replay pass')
  t.same(passes.map((line) => line.mcp), [
    { handler: 'tool secret', round: 1, answered: 0, pending: 1 },
    { handler: 'tool secret', round: 2, answered: 1, pending: 0 },
  ])
  t.ok(passes.every((line) => line.level === 20), 'at debug level')
  const text = JSON.stringify(lines)
  t.notMatch(text, 'hunter2-secret')
  t.notMatch(text, first.body.result.requestState)
  t.notMatch(text, KEY)
})

t.test('a restart with the same keys loses nothing; another key ring refuses the token', async (t) => {
  const first = await travel(t)
  const { body } = await call(first.app, 'tools/call', book)
  await first.app.close()
  const second = await travel(t)
  const retry = await call(second.app, 'tools/call', { ...book, requestState: body.result.requestState, inputResponses: { 'elicit-1': { action: 'accept', content: { confirm: true, cabin: 'economy' } } } })
  t.same(retry.body.result.content, [{ type: 'text', text: 'Booked economy to Lisbon' }])
  const stranger = await travel(t, { requestState: { keys: [randomBytes(32).toString('base64url')] } })
  const refused = await call(stranger.app, 'tools/call', { ...book, requestState: body.result.requestState, inputResponses: { 'elicit-1': { action: 'accept', content: { confirm: true, cabin: 'economy' } } } })
  t.same(refused.body.error, { code: -32602, message: 'Invalid or expired requestState', data: { reason: 'invalid_request_state' } })
  t.equal(stranger.runs.count, 0, 'nothing ran')
})
