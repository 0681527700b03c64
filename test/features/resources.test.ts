import t from 'tap'
import { requestedSchema } from '../../lib/index.js'
import { build, call, MOCAPI_VERSION } from '../helpers.js'

async function withResources (t: Parameters<typeof build>[0], options = {}) {
  return build(t, options, (app) => {
    app.mcp.resource({ uri: 'test://text', name: 'text', description: 'Some text', mimeType: 'text/plain' }, () => 'hello')
      .resource({ uri: 'test://bytes', name: 'bytes', mimeType: 'image/png', cache: { ttlMs: 5, cacheScope: 'private' } }, () => new Uint8Array([1, 2, 3]))
      .resource({ uri: 'test://many', name: 'many' }, () => ({ contents: [{ text: 'a' }, { uri: 'test://many#2', blob: 'AAAA', mimeType: 'x/y' }] }))
      .resource({ uri: 'test://array', name: 'array' }, () => [{ text: 'one' }, 'two'] as never)
      .resource({ uri: 'test://item', name: 'item', mimeType: 'text/markdown' }, () => ({ text: '# title', mimeType: 'text/x-markdown' }))
      .resource({ uri: 'test://bad', name: 'bad' }, () => ({ nothing: true }) as never)
      .resource({ uri: 'test://secret', name: 'secret' }, async (_uri, ctx) => {
        const answer = await ctx.elicit('Unlock?', requestedSchema().boolean('unlock'))
        return answer.action === 'accept' && answer.content.unlock ? 'the secret' : 'locked'
      })
      .resourceTemplate({ uriTemplate: 'users://{id}/posts/{post}', name: 'post', mimeType: 'application/json' },
        (uri, vars) => vars.id === 'ghost' ? undefined : JSON.stringify({ uri, ...vars }))
  })
}

t.test('resources/list and resources/templates/list, without local fields', async (t) => {
  const app = await withResources(t)
  const list = await call(app, 'resources/list')
  t.same(list.body.result.resources[0], { uri: 'test://text', name: 'text', description: 'Some text', mimeType: 'text/plain' })
  t.same(list.body.result.resources[1], { uri: 'test://bytes', name: 'bytes', mimeType: 'image/png' })
  t.ok(Number.isInteger(list.body.result.ttlMs))
  const templates = await call(app, 'resources/templates/list')
  t.same(templates.body.result.resourceTemplates, [{ uriTemplate: 'users://{id}/posts/{post}', name: 'post', mimeType: 'application/json' }])
  t.equal(templates.body.result.cacheScope, 'public')
  t.equal(app.mcp.listResources().length, 7)
  t.equal(app.mcp.listResourceTemplates().length, 1)
})

t.test('resources/read: text, blob, several contents, caching hints', async (t) => {
  const app = await withResources(t, { cache: { resources: { ttlMs: 1234, cacheScope: 'public' } } })
  const text = await call(app, 'resources/read', { uri: 'test://text' })
  t.same(text.body.result, {
    resultType: 'complete',
    contents: [{ uri: 'test://text', mimeType: 'text/plain', text: 'hello' }],
    ttlMs: 1234,
    cacheScope: 'public',
    _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'mocapi', version: MOCAPI_VERSION } },
  })
  const bytes = await call(app, 'resources/read', { uri: 'test://bytes' })
  t.same(bytes.body.result.contents, [{ uri: 'test://bytes', mimeType: 'image/png', blob: 'AQID' }])
  t.equal(bytes.body.result.ttlMs, 5)
  t.equal(bytes.body.result.cacheScope, 'private')
  const many = await call(app, 'resources/read', { uri: 'test://many' })
  t.same(many.body.result.contents, [{ uri: 'test://many', text: 'a' }, { uri: 'test://many#2', blob: 'AAAA', mimeType: 'x/y' }])
  const array = await call(app, 'resources/read', { uri: 'test://array' })
  t.same(array.body.result.contents, [{ uri: 'test://array', text: 'one' }, { uri: 'test://array', text: 'two' }])
  const item = await call(app, 'resources/read', { uri: 'test://item' })
  t.same(item.body.result.contents, [{ uri: 'test://item', mimeType: 'text/x-markdown', text: '# title' }])
})

t.test('templates match level-1 variables, percent-decoded', async (t) => {
  const app = await withResources(t)
  const { body } = await call(app, 'resources/read', { uri: 'users://ada%20l/posts/42' })
  t.same(JSON.parse(body.result.contents[0].text), { uri: 'users://ada%20l/posts/42', id: 'ada l', post: '42' })
  t.equal(body.result.contents[0].mimeType, 'application/json')
})

t.test('not found is -32602 with the uri, never empty contents', async (t) => {
  const app = await withResources(t)
  for (const uri of ['test://nope', 'users://ghost/posts/1', 'users://a/b/posts/1']) {
    const { status, body } = await call(app, 'resources/read', { uri })
    t.equal(status, 200)
    t.same(body.error, { code: -32602, message: 'Resource not found', data: { uri } })
  }
})

