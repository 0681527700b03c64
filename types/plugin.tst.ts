import Fastify from 'fastify'
import { expect, test } from 'tstyche'
import mocapi, {
  mocapiPlugin, requestedSchema, type McpContext, InvalidRequestStateError, ExpiredRequestStateError,
  ElicitationLedgerMismatchError, McpError, type MocapiOptions, type McpRegistry, type ElicitAnswer, type Unavailable,
} from '../lib/index.js'

test('the default export is the named plugin', () => {
  expect(mocapi).type.toBe(mocapiPlugin)
})

test('options are typed', () => {
  expect<MocapiOptions>().type.toBeAssignableFrom({
    path: '/mcp',
    serverInfo: { name: 'travel', version: '1.0.0' },
    requestState: { keys: ['a', 'b'], ttl: 300_000 },
    principal: (request: any) => request.user?.sub ?? null,
  })
  expect<MocapiOptions>().type.not.toBeAssignableFrom({ requestState: { ttl: '5m' } })
  expect<MocapiOptions>().type.not.toBeAssignableFrom({ path: 42 })
})

test('register accepts the plugin and its options', () => {
  const app = Fastify()
  expect(app.register(mocapi, { path: '/mcp', requestState: { ttl: 1000 } })).type.not.toRaiseError()
})

test('app.mcp and request.mcp are declared on Fastify', () => {
  const app = Fastify()
  expect(app.mcp).type.toBe<McpRegistry>()
  app.get('/', async (request) => {
    expect(request.mcp).type.toBe<McpContext | null>()
  })
})

test('ctx.elicit infers the answer from the schema', async () => {
  const app = Fastify()
  app.mcp.tool({ name: 'book', inputSchema: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] } }, async (args: { to: string }, ctx) => {
    expect(ctx).type.toBe<McpContext>()
    const answer = await ctx.elicit('Book?', requestedSchema().boolean('confirm').choose('cabin', ['economy', 'business']))
    expect(answer).type.toBe<ElicitAnswer<{ confirm: boolean, cabin: 'economy' | 'business' }>>()
    if (answer.action === 'accept') {
      expect(answer.content.cabin).type.toBe<'economy' | 'business'>()
      expect(answer.content.confirm).type.toBe<boolean>()
    } else {
      expect(answer).type.toBe<{ action: 'decline' } | { action: 'cancel' }>()
    }
    const url = await ctx.elicitUrl('Sign in', 'https://example.com')
    expect(url.action).type.toBe<'accept' | 'decline' | 'cancel'>()
    expect(ctx.principal).type.toBe<string | null>()
    expect(ctx.signal).type.toBe<AbortSignal>()
    return `to ${args.to}`
  })
})

test('{ unavailable: \'return\' } adds the unavailable outcome to the answer, and only then', async () => {
  const app = Fastify()
  app.mcp.tool({ name: 'delete_file' }, async (_args, ctx) => {
    const schema = requestedSchema().boolean('confirm')
    expect(await ctx.elicit('Delete?', schema, { key: 'confirm' })).type.toBe<ElicitAnswer<{ confirm: boolean }>>()
    const maybe = await ctx.elicit('Delete?', schema, { unavailable: 'return' })
    expect(maybe).type.toBe<ElicitAnswer<{ confirm: boolean }> | Unavailable>()
    if (maybe.action === 'unavailable') expect(maybe.reason).type.toBe<string>()
    expect(await ctx.elicitUrl('Sign in', 'https://example.com', { unavailable: 'return' }))
      .type.toBe<{ action: 'accept' | 'decline' | 'cancel' } | Unavailable>()
    expect(ctx.elicit).type.not.toBeCallableWith('Delete?', schema, { unavailable: 'always' })
    return 'ok'
  })
})

test('ctx.once resolves what its function returns, as JSON reads it back', async () => {
  const app = Fastify()
  app.mcp.tool({ name: 'book' }, async (_args, ctx) => {
    expect(await ctx.once('quote', async () => ({ price: 120, currency: 'EUR' as const })))
      .type.toBe<{ price: number, currency: 'EUR' }>()
    expect(await ctx.once('count', () => 3)).type.toBe<number>()
    expect(await ctx.once('note', (): string | undefined => undefined)).type.toBe<string | null>()
    expect(await ctx.once('nothing', () => {})).type.toBe<null>()
    expect(ctx.once).type.not.toBeCallableWith(42, () => 1)
    return 'ok'
  })
})

test('options of ctx.once and single-use rounds are typed', () => {
  expect<MocapiOptions>().type.toBeAssignableFrom({ requestState: { singleUse: true }, once: { maxBytes: 8192 } })
  expect<MocapiOptions>().type.not.toBeAssignableFrom({ requestState: { singleUse: 'yes' } })
  expect<MocapiOptions>().type.not.toBeAssignableFrom({ once: { maxBytes: '8k' } })
})

test('app.mcp.skills takes a folder and options, and resolves the SKILL.md URIs it serves', async () => {
  const app = Fastify()
  expect(await app.mcp.skills(new URL('file:///srv/skills/'), { prefix: 'acme', scopes: ['docs:read'] })).type.toBe<string[]>()
  expect(app.mcp.skills).type.toBeCallableWith('./skills')
  expect(app.mcp.skills).type.not.toBeCallableWith('./skills', { prefix: 1 })
  expect(app.mcp.skills).type.not.toBeCallableWith(42)
})

test('the error family', () => {
  expect(new ExpiredRequestStateError()).type.toBeAssignableTo<InvalidRequestStateError>()
  expect(new InvalidRequestStateError('x')).type.toBeAssignableTo<McpError>()
  expect(new ElicitationLedgerMismatchError(1, 'message').ordinal).type.toBe<number>()
  expect(new ElicitationLedgerMismatchError(1, 'schema').part).type.toBe<'key' | 'kind' | 'schema' | 'url' | 'params' | 'message'>()
  expect(new McpError(-32602, 'x').code).type.toBe<number>()
})
