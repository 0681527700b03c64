import t from 'tap'
import { requestedSchema } from '../../lib/index.js'
import { build, call, meta, rpc } from '../helpers.js'
import { MAX_DEPTH } from '../../lib/protocol/wire.js'

t.test('a handler that asks once per client-supplied item stops at what a token can hold, in linear time', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool<{ items: string[] }>({ name: 'survey', inputSchema: { type: 'object', properties: { items: { type: 'array', items: { type: 'string' } } } } }, async (args: { items: string[] }, ctx) => {
      const schema = requestedSchema().boolean('ok')
      const answers = await Promise.all(args.items.map((item) => ctx.elicit(`Keep ${item}?`, schema)))
      return `${answers.length} answered`
    })
  })
  const items = Array.from({ length: 40_000 }, (_, i) => `item ${i}`)
  const started = process.hrtime.bigint()
  const { status, body } = await call(app, 'tools/call', { name: 'survey', arguments: { items } })
  const ms = Number(process.hrtime.bigint() - started) / 1e6
  t.equal(status, 200)
  t.equal(body.error.code, -32602)
  t.match(body.error.message, /^The handler asked for more input in one round than a requestState token holds \(over \d+ requests\)$/)
  t.comment(`40,000 asks refused in ${ms.toFixed(0)} ms`)
  const fine = await call(app, 'tools/call', { name: 'survey', arguments: { items: items.slice(0, 300) } })
  t.equal(Object.keys(fine.body.result.inputRequests).length, 300, 'what fits is asked in one round')
})

t.test('the questions of one round stop at what one response may carry (bodyLimit), however the handler repeats client text', async (t) => {
  const schema = requestedSchema().boolean('ok')
  const schemaLength = JSON.stringify(schema.schema).length
  const bodyLimit = 20_000
  const app = await build(t, { bodyLimit }, (app) => {
    app.mcp.tool({ name: 'long', inputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } }, async (args: { n: number }, ctx) => {
      return (await ctx.elicit('x'.repeat(args.n), schema, { key: 'k' })).action
    })
    app.mcp.tool({ name: 'echoes', inputSchema: { type: 'object', properties: { msg: { type: 'string' }, n: { type: 'integer' } }, required: ['msg', 'n'] } }, async (args: { msg: string, n: number }, ctx) => {
      const answers = await Promise.all(Array.from({ length: args.n }, (_, i) => ctx.elicit(`${args.msg} ${i}`, schema)))
      return `${answers.length} answered`
    })
  })
  const at = bodyLimit - schemaLength - 'k'.length
  const fits = await call(app, 'tools/call', { name: 'long', arguments: { n: at } })
  t.equal(fits.body.result.inputRequests.k.params.message.length, at, 'a round of exactly bodyLimit characters is asked')
  const over = await call(app, 'tools/call', { name: 'long', arguments: { n: at + 1 } })
  t.same(over.body.error, { code: -32602, message: `The handler asked for more input in one round than one response may carry: its input requests passed ${bodyLimit} characters (the bodyLimit option)` }, 'one character more is refused')
  const msg = 'm'.repeat(15_000)
  const echoed = await call(app, 'tools/call', { name: 'echoes', arguments: { msg, n: 400 } })
  t.equal(echoed.body.error.code, -32602, '400 questions repeating 15,000 characters of client text')
  t.ok(echoed.response.body.length < 1000, `the refusal is small (${echoed.response.body.length} bytes), not 6 MB of questions`)
})

