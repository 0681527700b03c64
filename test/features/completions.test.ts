import t from 'tap'
import { build, call } from '../helpers.js'

async function withCompleters (t: Parameters<typeof build>[0]) {
  return build(t, {}, (app) => {
    app.mcp.prompt({
      name: 'trip',
      arguments: [
        { name: 'city', complete: ['Lisbon', 'London', 'Porto'] },
        { name: 'hotel', complete: (value, context) => [`${context.arguments.city ?? 'any'} ${value} Inn`] },
        { name: 'many', complete: () => Array.from({ length: 150 }, (_, i) => `v${i}`) },
        { name: 'bad', complete: () => [1] as never },
        { name: 'plain' },
      ],
    }, () => 'x')
    app.mcp.resourceTemplate({ uriTemplate: 'users://{id}/profile', name: 'profile', complete: { id: ['alice', 'bob'] } }, () => 'p')
  })
}

const ref = { type: 'ref/prompt', name: 'trip' }

t.test('list completers filter by prefix, case-insensitively', async (t) => {
  const app = await withCompleters(t)
  const { body } = await call(app, 'completion/complete', { ref, argument: { name: 'city', value: 'l' } })
  t.same(body.result.completion, { values: ['Lisbon', 'London'], total: 2, hasMore: false })
  t.equal(body.result.resultType, 'complete')
})

t.test('function completers see the other arguments', async (t) => {
  const app = await withCompleters(t)
  const { body } = await call(app, 'completion/complete', { ref, argument: { name: 'hotel', value: 'Grand' }, context: { arguments: { city: 'Porto' } } })
  t.same(body.result.completion.values, ['Porto Grand Inn'])
  const none = await call(app, 'completion/complete', { ref, argument: { name: 'hotel', value: 'Grand' } })
  t.same(none.body.result.completion.values, ['any Grand Inn'])
})

t.test('at most 100 values, with total and hasMore', async (t) => {
  const app = await withCompleters(t)
  const { body } = await call(app, 'completion/complete', { ref, argument: { name: 'many', value: '' } })
  t.equal(body.result.completion.values.length, 100)
  t.equal(body.result.completion.total, 150)
  t.equal(body.result.completion.hasMore, true)
})

t.test('an argument without a completer completes to nothing', async (t) => {
  const app = await withCompleters(t)
  const { body } = await call(app, 'completion/complete', { ref, argument: { name: 'plain', value: 'x' } })
  t.same(body.result.completion, { values: [], total: 0, hasMore: false })
})

t.test('template variables complete too', async (t) => {
  const app = await withCompleters(t)
  const { body } = await call(app, 'completion/complete', { ref: { type: 'ref/resource', uri: 'users://{id}/profile' }, argument: { name: 'id', value: 'a' } })
  t.same(body.result.completion.values, ['alice'])
})

t.test('bad completion requests are -32602', async (t) => {
  const app = await withCompleters(t)
  const cases: Array<[Record<string, unknown>, string]> = [
    [{ ref: { type: 'ref/prompt', name: 'nope' }, argument: { name: 'a', value: '' } }, 'Unknown prompt: nope'],
    [{ ref: { type: 'ref/resource', uri: 'x://{y}' }, argument: { name: 'y', value: '' } }, 'Unknown resource template: x://{y}'],
    [{ ref: { type: 'ref/tool', name: 'x' }, argument: { name: 'a', value: '' } }, 'params.ref must be { type: "ref/prompt", name } or { type: "ref/resource", uri }'],
    [{ ref, argument: { name: 'city' } }, 'params.argument must be { name: string, value: string }'],
    [{ ref, argument: { name: 'city', value: '' }, context: { arguments: { a: 1 } } }, 'params.context.arguments must be an object of strings'],
    [{ ref, argument: { name: 'city', value: '' }, context: { arguments: [] } }, 'params.context.arguments must be an object of strings'],
  ]
  for (const [params, message] of cases) {
    const { body } = await call(app, 'completion/complete', params)
    t.same(body.error, { code: -32602, message })
  }
})

t.test('a completer that returns non-strings is an internal error, in-band', async (t) => {
  const app = await withCompleters(t)
  const { status, body } = await call(app, 'completion/complete', { ref, argument: { name: 'bad', value: '' } })
  t.equal(status, 200)
  t.equal(body.error.code, -32603)
})

t.test('completion/complete is -32601 without prompts or templates', async (t) => {
  const app = await build(t, {}, (app) => { app.mcp.resource({ uri: 'file:///a', name: 'a' }, () => 'a') })
  const { status } = await call(app, 'completion/complete', { ref, argument: { name: 'city', value: '' } })
  t.equal(status, 404)
})
