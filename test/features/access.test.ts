import t from 'tap'
import { build, call } from '../helpers.js'

/** A server whose items are visible by the x-role header. */
async function guarded (t: Parameters<typeof build>[0]) {
  const role = (ctx: { request: { headers: Record<string, unknown> } }) => ctx.request.headers['x-role']
  return build(t, {}, (app) => {
    app.mcp.tool({ name: 'public' }, () => 'public')
      .tool({ name: 'admin', canAccess: (ctx) => role(ctx) === 'admin' }, () => 'admin only')
      .tool({ name: 'async_admin', canAccess: async (ctx) => role(ctx) === 'admin' }, () => 'admin only')
      .tool({ name: 'broken', canAccess: () => { throw new Error('directory down') } }, () => 'never')
      .prompt({ name: 'admin_prompt', canAccess: (ctx) => role(ctx) === 'admin', arguments: [{ name: 'a', complete: ['x'] }] }, () => 'p')
      .resource({ uri: 'test://admin', name: 'admin', canAccess: (ctx) => role(ctx) === 'admin' }, () => 'secret')
      .resourceTemplate({ uriTemplate: 'test://admin/{id}', name: 'admin_t', canAccess: (ctx) => role(ctx) === 'admin', complete: { id: ['1'] } }, (_u, v) => v.id)
      .resourceTemplate({ uriTemplate: 'test://{any}', name: 'fallback' }, (_u, v) => `fallback ${v.any}`)
  })
}

const admin = { headers: { 'x-role': 'admin' } }

t.test('lists show only what the caller may see, and are private', async (t) => {
  const app = await guarded(t)
  const anon = await call(app, 'tools/list')
  t.same(anon.body.result.tools.map((tool: { name: string }) => tool.name), ['public'])
  t.equal(anon.body.result.cacheScope, 'private')
  t.notOk('canAccess' in anon.body.result.tools[0])
  const boss = await call(app, 'tools/list', {}, admin)
  t.same(boss.body.result.tools.map((tool: { name: string }) => tool.name), ['public', 'admin', 'async_admin'])
  t.same((await call(app, 'prompts/list')).body.result.prompts, [])
  t.same((await call(app, 'prompts/list', {}, admin)).body.result.prompts.map((p: { name: string }) => p.name), ['admin_prompt'])
  t.same((await call(app, 'resources/list')).body.result.resources, [])
  t.same((await call(app, 'resources/templates/list')).body.result.resourceTemplates.map((r: { name: string }) => r.name), ['fallback'])
  t.equal((await call(app, 'resources/templates/list', {}, admin)).body.result.resourceTemplates.length, 2)
})

t.test('a hidden item is answered exactly like an absent one', async (t) => {
  const app = await guarded(t)
  const hidden = await call(app, 'tools/call', { name: 'admin' }, { id: 1 })
  const absent = await call(app, 'tools/call', { name: 'nothing' }, { id: 1, headers: { 'mcp-name': 'nothing' } })
  t.same(hidden.body.error, { code: -32602, message: 'Unknown tool: admin' })
  t.equal(hidden.status, absent.status)
  t.same((await call(app, 'tools/call', { name: 'admin' }, admin)).body.result.content, [{ type: 'text', text: 'admin only' }])
  t.same((await call(app, 'prompts/get', { name: 'admin_prompt' })).body.error, { code: -32602, message: 'Unknown prompt: admin_prompt' })
  // The hidden fixed resource is passed over, as an absent one is: the template that covers its URI serves it.
  t.same((await call(app, 'resources/read', { uri: 'test://admin' })).body.result.contents[0].text, 'fallback admin')
  t.same((await call(app, 'resources/read', { uri: 'test://absent' })).body.result.contents[0].text, 'fallback absent')
  t.same((await call(app, 'resources/read', { uri: 'test://admin' }, admin)).body.result.contents[0].text, 'secret')
  t.same((await call(app, 'resources/read', { uri: 'test://admin/7' })).body.error.message, 'Resource not found', 'a hidden template matches nothing')
  t.same((await call(app, 'resources/read', { uri: 'test://other' })).body.result.contents[0].text, 'fallback other')
  t.same((await call(app, 'resources/read', { uri: 'test://admin/7' }, admin)).body.result.contents[0].text, '7')
  t.same((await call(app, 'completion/complete', { ref: { type: 'ref/prompt', name: 'admin_prompt' }, argument: { name: 'a', value: '' } })).body.error.message, 'Unknown prompt: admin_prompt')
  t.same((await call(app, 'completion/complete', { ref: { type: 'ref/resource', uri: 'test://admin/{id}' }, argument: { name: 'id', value: '' } })).body.error.message, 'Unknown resource template: test://admin/{id}')
  t.same((await call(app, 'completion/complete', { ref: { type: 'ref/resource', uri: 'test://admin/{id}' }, argument: { name: 'id', value: '' } }, admin)).body.result.completion.values, ['1'])
})

t.test('a check that throws fails closed', async (t) => {
  const app = await guarded(t)
  t.same((await call(app, 'tools/call', { name: 'broken' }, admin)).body.error, { code: -32602, message: 'Unknown tool: broken' })
  t.notOk((await call(app, 'tools/list', {}, admin)).body.result.tools.some((tool: { name: string }) => tool.name === 'broken'))
})

t.test('removing a guarded item keeps the others guarded', async (t) => {
  const app = await guarded(t)
  app.mcp.removeTool('admin')
  app.mcp.removeTool('async_admin')
  t.equal((await call(app, 'tools/list')).body.result.cacheScope, 'private', 'broken still has a check')
  app.mcp.removeTool('broken')
  t.equal((await call(app, 'tools/list')).body.result.cacheScope, 'public')
})

t.test('canAccess must be a function', async (t) => {
  const app = await build(t)
  t.throws(() => app.mcp.tool({ name: 'x', canAccess: true as never }, () => 'x'), /tool "x" canAccess must be a function/)
})
