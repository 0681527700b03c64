import t from 'tap'
import { McpError, requestedSchema } from '../../lib/index.js'
import { build, call, capturedLogs } from '../helpers.js'

/** Values handlers throw that are not errors, or errors that carry their own HTTP status. */
function thrownValues (): Array<[string, () => unknown, string]> {
  const upstream = Object.assign(new Error('GET http://10.0.0.7/internal/users/7 failed'), { statusCode: 404 })
  const unauthorized = Object.assign(new Error('upstream token rejected'), { statusCode: 401, status: 401 })
  return [
    ['null', () => null, 'null'],
    ['undefined', () => undefined, 'undefined'],
    ['a string', () => 'plain text', 'plain text'],
    ['an object without a prototype', () => Object.create(null), 'a value that does not print'],
    ['an upstream 404', () => upstream, 'GET http://10.0.0.7/internal/users/7 failed'],
    ['an upstream 401', () => unauthorized, 'upstream token rejected'],
  ]
}

t.test('whatever a tool throws is an isError result, HTTP 200, logged at error level with the tool', async (t) => {
  for (const [label, value, text] of thrownValues()) {
    const logs = capturedLogs()
    const app = await build(t, {}, (app) => {
      app.mcp.tool({ name: 'fails' }, () => { throw value() })
    }, logs.options)
    const { status, body, response } = await call(app, 'tools/call', { name: 'fails' })
    t.equal(status, 200, label)
    t.notOk(response.headers['www-authenticate'], `${label}: no challenge`)
    t.same(body.result.content, [{ type: 'text', text }], label)
    t.equal(body.result.isError, true, label)
    const logged = logs.lines.find((line) => line.msg === 'mocapi: tool fails threw')
    t.equal(logged?.level, 50, `${label}: logged at error level`)
    t.same(logged?.mcp, { method: 'tools/call', handler: 'tool fails' })
  }
})

t.test('whatever a prompt, resource or completer throws is -32603, HTTP 200, with the detail in the log', async (t) => {
  for (const [label, value, text] of thrownValues()) {
    const logs = capturedLogs()
    const app = await build(t, {}, (app) => {
      app.mcp.prompt({ name: 'p', arguments: [{ name: 'a', complete: () => { throw value() } }] }, () => { throw value() })
        .resource({ uri: 'test://r', name: 'r' }, () => { throw value() })
    }, logs.options)
    for (const [method, params] of [['prompts/get', { name: 'p' }], ['resources/read', { uri: 'test://r' }], ['completion/complete', { ref: { type: 'ref/prompt', name: 'p' }, argument: { name: 'a', value: '' } }]] as const) {
      const { status, body } = await call(app, method, params)
      t.equal(status, 200, `${method}: ${label}`)
      t.same(body.error, { code: -32603, message: text }, `${method}: ${label}`)
    }
    t.equal(logs.lines.filter((line) => line.level === 50 && /threw$/.test(line.msg)).length, 3, `${label}: three errors logged`)
  }
})

t.test('errors: "generic" tells clients a generic text, and keeps the detail in the log', async (t) => {
  const logs = capturedLogs()
  const app = await build(t, { errors: 'generic' }, (app) => {
    app.mcp.tool({ name: 'leaky' }, () => { throw new Error('password=hunter2 at db.internal') })
      .prompt({ name: 'leaky' }, () => { throw new Error('secret path /srv/x') })
      .tool({ name: 'deliberate' }, () => { throw new McpError(-32602, 'Bad input, on purpose') })
  }, logs.options)
  const tool = await call(app, 'tools/call', { name: 'leaky' })
  t.same(tool.body.result.content, [{ type: 'text', text: 'tool leaky failed; the server logged the details' }])
  const prompt = await call(app, 'prompts/get', { name: 'leaky' })
  t.same(prompt.body.error, { code: -32603, message: 'prompt leaky failed; the server logged the details' })
  t.match(logs.lines.find((line) => line.msg === 'mocapi: tool leaky threw')?.err?.message, 'password=hunter2')
  const deliberate = await call(app, 'tools/call', { name: 'deliberate' })
  t.same(deliberate.body.error, { code: -32602, message: 'Bad input, on purpose' }, "an McpError is the handler's own answer, sent as it is")
})

t.test('answers that would not fit in a token are one clear -32602, for tools, prompts and resources', async (t) => {
  const schema = requestedSchema().string('text')
  const app = await build(t, { requestState: { maxTokenLength: 2000 } }, (app) => {
    const ask = async (ctx: { elicit: Function }) => {
      const first = await ctx.elicit('Tell me a lot', schema, { key: 'first' })
      await ctx.elicit('And more', schema, { key: 'second' })
      return first.action
    }
    app.mcp.tool({ name: 'big' }, (_args, ctx) => ask(ctx))
      .prompt({ name: 'big' }, (_args, ctx) => ask(ctx))
      .resource({ uri: 'test://big', name: 'big' }, (_uri, ctx) => ask(ctx))
  })
  const answer = { first: { action: 'accept', content: { text: 'x'.repeat(3000) } } }
  for (const [method, params] of [['tools/call', { name: 'big' }], ['prompts/get', { name: 'big' }], ['resources/read', { uri: 'test://big' }]] as const) {
    const { status, body } = await call(app, method, { ...params, inputResponses: answer })
    t.equal(status, 200, method)
    t.equal(body.error?.code, -32602, method)
    t.match(body.error?.message, /asked for more input than a requestState token holds \(\d+ characters, requestState\.maxTokenLength is 2000\)/, method)
  }
})

t.test('the operator sees refused tokens, ledger mismatches and every call at the default level, never tokens or answers', async (t) => {
  const logs = capturedLogs()
  let message = 'Confirm EUR 12.00?'
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'pay' }, async (_args, ctx) => (await ctx.elicit(message, requestedSchema().string('pin'))).action)
  }, logs.options)
  const first = await call(app, 'tools/call', { name: 'pay' })
  const token = first.body.result.requestState as string
  await call(app, 'tools/call', { name: 'pay', requestState: token.slice(0, -2) + 'AA', inputResponses: { 'elicit-1': { action: 'accept', content: { pin: '4321' } } } })
  message = 'Confirm EUR 9,800.00?'
  await call(app, 'tools/call', { name: 'pay', requestState: token, inputResponses: { 'elicit-1': { action: 'accept', content: { pin: '4321' } } } })
  const refused = logs.lines.find((line) => line.msg === 'mocapi refused a requestState')
  t.equal(refused?.level, 40, 'a refused token is a warning')
  t.same(refused?.mcp, { method: 'tools/call', reason: 'authentication failed' })
  const mismatch = logs.lines.find((line) => /asked for other input/.test(line.msg))
  t.equal(mismatch?.level, 40)
  t.same(mismatch?.mcp, { method: 'tools/call', ordinal: 1, part: 'message' })
  const calls = logs.lines.filter((line) => line.msg === 'mcp call')
  t.same(calls.map((line) => [line.mcp.method, line.mcp.name, line.mcp.round, line.mcp.outcome, line.mcp.code]),
    [['tools/call', 'pay', 1, 'input_required', undefined], ['tools/call', 'pay', undefined, 'error', -32602], ['tools/call', 'pay', 2, 'error', -32602]])
  t.ok(calls.every((line) => typeof line.mcp.durationMs === 'number'))
  const everything = JSON.stringify(logs.lines)
  t.notOk(everything.includes(token), 'no token in the log')
  t.notOk(everything.includes('4321'), 'no answer in the log')
})
