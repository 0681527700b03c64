import t from 'tap'
import { requestedSchema } from '../../lib/index.js'
import { build, call } from '../helpers.js'

const everything = { sampling: {}, elicitation: {}, roots: { listChanged: true } }
const modelAnswer = { role: 'assistant', content: { type: 'text', text: 'Paris' }, model: 'test-model', stopReason: 'endTurn' }

async function withKinds (t: Parameters<typeof build>[0]) {
  return build(t, {}, (app) => {
    app.mcp.tool({ name: 'ask_model' }, async (_args, ctx) => {
      const answer = await ctx.sample({ messages: [{ role: 'user', content: { type: 'text', text: 'Capital of France?' } }], maxTokens: 100 }, { key: 'capital' })
      return `${answer.model}: ${JSON.stringify(answer.content)}`
    })
      .tool({ name: 'roots' }, async (_args, ctx) => (await ctx.listRoots()).map((root) => root.uri).join(','))
      .tool({ name: 'all' }, async (_args, ctx) => {
        const [name, model, roots] = await Promise.all([
          ctx.elicit('Name?', requestedSchema().string('name')),
          ctx.sample({ messages: [{ role: 'user', content: { type: 'text', text: 'Hi' } }], maxTokens: 5 }),
          ctx.listRoots(),
        ])
        return `${name.action} ${model.model} ${roots.length}`
      })
      .tool({ name: 'with_tools' }, async (_args, ctx) => (await ctx.sample({ messages: [], maxTokens: 5, tools: [{ name: 'x' }] })).model)
      .tool({ name: 'with_context' }, async (_args, ctx) => (await ctx.sample({ messages: [], maxTokens: 5, includeContext: 'thisServer' })).model)
      .tool({ name: 'bad_params' }, async (_args, ctx) => (await ctx.sample({ messages: [], maxTokens: 1.5 })).model)
  })
}

t.test('sampling rides the replay engine', async (t) => {
  const app = await withKinds(t)
  const first = await call(app, 'tools/call', { name: 'ask_model' }, { capabilities: everything })
  t.same(first.body.result.inputRequests, {
    capital: { method: 'sampling/createMessage', params: { messages: [{ role: 'user', content: { type: 'text', text: 'Capital of France?' } }], maxTokens: 100 } },
  })
  const done = await call(app, 'tools/call', { name: 'ask_model', requestState: first.body.result.requestState, inputResponses: { capital: modelAnswer } }, { capabilities: everything })
  t.same(done.body.result.content, [{ type: 'text', text: 'test-model: {"type":"text","text":"Paris"}' }])
})

t.test('roots ride the replay engine and come back as a list', async (t) => {
  const app = await withKinds(t)
  const first = await call(app, 'tools/call', { name: 'roots' }, { capabilities: everything })
  t.same(first.body.result.inputRequests, { 'roots-1': { method: 'roots/list', params: {} } })
  const done = await call(app, 'tools/call', { name: 'roots', requestState: first.body.result.requestState, inputResponses: { 'roots-1': { roots: [{ uri: 'file:///a', name: 'A' }, { uri: 'file:///b' }] } } }, { capabilities: everything })
  t.same(done.body.result.content, [{ type: 'text', text: 'file:///a,file:///b' }])
})

t.test('different kinds are asked in one round', async (t) => {
  const app = await withKinds(t)
  const first = await call(app, 'tools/call', { name: 'all' }, { capabilities: everything })
  t.same(Object.entries(first.body.result.inputRequests).map(([key, request]: [string, any]) => [key, request.method]), [
    ['elicit-1', 'elicitation/create'], ['sample-2', 'sampling/createMessage'], ['roots-3', 'roots/list'],
  ])
  const done = await call(app, 'tools/call', {
    name: 'all',
    requestState: first.body.result.requestState,
    inputResponses: { 'elicit-1': { action: 'decline' }, 'sample-2': modelAnswer, 'roots-3': { roots: [] } },
  }, { capabilities: everything })
  t.same(done.body.result.content, [{ type: 'text', text: 'decline test-model 0' }])
})

t.test('answers of the wrong shape are -32602', async (t) => {
  const app = await withKinds(t)
  const first = await call(app, 'tools/call', { name: 'ask_model' }, { capabilities: everything })
  const cases: Array<[unknown, string]> = [
    ['Paris', 'result must be an object'],
    [{ ...modelAnswer, role: 'system' }, 'result.role must be user or assistant'],
    [{ ...modelAnswer, content: 'Paris' }, 'result.content must be a content block ({ type: string, … }) or an array of them'],
    [{ ...modelAnswer, content: { text: 'Paris' } }, 'result.content must be a content block ({ type: string, … }) or an array of them'],
    [{ ...modelAnswer, content: [{ type: 'text', text: 'a' }, 'b'] }, 'result.content must be a content block ({ type: string, … }) or an array of them'],
    [{ ...modelAnswer, stopReason: 5 }, 'result.stopReason must be a string'],
    [{ ...modelAnswer, model: 1 }, 'result.model must be a string'],
  ]
  for (const [answer, message] of cases) {
    const { body } = await call(app, 'tools/call', { name: 'ask_model', requestState: first.body.result.requestState, inputResponses: { capital: answer } }, { capabilities: everything })
    t.same(body.error, { code: -32602, message: `inputResponses.capital: ${message}` })
  }
  for (const answer of [{ roots: [{ name: 'no uri' }] }, 'file:///a', { roots: [{ uri: 'file:///a', name: 5 }] }]) {
    const roots = await call(app, 'tools/call', { name: 'roots', inputResponses: { 'roots-1': answer } }, { capabilities: everything })
    t.same(roots.body.error, { code: -32602, message: 'inputResponses.roots-1: result.roots must be an array of { uri: string, name?: string }' })
  }
})

t.test('capabilities are checked per kind', async (t) => {
  const app = await withKinds(t)
  const cases: Array<[string, object, object]> = [
    ['ask_model', { elicitation: {} }, { sampling: {} }],
    ['roots', { sampling: {} }, { roots: {} }],
    ['with_tools', { sampling: {} }, { sampling: { tools: {} } }],
    ['with_context', { sampling: {} }, { sampling: { context: {} } }],
  ]
  for (const [name, capabilities, required] of cases) {
    const { status, body } = await call(app, 'tools/call', { name }, { capabilities })
    t.equal(status, 400, name)
    t.same(body.error.data, { requiredCapabilities: required }, name)
  }
  const tools = await call(app, 'tools/call', { name: 'with_tools' }, { capabilities: { sampling: { tools: {} } } })
  t.equal(tools.body.result.resultType, 'input_required')
  const context = await call(app, 'tools/call', { name: 'with_context' }, { capabilities: { sampling: { context: {} } } })
  t.equal(context.body.result.resultType, 'input_required')
})

t.test('sampling params are checked before asking', async (t) => {
  const app = await withKinds(t)
  const { body } = await call(app, 'tools/call', { name: 'bad_params' }, { capabilities: everything })
  t.equal(body.result.isError, true)
  t.same(body.result.content, [{ type: 'text', text: 'ctx.sample() needs { messages: [...], maxTokens: positive integer }' }])
})
