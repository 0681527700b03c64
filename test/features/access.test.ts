import t from 'tap'
import { build, call, capturedLogs } from '../helpers.js'

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

/** A promise and its resolve (Promise.withResolvers is Node 22). */
function deferred () {
  let release!: () => void
  const promise = new Promise<void>((resolve) => { release = resolve })
  return { promise, resolve: () => release() }
}

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

t.test('a request naming nothing waits for one access check of its kind, as one naming a hidden item does', async (t) => {
  // Every check blocks on the gate of the case under way, so the test sees which ran before the answer.
  let gate = deferred()
  let entered = deferred()
  const checks: string[] = []
  const check = (kind: string) => async () => {
    checks.push(kind)
    entered.resolve()
    await gate.promise
    return false
  }
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'open' }, () => 'open')
      .tool({ name: 'vault', canAccess: check('tool') }, () => 'never')
      .tool({ name: 'vault_2', canAccess: check('second tool') }, () => 'never')
      .prompt({ name: 'vault', canAccess: check('prompt'), arguments: [{ name: 'a', complete: ['x'] }] }, () => 'never')
      .resource({ uri: 'test://vault', name: 'vault', canAccess: check('resource') }, () => 'never')
      .resourceTemplate({ uriTemplate: 'test://vault/{id}', name: 'vault_t', canAccess: check('template'), complete: { id: ['1'] } }, () => 'never')
  })
  const complete = (ref: object): Record<string, unknown> => ({ ref, argument: { name: 'a', value: '' } })
  const cases: Array<[string, string, Record<string, unknown>, Record<string, unknown>, string[]]> = [
    ['tools/call', 'tools/call', { name: 'vault' }, { name: 'nothing' }, ['tool']],
    ['prompts/get', 'prompts/get', { name: 'vault' }, { name: 'nothing' }, ['prompt']],
    ['a prompt\'s completion', 'completion/complete', complete({ type: 'ref/prompt', name: 'vault' }), complete({ type: 'ref/prompt', name: 'nothing' }), ['prompt']],
    ['a template\'s completion', 'completion/complete', complete({ type: 'ref/resource', uri: 'test://vault/{id}' }), complete({ type: 'ref/resource', uri: 'test://nothing/{id}' }), ['template']],
    ['a fixed resource', 'resources/read', { uri: 'test://vault' }, { uri: 'test://nothing' }, ['resource', 'template']],
    ['a template', 'resources/read', { uri: 'test://vault/7' }, { uri: 'test://nothing/7' }, ['resource', 'template']],
  ]
  for (const [label, method, hidden, absent, kinds] of cases) {
    const answers = []
    for (const [which, params] of [['hidden', hidden], ['absent', absent]] as const) {
      gate = deferred()
      entered = deferred()
      checks.length = 0
      let answered = false
      const reply = call(app, method, params).then((reply) => { answered = true; return reply })
      t.equal(await Promise.race([entered.promise.then(() => 'a check ran'), reply.then(() => 'answered')]), 'a check ran', `${label}, ${which}: a check runs first`)
      await new Promise((resolve) => setImmediate(resolve))
      t.notOk(answered, `${label}, ${which}: the answer waits for it`)
      gate.resolve()
      const { status, body } = await reply
      t.same(checks, kinds, `${label}, ${which}: one check of each kind it looked in`)
      answers.push([status, body.error.code, body.error.message.replace(/vault|nothing/g, '…')])
    }
    t.same(answers[0], answers[1], `${label}: hidden and absent are answered alike`)
  }
  checks.length = 0
  t.same((await call(app, 'tools/call', { name: 'open' })).body.result.content, [{ type: 'text', text: 'open' }])
  t.same(checks, [], 'a tool without a check runs none')
})

t.test('the check a request naming nothing waits for is not logged when it throws: the warning is for the item it guards', async (t) => {
  const logs = capturedLogs('warn')
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'broken', canAccess: async () => { throw new Error('directory down') } }, () => 'never')
  }, logs.options)
  const absent = await call(app, 'tools/call', { name: 'nothing' })
  t.same(absent.body.error, { code: -32602, message: 'Unknown tool: nothing' })
  t.same(logs.lines, [], 'nothing logged for a tool no one asked for')
  const hidden = await call(app, 'tools/call', { name: 'broken' })
  t.same(hidden.body.error, { code: -32602, message: 'Unknown tool: broken' })
  t.match(logs.lines, [{ level: 40, msg: 'mocapi canAccess threw; the item stays hidden' }])
})
