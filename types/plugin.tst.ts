import Fastify from 'fastify'
import { expect, test } from 'tstyche'
import mocapi, {
  mocapiPlugin, requestedSchema, type McpContext, InvalidRequestStateError, ExpiredRequestStateError,
  ElicitationLedgerMismatchError, McpError, type MocapiOptions, type McpRegistry, type ElicitAnswer, type Unavailable,
  type Recorded, type JsonValue, type CallToolResult,
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

interface Quote {
  price: number
  currency: 'EUR' | 'USD'
  note?: string
  legs: Array<{ from: string, to: string, stops: [string, number] }>
  seats: readonly string[]
  held: null
}

interface Tree { name: string, children: Tree[] }
interface DatedTree { name: string, children: DatedTree[], at: Date }

class Fare {
  constructor (readonly price: number) {}
  total (): number { return this.price }
}

test('ctx.once takes JSON: objects, interfaces, arrays, tuples, null and optional properties', () => {
  const app = Fastify()
  app.mcp.tool({ name: 'book' }, async (_args, ctx) => {
    const quote: Quote = { price: 1, currency: 'EUR', legs: [], seats: [], held: null }
    expect(await ctx.once('quote', async () => quote)).type.toBe<Quote>()
    expect(await ctx.once('literal', () => ({ a: { b: [{ c: true }] }, d: 'x' as string | undefined }))).type.toBe<{ a: { b: Array<{ c: boolean }> }, d: string | undefined }>()
    expect(await ctx.once('tuple', (): [string, number, null] => ['a', 1, null])).type.toBe<[string, number, null]>()
    expect(await ctx.once('list', () => [1, 2, 3])).type.toBe<number[]>()
    expect(await ctx.once('null', () => null)).type.toBe<null>()
    expect(await ctx.once('record', (): Record<string, number> => ({}))).type.toBe<Record<string, number>>()
    expect(await ctx.once('parsed', (): unknown => JSON.parse('{}'))).type.toBe<unknown>()
    expect(await ctx.once('anything', (): any => 1)).type.toBe<any>()
    expect(await ctx.once('json', (): JsonValue => null)).type.toBe<JsonValue>()
    expect(await ctx.once('tree', (): Tree => ({ name: 'root', children: [] }))).type.toBe<Tree>()
    expect(await ctx.once('result', (): CallToolResult => ({ content: [] }))).type.toBe<CallToolResult>()
    return 'ok'
  })
})

test('ctx.once refuses, at compile time, what it would refuse at run time', () => {
  const app = Fastify()
  app.mcp.tool({ name: 'book' }, async (_args, ctx) => {
    expect(ctx.once).type.not.toBeCallableWith('date', () => new Date())
    expect(ctx.once).type.not.toBeCallableWith('date', async () => new Date())
    expect(ctx.once).type.not.toBeCallableWith('map', () => new Map<string, number>())
    expect(ctx.once).type.not.toBeCallableWith('set', () => new Set<string>())
    expect(ctx.once).type.not.toBeCallableWith('function', () => () => 1)
    expect(ctx.once).type.not.toBeCallableWith('bigint', () => 1n)
    expect(ctx.once).type.not.toBeCallableWith('symbol', () => Symbol('x'))
    expect(ctx.once).type.not.toBeCallableWith('class', () => new Fare(1))
    expect(ctx.once).type.not.toBeCallableWith('nested', () => ({ legs: [{ at: new Date() }] }))
    expect(ctx.once).type.not.toBeCallableWith('maybe', (): string | Date => 'x')
    expect(ctx.once).type.not.toBeCallableWith('hole', () => [1, undefined])
    expect(ctx.once).type.not.toBeCallableWith('tree', (): DatedTree => ({ name: 'root', children: [], at: new Date() }))
    return 'ok'
  })
})

test('Recorded is what ctx.once resolves', () => {
  expect<Recorded<undefined>>().type.toBe<null>()
  expect<Recorded<string | undefined>>().type.toBe<string | null>()
  expect<Recorded<{ a: number }>>().type.toBe<{ a: number }>()
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
