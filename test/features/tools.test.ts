import t from 'tap'
import { Type } from '@sinclair/typebox'
import Type1 from 'typebox'
import { build, call, MOCAPI_VERSION } from '../helpers.js'

t.test('tools/list keeps registration order, with ttlMs and cacheScope', async (t) => {
  const app = await build(t, { cache: { lists: { ttlMs: 1000, cacheScope: 'private' } } }, (app) => {
    app.mcp.tool({ name: 'zeta', description: 'last letter' }, () => 'z')
      .tool({ name: 'alpha', inputSchema: { type: 'object', properties: { a: { type: 'number' } } } }, () => 'a')
  })
  const { body } = await call(app, 'tools/list')
  t.same(body.result.tools.map((tool: { name: string }) => tool.name), ['zeta', 'alpha'])
  t.same(body.result.tools[0], { name: 'zeta', description: 'last letter', inputSchema: { type: 'object', additionalProperties: false } })
  t.equal(body.result.ttlMs, 1000)
  t.equal(body.result.cacheScope, 'private')
  t.notOk('nextCursor' in body.result)
  t.same(app.mcp.listTools().map((tool) => tool.name), ['zeta', 'alpha'])
})

t.test('tools/list pages with an opaque cursor', async (t) => {
  const app = await build(t, { pageSize: 2 }, (app) => {
    for (const name of ['a', 'b', 'c', 'd', 'e']) app.mcp.tool({ name }, () => name)
  })
  const names: string[] = []
  let cursor: string | undefined = ''
  let pages = 0
  while (cursor !== undefined) {
    const { body } = await call(app, 'tools/list', { cursor })
    names.push(...body.result.tools.map((tool: { name: string }) => tool.name))
    cursor = body.result.nextCursor
    pages++
    if (cursor !== undefined) t.notMatch(cursor, /^\d+$/, 'the cursor is not a bare offset')
  }
  t.same(names, ['a', 'b', 'c', 'd', 'e'])
  t.equal(pages, 3)
  for (const bad of ['nope', Buffer.from('o:99').toString('base64url'), Buffer.from('o:0').toString('base64url'), '%%%']) {
    const { status, body } = await call(app, 'tools/list', { cursor: bad })
    t.equal(status, 200)
    t.same(body.error, { code: -32602, message: 'Invalid cursor' })
  }
})

t.test('tools/call: a string becomes one text block', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'hello', inputSchema: { type: 'object', properties: { who: { type: 'string' } }, required: ['who'] } },
      async (args: { who: string }) => `Hello, ${args.who}!`)
  })
  const { body } = await call(app, 'tools/call', { name: 'hello', arguments: { who: 'Ada' } })
  t.same(body.result.content, [{ type: 'text', text: 'Hello, Ada!' }])
  t.equal(body.result.resultType, 'complete')
  t.notOk('isError' in body.result)
})

t.test('tools/call: invalid arguments are an isError result naming the field', async (t) => {
  const app = await build(t, {}, (app) => {
    app.after(() => app.mcp.tool({
      name: 'book',
      inputSchema: { type: 'object', properties: { to: { type: 'string' }, seats: { type: 'integer' } }, required: ['to'], additionalProperties: false },
    }, () => 'booked'))
  })
  const wrong = await call(app, 'tools/call', { name: 'book', arguments: { to: 'Lisbon', seats: 'two' } })
  t.same(wrong.body.result.content, [{ type: 'text', text: 'Invalid arguments: arguments.seats must be integer' }])
  t.equal(wrong.body.result.isError, true)
  const missing = await call(app, 'tools/call', { name: 'book' })
  t.match(missing.body.result.content[0].text, "arguments must have required property 'to'")
  const extra = await call(app, 'tools/call', { name: 'book', arguments: { to: 'Oslo', class: 'first' } })
  t.match(extra.body.result.content[0].text, "arguments must not have property 'class'")
})

t.test('tools/call: an unknown tool is -32602', async (t) => {
  const app = await build(t, {}, (app) => { app.after(() => app.mcp.tool({ name: 'known' }, () => 'x')) })
  const { status, body } = await call(app, 'tools/call', { name: 'unknown' })
  t.equal(status, 200)
  t.same(body.error, { code: -32602, message: 'Unknown tool: unknown' })
})