t.test('input keys named like Object.prototype members are asked and answered like any other', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'odd_keys' }, async (_args, ctx) => {
      const schema = requestedSchema().string('v')
      const answers = await Promise.all(['constructor', 'toString', '__proto__', 'valueOf', 'hasOwnProperty'].map((key) => ctx.elicit(`Value of ${key}?`, schema, { key })))
      return answers.map((answer) => answer.action === 'accept' ? answer.content.v : answer.action).join(',')
    })
  })
  const first = await call(app, 'tools/call', { name: 'odd_keys' })
  t.same(Object.keys(first.body.result.inputRequests), ['constructor', 'toString', '__proto__', 'valueOf', 'hasOwnProperty'], 'none is taken from the prototype')
  const partial = await call(app, 'tools/call', { name: 'odd_keys', requestState: first.body.result.requestState, inputResponses: { toString: { action: 'accept', content: { v: 't' } } } })
  t.same(Object.keys(partial.body.result.inputRequests), ['constructor', '__proto__', 'valueOf', 'hasOwnProperty'], 'an absent answer is asked again, not read from Object.prototype')
  // Fastify's body parser refuses a __proto__ key outright (its default protection), before mocapi sees it.
  const poisoned = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: { 'content-type': 'application/json' },
    payload: '{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{"name":"odd_keys","inputResponses":{"__proto__":{"action":"decline"}}}}',
  })
  t.equal(poisoned.statusCode, 400)
  t.equal(poisoned.json().error.code, -32700)
  const responses = { constructor: { action: 'accept', content: { v: 'c' } }, valueOf: { action: 'decline' }, hasOwnProperty: { action: 'accept', content: { v: 'h' } } }
  const third = await call(app, 'tools/call', { name: 'odd_keys', requestState: partial.body.result.requestState, inputResponses: responses })
  t.same(Object.keys(third.body.result.inputRequests), ['__proto__'], 'the rest are in the ledger')
})

t.test('answer content the schema does not declare never reaches the handler, nor later tokens', async (t) => {
  const seen: unknown[] = []
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'profile' }, async (_args, ctx) => {
      const who = await ctx.elicit('Your name?', requestedSchema().string('name'))
      const more = await ctx.elicit('Your team?', requestedSchema().chooseMany('teams', ['a', 'b']))
      seen.push(who, more)
      return 'ok'
    })
  })
  const first = await call(app, 'tools/call', { name: 'profile' })
  const mass = { action: 'accept', content: { name: 'Ada', role: 'admin', profile: { isAdmin: true } } }
  const second = await call(app, 'tools/call', { name: 'profile', requestState: first.body.result.requestState, inputResponses: { 'elicit-1': mass } })
  const clean = await call(app, 'tools/call', { name: 'profile', requestState: first.body.result.requestState, inputResponses: { 'elicit-1': { action: 'accept', content: { name: 'Ada' } } } })
  t.equal(second.body.result.requestState.length, clean.body.result.requestState.length, 'the token carries the declared field only')
  const duplicates = await call(app, 'tools/call', { name: 'profile', requestState: second.body.result.requestState, inputResponses: { 'elicit-2': { action: 'accept', content: { teams: ['a', 'a'] } } } })
  t.same(duplicates.body.error, { code: -32602, message: 'inputResponses.elicit-2: content.teams must NOT have duplicate items (items ## 1 and 0 are identical)' })
  const nested = await call(app, 'tools/call', { name: 'profile', requestState: second.body.result.requestState, inputResponses: { 'elicit-2': { action: 'accept', content: { teams: [{ a: 1 }] } } } })
  t.equal(nested.body.error.code, -32602, 'only the spec\'s primitive values are accepted')
  const done = await call(app, 'tools/call', { name: 'profile', requestState: second.body.result.requestState, inputResponses: { 'elicit-2': { action: 'accept', content: { teams: ['b'], extra: 1 } } } })
  t.same(done.body.result.content, [{ type: 'text', text: 'ok' }])
  t.same(seen, [{ action: 'accept', content: { name: 'Ada' } }, { action: 'accept', content: { teams: ['b'] } }])
})

