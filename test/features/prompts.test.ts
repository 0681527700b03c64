import t from 'tap'
import { requestedSchema } from '../../lib/index.js'
import { build, call } from '../helpers.js'

async function withPrompts (t: Parameters<typeof build>[0], options = {}) {
  return build(t, options, (app) => {
    app.mcp.prompt({
      name: 'greet',
      description: 'Greets someone',
      arguments: [{ name: 'who', description: 'Who to greet', required: true, complete: ['Ada', 'Alan'] }, { name: 'tone' }],
    }, (args) => `Hello, ${args.who}${args.tone === undefined ? '' : ` (${args.tone})`}!`)
      .prompt({ name: 'messages' }, () => [
        { role: 'user', content: { type: 'text', text: 'Hi' } },
        { role: 'assistant', content: { type: 'text', text: 'Hello' } },
      ])
      .prompt({ name: 'full' }, () => ({ description: 'A whole result', messages: [{ role: 'user', content: { type: 'text', text: 'Whole' } }] }))
      .prompt({ name: 'broken' }, () => 42 as never)
      .prompt({ name: 'ask' }, async (_args, ctx) => {
        const answer = await ctx.elicit('What context?', requestedSchema().string('context'), { key: 'user_context' })
        return answer.action === 'accept' ? `Context: ${answer.content.context}` : 'No context'
      })
  })
}

t.test('prompts/list shows definitions without local fields', async (t) => {
  const app = await withPrompts(t)
  const { body } = await call(app, 'prompts/list')
  t.same(body.result.prompts[0], {
    name: 'greet',
    description: 'Greets someone',
    arguments: [{ name: 'who', description: 'Who to greet', required: true }, { name: 'tone' }],
  })
  t.same(body.result.prompts.map((p: { name: string }) => p.name), ['greet', 'messages', 'full', 'broken', 'ask'])
  t.equal(body.result.ttlMs, 300000)
  t.same(app.mcp.listPrompts().map((p) => p.name), ['greet', 'messages', 'full', 'broken', 'ask'])
})

t.test('prompts/get: strings, messages and whole results', async (t) => {
  const app = await withPrompts(t)
  const greet = await call(app, 'prompts/get', { name: 'greet', arguments: { who: 'Ada', tone: 'warm' } })
  t.same(greet.body.result.messages, [{ role: 'user', content: { type: 'text', text: 'Hello, Ada (warm)!' } }])
  t.equal(greet.body.result.resultType, 'complete')
  t.same((await call(app, 'prompts/get', { name: 'messages' })).body.result.messages.map((m: { role: string }) => m.role), ['user', 'assistant'])
  const full = await call(app, 'prompts/get', { name: 'full' })
  t.equal(full.body.result.description, 'A whole result')
})

t.test('prompts/get validates its arguments', async (t) => {
  const app = await withPrompts(t)
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ name: 'nope' }, 'Unknown prompt: nope'],
    [{ name: 'greet' }, 'Missing required argument "who" for prompt greet'],
    [{ name: 'greet', arguments: { who: 3 } }, 'Argument "who" of prompt greet must be a string'],
    [{ name: 'greet', arguments: { who: 'Ada', mood: 'x' } }, 'Unknown argument "mood" for prompt greet'],
  ]
  for (const [params, message] of cases) {
    const { body } = await call(app, 'prompts/get', params)
    t.same(body.error, { code: -32602, message })
  }
})

t.test('a prompt handler returning something else is an internal error, in-band', async (t) => {
  const app = await withPrompts(t)
  const { status, body } = await call(app, 'prompts/get', { name: 'broken' })
  t.equal(status, 200)
  t.same(body.error, { code: -32603, message: 'prompt broken returned neither a string, messages, nor a GetPromptResult' })
})

t.test('prompts/get elicits through the replay engine', async (t) => {
  const app = await withPrompts(t)
  const first = await call(app, 'prompts/get', { name: 'ask' })
  t.equal(first.body.result.resultType, 'input_required')
  t.same(Object.keys(first.body.result.inputRequests), ['user_context'])
  const done = await call(app, 'prompts/get', { name: 'ask', requestState: first.body.result.requestState, inputResponses: { user_context: { action: 'accept', content: { context: 'travel' } } } })
  t.same(done.body.result.messages, [{ role: 'user', content: { type: 'text', text: 'Context: travel' } }])
})

t.test('prompts can be removed, and prompts/* is -32601 with none', async (t) => {
  const app = await build(t, {}, (app) => { app.mcp.prompt({ name: 'only' }, () => 'x') })
  t.same((await call(app, 'server/discover')).body.result.capabilities, { logging: {}, prompts: { listChanged: true }, completions: {} })
  t.equal(app.mcp.removePrompt('only'), true)
  t.equal(app.mcp.removePrompt('only'), false)
  const { status, body } = await call(app, 'prompts/list')
  t.equal(status, 404)
  t.equal(body.error.code, -32601)
})

t.test('bad prompt definitions throw at registration', async (t) => {
  const app = await build(t)
  const noop = () => 'x'
  t.throws(() => app.mcp.prompt(null as never, noop), /prompt definition must be an object/)
  t.throws(() => app.mcp.prompt({ name: '' }, noop), /prompt name must be a non-empty string/)
  t.throws(() => app.mcp.prompt({ name: 'p', colour: 1 } as never, noop), /prompt "p" has an unknown field "colour"/)
  t.throws(() => app.mcp.prompt({ name: 'p' }, null as never), /prompt "p" needs a handler function/)
  t.throws(() => app.mcp.prompt({ name: 'p', arguments: {} as never }, noop), /prompt "p" arguments must be an array/)
  t.throws(() => app.mcp.prompt({ name: 'p', arguments: [{ name: '' }] }, noop), /prompt "p" arguments\[0\] needs a non-empty name/)
  t.throws(() => app.mcp.prompt({ name: 'p', arguments: [{ name: 'a', kind: 1 } as never] }, noop), /arguments\[0\] has an unknown field "kind"/)
  t.throws(() => app.mcp.prompt({ name: 'p', arguments: [{ name: 'a' }, { name: 'a' }] }, noop), /arguments\[1\] repeats the argument "a"/)
  t.throws(() => app.mcp.prompt({ name: 'p', arguments: [{ name: 'a', complete: 'x' as never }] }, noop), /arguments\[0\].complete must be a function or an array of strings/)
  app.mcp.prompt({ name: 'p' }, noop)
  t.throws(() => app.mcp.prompt({ name: 'p' }, noop), /prompt "p" is already registered/)
})