t.test('tools/call: a handler that throws is an isError result without a stack', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'boom' }, () => { throw new Error('the flight is full') })
      .tool({ name: 'reject' }, async () => { throw 'plain string' }) // eslint-disable-line no-throw-literal
  })
  const { status, body } = await call(app, 'tools/call', { name: 'boom' })
  t.equal(status, 200)
  t.same(body.result.content, [{ type: 'text', text: 'the flight is full' }])
  t.equal(body.result.isError, true)
  t.notMatch(JSON.stringify(body), /at .*\.ts/)
  const plain = await call(app, 'tools/call', { name: 'reject' })
  t.same(plain.body.result.content, [{ type: 'text', text: 'plain string' }])
})

t.test('tools/call: outputSchema makes structuredContent required, validated, and mirrored as text', async (t) => {
  const outputSchema = { type: 'object', properties: { temp: { type: 'number' } }, required: ['temp'] }
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'weather', outputSchema }, () => ({ temp: 21.5 }))
      .tool({ name: 'full', outputSchema }, () => ({ content: [{ type: 'text', text: 'warm' }], structuredContent: { temp: 30 } }))
      .tool({ name: 'wrong', outputSchema }, () => ({ temp: 'hot' }))
      .tool({ name: 'none', outputSchema }, () => ({ content: [{ type: 'text', text: 'no data' }] }))
      .tool({ name: 'failed', outputSchema }, () => ({ content: [{ type: 'text', text: 'sensor down' }], isError: true }))
  })
  const ok = await call(app, 'tools/call', { name: 'weather' })
  t.same(ok.body.result.structuredContent, { temp: 21.5 })
  t.same(ok.body.result.content, [{ type: 'text', text: '{"temp":21.5}' }])
  t.same((await call(app, 'tools/call', { name: 'full' })).body.result.structuredContent, { temp: 30 })
  const wrong = await call(app, 'tools/call', { name: 'wrong' })
  t.equal(wrong.body.result.isError, true)
  t.match(wrong.body.result.content[0].text, 'structuredContent.temp must be number')
  const none = await call(app, 'tools/call', { name: 'none' })
  t.match(none.body.result.content[0].text, 'returned no structuredContent')
  const failed = await call(app, 'tools/call', { name: 'failed' })
  t.same(failed.body.result.content, [{ type: 'text', text: 'sensor down' }])
})

t.test('TypeBox 0.x schemas register, validate with Ajv, and list without their symbol keys', async (t) => {
  const inputSchema = Type.Object({ to: Type.String(), seats: Type.Optional(Type.Integer({ minimum: 1 })) })
  const outputSchema = Type.Object({ booked: Type.Boolean() })
  t.ok(Object.getOwnPropertySymbols(inputSchema).length > 0, 'TypeBox marks its schemas with symbol keys')
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'book', inputSchema, outputSchema }, (args) => ({ booked: args.to === 'Lisbon' && args.seats !== 0 }))
  })
  const listed = (await call(app, 'tools/list')).body.result.tools[0]
  t.same(listed.inputSchema, JSON.parse(JSON.stringify(inputSchema)))
  t.same(listed.inputSchema.required, ['to'])
  const ok = await call(app, 'tools/call', { name: 'book', arguments: { to: 'Lisbon', seats: 2 } })
  t.same(ok.body.result.structuredContent, { booked: true })
  const wrong = await call(app, 'tools/call', { name: 'book', arguments: { to: 'Lisbon', seats: 0 } })
  t.same(wrong.body.result.content, [{ type: 'text', text: 'Invalid arguments: arguments.seats must be >= 1' }])
})

t.test('TypeBox 1.x schemas list without their hidden ~ keys', async (t) => {
  const inputSchema = Type1.Object({ to: Type1.String(), seats: Type1.Optional(Type1.Integer()) })
  const app = await build(t, {}, (app) => { app.mcp.tool({ name: 'book', inputSchema }, (args) => args.to) })
  const listed = (await call(app, 'tools/list')).body.result.tools[0]
  t.same(listed.inputSchema, { type: 'object', required: ['to'], properties: { to: { type: 'string' }, seats: { type: 'integer' } } })
  const ok = await call(app, 'tools/call', { name: 'book', arguments: { to: 'Lisbon' } })
  t.same(ok.body.result.content, [{ type: 'text', text: 'Lisbon' }])
})