t.test('what only some callers may read is never marked public: resources, templates, lists', async (t) => {
  const hr = { headers: { 'x-role': 'hr' } }
  const app = await build(t, { cache: { resources: { ttlMs: 60_000, cacheScope: 'public' } } }, (app) => {
    app.mcp.resource({ uri: 'test://salaries', name: 'salaries', canAccess: (ctx) => ctx.request.headers['x-role'] === 'hr', cache: { ttlMs: 60_000, cacheScope: 'public' } }, () => 'secret')
      .resourceTemplate({ uriTemplate: 'test://payslip/{id}', name: 'payslip', canAccess: (ctx) => ctx.request.headers['x-role'] === 'hr' }, (_uri, v) => v.id)
      .resource({ uri: 'test://menu', name: 'menu' }, () => 'soup')
  })
  const salaries = await call(app, 'resources/read', { uri: 'test://salaries' }, hr)
  t.same([salaries.body.result.ttlMs, salaries.body.result.cacheScope], [60_000, 'private'], 'even when the resource asked for public')
  const payslip = await call(app, 'resources/read', { uri: 'test://payslip/7' }, hr)
  t.equal(payslip.body.result.cacheScope, 'private')
  t.equal((await call(app, 'resources/read', { uri: 'test://menu' })).body.result.cacheScope, 'public')
  t.equal((await call(app, 'resources/list')).body.result.cacheScope, 'private')
  t.equal((await call(app, 'resources/templates/list')).body.result.cacheScope, 'private')
})

t.test('a request that could not come back the same from a token is refused when the round would mint one', async (t) => {
  const schema = requestedSchema().boolean('ok')
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'confirm', inputSchema: { type: 'object' } }, async (_args, ctx) => (await ctx.elicit('Sure?', schema)).action)
    app.mcp.tool({ name: 'plain', inputSchema: { type: 'object' } }, (args) => JSON.stringify(args))
    app.mcp.tool({ name: 'model' }, async (_args, ctx) => {
      const said = await ctx.sample({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 5 })
      return `${said.model} ${(await ctx.elicit('Keep it?', schema)).action}`
    })
  })
  const raw = async (name: string, argumentsJson: string, extra = '') => {
    const payload = `{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"${name}"${argumentsJson === '' ? '' : `,"arguments":${argumentsJson}`}${extra},"_meta":${JSON.stringify(meta({ elicitation: {}, sampling: {} }))}}}`
    const response = await app.inject({ ...rpc('tools/call', { name }), payload })
    return response.json()
  }
  for (const [number, shown] of [['1e400', 'Infinity'], ['-1e400', '-Infinity']]) {
    t.same((await raw('confirm', `{"x":${number}}`)).error,
      { code: -32602, message: `tool confirm cannot carry this request in a requestState token: it holds the number ${shown}, which JSON cannot write` }, `${number} would come back as null`)
  }
  t.equal((await raw('plain', '{"x":1e400}')).result.content[0].text, '{"x":null}', 'a call that asks nothing is not concerned')
  t.match((await raw('confirm', '{"x":[1,[2,1e400]]}')).error.message, /it holds the number Infinity, which JSON cannot write/, 'inside arrays too')
  const nested = (depth: number) => `{"x":${'['.repeat(depth)}${']'.repeat(depth)}}`
  t.equal((await raw('confirm', nested(MAX_DEPTH - 2))).result.resultType, 'input_required', 'arrays nested to the limit (params, arguments, then 998) are carried')
  t.same((await raw('confirm', nested(MAX_DEPTH - 1))).error,
    { code: -32602, message: `params.arguments nests objects or arrays more than ${MAX_DEPTH} levels deep` }, 'one level more is refused, at the envelope')
  t.equal((await raw('confirm', nested(20_000))).error.code, -32602, '20,000 deep: refused with the same error, no stack overflow')
  t.equal((await raw('confirm', '{}', `,"odd-key":${'['.repeat(1000)}${']'.repeat(1000)}`)).error.message,
    'params["odd-key"] nests objects or arrays more than 1000 levels deep', 'a field whose name is no identifier is quoted')
  const first = await call(app, 'tools/call', { name: 'model' }, { capabilities: { elicitation: {}, sampling: {} } })
  const answer = '{"role":"assistant","content":{"type":"text","text":"hi","score":1e400},"model":"m"}'
  const retried = await raw('model', '', `,"requestState":"${first.body.result.requestState}","inputResponses":{"sample-1":${answer}}`)
  t.same(retried.error, { code: -32602, message: 'tool model cannot carry this request in a requestState token: an answer: it holds the number Infinity, which JSON cannot write' }, 'an answer is checked as well')
})