t.test('a handler returning contents without text or blob is an internal error, in-band', async (t) => {
  const app = await withResources(t)
  const { status, body } = await call(app, 'resources/read', { uri: 'test://bad' })
  t.equal(status, 200)
  t.equal(body.error.code, -32603)
})

t.test('resources/read elicits through the replay engine', async (t) => {
  const app = await withResources(t)
  const first = await call(app, 'resources/read', { uri: 'test://secret' })
  t.equal(first.body.result.resultType, 'input_required')
  t.notOk('ttlMs' in first.body.result, 'an input_required result carries no caching hints')
  const done = await call(app, 'resources/read', { uri: 'test://secret', requestState: first.body.result.requestState, inputResponses: { 'elicit-1': { action: 'accept', content: { unlock: true } } } })
  t.same(done.body.result.contents, [{ uri: 'test://secret', text: 'the secret' }])
  const other = await call(app, 'resources/read', { uri: 'test://text', requestState: first.body.result.requestState })
  t.equal(other.body.error.message, 'Invalid or expired requestState', 'a token is bound to its uri')
})

t.test('removal, and resources/* is -32601 with none', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.resource({ uri: 'test://a', name: 'a' }, () => 'a').resourceTemplate({ uriTemplate: 'test://t/{x}', name: 't' }, () => 't')
  })
  t.same((await call(app, 'server/discover')).body.result.capabilities, { logging: {}, resources: { listChanged: true, subscribe: true }, completions: {} })
  t.equal(app.mcp.removeResource('test://a'), true)
  t.equal(app.mcp.removeResource('test://a'), false)
  t.equal(app.mcp.removeResourceTemplate('test://t/{x}'), true)
  t.equal(app.mcp.removeResourceTemplate('test://t/{x}'), false)
  t.equal((await call(app, 'resources/list')).status, 404)
})

t.test('bad resource definitions throw at registration', async (t) => {
  const app = await build(t)
  const noop = () => 'x'
  t.throws(() => app.mcp.resource(null as never, noop), /resource definition must be an object/)
  t.throws(() => app.mcp.resource({ uri: 'not a uri', name: 'x' }, noop), /resource uri must be an absolute URI of at most 8192 characters, got "not a uri"/)
  t.throws(() => app.mcp.resource({ uri: 'test://x', name: '' }, noop), /resource "test:\/\/x" name must be a non-empty string, got ""/)
  t.throws(() => app.mcp.resource({ uri: 'test://x', name: 'x', size: 1, extra: 1 } as never, noop), /has an unknown field "extra"/)
  t.throws(() => app.mcp.resource({ uri: 'test://x', name: 'x' }, 1 as never), /needs a handler function/)
  t.throws(() => app.mcp.resource({ uri: 'test://x', name: 'x', cache: { ttlMs: -1, cacheScope: 'public' } }, noop), /cache.ttlMs must be a non-negative integer, got -1/)
  t.throws(() => app.mcp.resource({ uri: 'test://x', name: 'x', cache: 'short' as never }, noop), /cache must be/)
  app.mcp.resource({ uri: 'test://x', name: 'x' }, noop)
  t.throws(() => app.mcp.resource({ uri: 'test://x', name: 'x' }, noop), /resource "test:\/\/x" is already registered/)

  t.throws(() => app.mcp.resourceTemplate(null as never, noop), /resource template definition must be an object/)
  t.throws(() => app.mcp.resourceTemplate({ uriTemplate: '', name: 'x' }, noop), /uriTemplate must be a non-empty string/)
  t.throws(() => app.mcp.resourceTemplate({ uriTemplate: 't://{a}', name: '' }, noop), /name must be a non-empty string/)
  t.throws(() => app.mcp.resourceTemplate({ uriTemplate: 't://{a}', name: 'x', more: 1 } as never, noop), /unknown field "more"/)
  t.throws(() => app.mcp.resourceTemplate({ uriTemplate: 't://{a}', name: 'x' }, null as never), /needs a handler function/)
  t.throws(() => app.mcp.resourceTemplate({ uriTemplate: 't://{+a}', name: 'x' }, noop), /only RFC 6570 level-1 expressions/)
  t.throws(() => app.mcp.resourceTemplate({ uriTemplate: 't://{a}/{a}', name: 'x' }, noop), /repeats the variable "a"/)
  t.throws(() => app.mcp.resourceTemplate({ uriTemplate: 't://{a', name: 'x' }, noop), /unbalanced brace/)
  t.throws(() => app.mcp.resourceTemplate({ uriTemplate: 't://{a}', name: 'x', complete: [] as never }, noop), /complete must be an object, got an array/)
  t.throws(() => app.mcp.resourceTemplate({ uriTemplate: 't://{a}', name: 'x', complete: { b: ['1'] } }, noop), /complete names "b", which is not one of its variables/)
  app.mcp.resourceTemplate({ uriTemplate: 't://{a}', name: 'x' }, noop)
  t.throws(() => app.mcp.resourceTemplate({ uriTemplate: 't://{a}', name: 'x' }, noop), /is already registered/)
})