t.test('tools/call: content arrays, other values and undefined', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'blocks' }, () => [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }])
      .tool({ name: 'number' }, () => 42)
      .tool({ name: 'nothing' }, () => undefined)
  })
  t.same((await call(app, 'tools/call', { name: 'blocks' })).body.result.content, [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }])
  t.same((await call(app, 'tools/call', { name: 'number' })).body.result.content, [{ type: 'text', text: '42' }])
  t.same((await call(app, 'tools/call', { name: 'nothing' })).body.result.content, [])
})

t.test('a result _meta from the handler is kept beside serverInfo', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'meta' }, () => ({ content: [], _meta: { 'example.com/trace': 'abc' } }))
  })
  const { body } = await call(app, 'tools/call', { name: 'meta' })
  t.same(body.result._meta, { 'example.com/trace': 'abc', 'io.modelcontextprotocol/serverInfo': { name: 'mocapi', version: MOCAPI_VERSION } })
})

t.test('tools can be removed at run time', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'a' }, () => 'a').tool({ name: 'b' }, () => 'b')
  })
  t.equal(app.mcp.removeTool('a'), true)
  t.equal(app.mcp.removeTool('a'), false)
  t.same((await call(app, 'tools/list')).body.result.tools.map((tool: { name: string }) => tool.name), ['b'])
  t.equal((await call(app, 'tools/call', { name: 'a' })).body.error.code, -32602)
  // A tool with an outputSchema releases both schemas, and can be registered again.
  const outputSchema = { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] } as const
  app.mcp.tool({ name: 'count', outputSchema }, () => ({ n: 1 }))
  t.equal(app.mcp.removeTool('count'), true)
  app.mcp.tool({ name: 'count', outputSchema }, () => ({ n: 2 }))
  t.same((await call(app, 'tools/call', { name: 'count' })).body.result.structuredContent, { n: 2 })
})

t.test('bad tool definitions throw at registration, naming the problem', async (t) => {
  const app = await build(t)
  const noop = () => 'x'
  t.throws(() => app.mcp.tool(null as never, noop), /definition must be an object/)
  t.throws(() => app.mcp.tool({ name: 'has space' }, noop), /tool name must be 1-128 characters without spaces or control characters, got "has space"/)
  t.throws(() => app.mcp.tool({ name: 'x'.repeat(129) }, noop), /tool name/)
  t.throws(() => app.mcp.tool({ name: 'a', colour: 'red' } as never, noop), /tool "a" has an unknown field "colour"/)
  t.throws(() => app.mcp.tool({ name: 'a' }, 'nope' as never), /tool "a" needs a handler function/)
  t.throws(() => app.mcp.tool({ name: 'a', inputSchema: { type: 'string' } }, noop), /tool "a" inputSchema must be an object schema/)
  t.throws(() => app.mcp.tool({ name: 'a', outputSchema: [] as never }, noop), /tool "a" outputSchema must be an object, got an array/)
  t.throws(() => app.mcp.tool({ name: 'a', inputSchema: { type: 'object', properties: { b: { type: 'nope' } } } }, noop), /tool "a" inputSchema is not a valid JSON Schema/)
  t.throws(() => app.mcp.tool({ name: 'a', annotations: 'read-only' as never }, noop), /tool "a" annotations must be an object, got "read-only"/)
  t.throws(() => app.mcp.tool({ name: 'a', annotations: { readOnlyHint: 'yes' as never } }, noop), /tool "a" annotations\.readOnlyHint must be true or false, got "yes"/)
  t.throws(() => app.mcp.tool({ name: 'a', annotations: { title: 5 as never } }, noop), /tool "a" annotations\.title must be a string, got 5/)
  app.mcp.tool({ name: 'a' }, noop)
  t.throws(() => app.mcp.tool({ name: 'a' }, noop), /tool "a" is already registered/)
})

t.test('annotations are listed as given, the hints directories ask for included', async (t) => {
  const annotations = { title: 'Delete a file', readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false, vendorHint: 'x' }
  const app = await build(t, {}, (app) => { app.mcp.tool({ name: 'delete_file', annotations }, () => 'deleted') })
  const { body } = await call(app, 'tools/list')
  t.same(body.result.tools[0].annotations, annotations)
})
