/**
 * The declarations users get: every import below resolves through package.json's `exports` to the
 * built dist/**\/*.d.ts, which tstyche also type-checks (checkDeclarationFiles), skipLibCheck or not.
 */
import { Type as TypeBox } from '@sinclair/typebox'
import Fastify from 'fastify'
import { expect, test } from 'tstyche'
import Type from 'typebox'
import mocapi, {
  McpError, mocapiPlugin, requestedSchema, type ElicitAnswer, type FromSchema, type Journalable, type McpContext, type McpRegistry, type Recorded,
  type StructuredToolResult, type ToolArguments, type ToolDefinition, type ToolErrorResult, type ToolHandler, type ToolReturn,
} from 'mocapi'
import * as published from 'mocapi'
import { RedisBus } from 'mocapi/redis'
import { accept, createTestClient, textOf, type CallToolResult, type Outcome, type TestClient } from 'mocapi/testing'

test('the plugin and its augmentation of Fastify', () => {
  expect(mocapi).type.toBe(mocapiPlugin)
  const app = Fastify()
  expect(app.register(mocapi, { path: '/mcp', requestState: { ttl: 1000 } })).type.not.toRaiseError()
  expect(app.mcp).type.toBe<McpRegistry>()
  app.get('/', async (request) => {
    expect(request.mcp).type.toBe<McpContext | null>()
  })
})

test('ctx.once takes JSON only, and resolves it as Recorded', () => {
  const app = Fastify()
  app.mcp.tool({ name: 'book' }, async (_args, ctx) => {
    expect(await ctx.once('note', (): string | undefined => undefined)).type.toBe<Recorded<string | undefined>>()
    expect(ctx.once).type.not.toBeCallableWith('when', () => new Date())
    return 'ok'
  })
  expect<Recorded<undefined>>().type.toBe<null>()
  expect<Journalable<{ at: Date }>>().type.not.toBeAssignableFrom({ at: new Date() })
  expect(published).type.not.toHaveProperty('Recorded')
})

test('McpContext and McpRegistry are types only: mocapi makes them, users do not', () => {
  expect(published).type.not.toHaveProperty('McpContext')
  expect(published).type.not.toHaveProperty('McpRegistry')
  expect(published.McpError).type.toBeConstructableWith(-32602, 'x')
  expect(new McpError(-32602, 'x').code).type.toBe<number>()
})

test('tool arguments are inferred from a literal or TypeBox inputSchema', () => {
  const app = Fastify()
  app.mcp.tool({
    name: 'book',
    inputSchema: { type: 'object', properties: { to: { type: 'string' }, cabin: { enum: ['economy', 'business'] } }, required: ['to'] },
  }, async (args, ctx) => {
    expect(args).type.toBe<{ to: string, cabin?: 'economy' | 'business' }>()
    const answer = await ctx.elicit(`Book ${args.to}?`, requestedSchema().boolean('confirm'))
    expect(answer).type.toBe<ElicitAnswer<{ confirm: boolean }>>()
    return `to ${args.to}`
  })
  app.mcp.tool({ name: 'old', inputSchema: TypeBox.Object({ to: TypeBox.String() }) }, (args) => {
    expect(args).type.toBe<{ to: string }>()
    return args.to
  })
  app.mcp.tool({ name: 'new', inputSchema: Type.Object({ to: Type.String() }) }, (args) => {
    expect(args).type.toBe<{ to: string }>()
    return args.to
  })
  // @ts-expect-error Type 'string' is not assignable to type 'number'
  app.mcp.tool({ name: 'wrong', inputSchema: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] } }, (args: { to: number }) => `${args.to}`)
  app.mcp.tool<{ to: string }>({ name: 'explicit', inputSchema: { type: 'object' } }, (args) => args.to)
  const definition: ToolDefinition = { name: 'plain', inputSchema: { type: 'object' } }
  app.mcp.tool(definition, (args: { to: string }) => args.to)
  expect<FromSchema<{ type: 'array', items: { type: 'integer' } }>>().type.toBe<number[]>()
  expect<ToolArguments<{ inputSchema: { type: 'object', properties: { n: { type: 'number' } } } }>>().type.toBe<{ n?: number }>()
})

test('structured content is typed from a literal or TypeBox outputSchema', () => {
  const app = Fastify()
  const outputSchema = { type: 'object', properties: { temp: { type: 'number' } }, required: ['temp'] } as const
  app.mcp.tool({ name: 'weather', outputSchema }, () => ({ temp: 21.5 }))
  app.mcp.tool({ name: 'weather', outputSchema: TypeBox.Object({ temp: TypeBox.Number() }) }, async () => ({ content: [], structuredContent: { temp: 1 } }))
  // @ts-expect-error Property 'structuredContent' is missing
  app.mcp.tool({ name: 'weather', outputSchema }, async () => ({ content: [{ type: 'text', text: 'warm' }] }))
})

test('ToolReturn and ToolHandler say what a handler may return', () => {
  expect<ToolReturn>().type.not.toBe<any>()
  expect<ToolReturn>().type.not.toBe<unknown>()
  expect<ToolReturn>().type.toBeAssignableFrom('text')
  expect<ToolReturn>().type.not.toBeAssignableFrom(Symbol('x'))
  expect<ToolReturn<{ temp: number }>>().type.toBe<{ temp: number } | StructuredToolResult<{ temp: number }> | ToolErrorResult>()
  expect<ToolHandler>().type.toBe<(args: Record<string, any>, ctx: McpContext) => ToolReturn | Promise<ToolReturn>>()
})

test('mocapi/testing and mocapi/redis', async () => {
  const client = createTestClient(Fastify())
  expect(client).type.toBe<TestClient>()
  const outcome = await client.callTool('book', { to: 'Lisbon' }, { 'elicit-1': accept({ confirm: true }) })
  expect(outcome).type.toBe<Outcome<CallToolResult>>()
  expect(textOf(outcome.result)).type.toBe<string>()
  expect(RedisBus).type.toBeConstructableWith({ url: 'redis://127.0.0.1:6379' })
})
