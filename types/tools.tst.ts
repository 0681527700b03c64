import { Type as TypeBox } from '@sinclair/typebox'
import Fastify from 'fastify'
import { expect, test } from 'tstyche'
import Type from 'typebox'
import type {
  CallToolResult, ContentBlock, McpContext, StructuredToolResult, ToolArguments, ToolDefinition, ToolErrorResult, ToolHandler,
  ToolReturn, ToolStructuredContent,
} from '../lib/index.js'
import type { JsonObject } from '../lib/protocol/wire.js'

const app = Fastify()

test('arguments are inferred from an inline inputSchema, as written', () => {
  app.mcp.tool({
    name: 'book',
    inputSchema: {
      type: 'object',
      properties: {
        to: { type: 'string' },
        seats: { type: 'integer' },
        cabin: { enum: ['economy', 'business'] },
        traveller: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'], additionalProperties: false },
        stops: { type: 'array', items: { type: 'string' } },
        when: { anyOf: [{ type: 'string' }, { type: 'null' }] },
        tags: { type: 'object', additionalProperties: { type: 'string' } },
      },
      required: ['to', 'cabin'],
    },
  }, (args, ctx) => {
    expect(args).type.toBe<{
      to: string
      cabin: 'economy' | 'business'
      seats?: number
      traveller?: { name: string }
      stops?: string[]
      when?: string | null
      tags?: { [key: string]: string }
    }>()
    expect(ctx).type.toBe<McpContext>()
    return `to ${args.to}`
  })
})

test('arguments are inferred from an `as const` schema kept in a variable', () => {
  const inputSchema = { type: 'object', properties: { to: { type: 'string' }, seats: { type: 'integer' } }, required: ['to'] } as const
  app.mcp.tool({ name: 'book', inputSchema }, (args) => {
    expect(args).type.toBe<{ to: string, seats?: number }>()
    return args.to
  })
})

test('arguments are inferred from a TypeBox schema, 0.x and 1.x', () => {
  app.mcp.tool({ name: 'old', inputSchema: TypeBox.Object({ to: TypeBox.String(), seats: TypeBox.Optional(TypeBox.Integer()) }) }, (args) => {
    expect(args).type.toBe<{ to: string, seats?: number }>()
    return args.to
  })
  app.mcp.tool({ name: 'new', inputSchema: Type.Object({ to: Type.String(), seats: Type.Optional(Type.Integer()) }) }, (args) => {
    expect(args).type.toBe<{ to: string, seats?: number }>()
    return args.to
  })
  expect<ToolDefinition>().type.toBeAssignableFrom({ name: 't', inputSchema: TypeBox.Object({}), outputSchema: Type.Object({}) })
})

test('a tool without inputSchema takes no arguments', () => {
  app.mcp.tool({ name: 'ping' }, (args) => {
    expect(args).type.toBe<{}>()
    expect(args).type.not.toHaveProperty('to')
    return 'pong'
  })
  // @ts-expect-error Property 'to' is missing in type 'Record<never, never>'
  app.mcp.tool({ name: 'ping' }, (args: { to: string }) => args.to)
})

test('a handler annotation must accept what a literal schema lets through', () => {
  const inputSchema = { type: 'object', properties: { to: { type: 'string' }, seats: { type: 'integer' } }, required: ['to'] } as const
  // @ts-expect-error Type 'string' is not assignable to type 'number'
  app.mcp.tool({ name: 'book', inputSchema }, (args: { to: number }) => String(args.to))
  // The schema leaves seats optional: a handler that counts on it is refused.
  // @ts-expect-error Type 'undefined' is not assignable to type 'number'
  app.mcp.tool({ name: 'book', inputSchema }, (args: { to: string, seats: number }) => `${args.seats}`)
  app.mcp.tool({ name: 'book', inputSchema }, (args: { to: string, seats?: number }) => args.to)
  app.mcp.tool({ name: 'book', inputSchema }, (args: { to: string | number }) => String(args.to))
  app.mcp.tool({ name: 'book', inputSchema }, (args: Record<string, unknown>) => String(args.to))
})

test('an explicit generic types the arguments, whatever the schema', () => {
  app.mcp.tool<{ to: string, stops: string[] }>({
    name: 'book',
    inputSchema: { type: 'object', properties: { to: { type: 'string' }, stops: { type: 'array' } } },
  }, (args) => {
    expect(args).type.toBe<{ to: string, stops: string[] }>()
    return args.stops.join()
  })
})

test('an inputSchema TypeScript cannot read keeps the arguments loose, or as annotated', () => {
  const someVariable: JsonObject = { type: 'object', properties: { to: { type: 'string' } } }
  app.mcp.tool({ name: 'book', inputSchema: someVariable }, (args: { to: string }) => {
    expect(args).type.toBe<{ to: string }>()
    return args.to
  })
  app.mcp.tool({ name: 'book', inputSchema: someVariable }, (args) => {
    expect(args).type.toBe<Record<string, any>>()
    return 'x'
  })
  const widened = { type: 'object', properties: { to: { type: 'string' } } }
  app.mcp.tool({ name: 'book', inputSchema: widened }, (args) => {
    expect(args).type.toBe<Record<string, any>>()
    return 'x'
  })
})

test('a definition annotated as ToolDefinition is a plain type, and its handler types its arguments', () => {
  const definition: ToolDefinition = {
    name: 'book',
    inputSchema: { type: 'object', properties: { to: { type: 'string' } } },
    outputSchema: { type: 'object' },
    icons: [{ src: 'https://example.com/icon.png' }],
    canAccess: (ctx) => ctx.principal !== null,
  }
  app.mcp.tool(definition, (args: { to: string }) => args.to)
  app.mcp.tool(definition, (args) => {
    expect(args).type.toBe<Record<string, any>>()
    return undefined
  })
  expect(app.mcp.listTools()).type.toBe<ToolDefinition[]>()
  expect<ToolArguments<ToolDefinition>>().type.toBe<Record<string, any>>()
  expect<ToolStructuredContent<ToolDefinition>>().type.toBe<never>()
})

test('fields a definition does not have are refused', () => {
  // @ts-expect-error Type 'string' is not assignable to type 'never'
  app.mcp.tool({ name: 'book', colour: 'red' }, () => 'x')
  // @ts-expect-error is not assignable to type 'never'
  app.mcp.tool({ name: 'book', inputschema: { type: 'object' } }, () => 'x')
  expect(app.mcp.tool).type.not.toBeCallableWith({ title: 'no name' }, () => 'x')
})

test('a literal or TypeBox outputSchema types the structured content', () => {
  const outputSchema = { type: 'object', properties: { temp: { type: 'number' }, unit: { enum: ['C', 'F'] } }, required: ['temp'] } as const
  expect<ToolStructuredContent<{ name: 'weather', outputSchema: typeof outputSchema }>>().type.toBe<{ temp: number, unit?: 'C' | 'F' }>()
  app.mcp.tool({ name: 'weather', outputSchema }, () => ({ temp: 21.5 }))
  app.mcp.tool({ name: 'weather', outputSchema }, async () => ({ temp: 21.5, unit: 'C' as const }))
  app.mcp.tool({ name: 'weather', outputSchema }, async () => ({ content: [{ type: 'text', text: 'warm' }], structuredContent: { temp: 30 } }))
  app.mcp.tool({ name: 'weather', outputSchema }, () => ({ content: [{ type: 'text', text: 'sensor down' }], isError: true }))
  // @ts-expect-error Type 'string' is not assignable to type 'number'
  app.mcp.tool({ name: 'weather', outputSchema }, () => ({ temp: 'hot' }))
  // A string, or content without structured content, would fail the outputSchema at run time.
  // @ts-expect-error Type 'string' is not assignable to type 'ToolReturn<{ temp: number; unit?: "C" | "F" | undefined; }>
  app.mcp.tool({ name: 'weather', outputSchema }, () => 'warm')
  // @ts-expect-error Property 'structuredContent' is missing
  app.mcp.tool({ name: 'weather', outputSchema }, async () => ({ content: [{ type: 'text', text: 'warm' }] }))
  app.mcp.tool({ name: 'weather', outputSchema: TypeBox.Object({ temp: TypeBox.Number() }) }, () => ({ temp: 1 }))
  // @ts-expect-error Type 'string' is not assignable to type 'number'
  app.mcp.tool({ name: 'weather', outputSchema: Type.Object({ temp: Type.Number() }) }, () => ({ temp: '1' }))
})

test('a literal in the structured content is widened unless marked, as in any TypeScript callback', () => {
  const outputSchema = { type: 'object', properties: { status: { enum: ['ok', 'failed'] } }, required: ['status'] } as const
  // @ts-expect-error Type 'string' is not assignable to type '"ok" | "failed"'
  app.mcp.tool({ name: 'check', outputSchema }, () => ({ status: 'ok' }))
  app.mcp.tool({ name: 'check', outputSchema }, () => ({ status: 'ok' as const }))
  app.mcp.tool({ name: 'check', outputSchema }, async (): Promise<{ status: 'ok' | 'failed' }> => ({ status: 'ok' }))
})

test('without a readable outputSchema, a handler returns what ToolReturn says', () => {
  app.mcp.tool({ name: 'text' }, () => 'one text block')
  app.mcp.tool({ name: 'blocks' }, async () => [{ type: 'image', data: 'AAAA', mimeType: 'image/png' }])
  app.mcp.tool({ name: 'result' }, () => ({ content: [], _meta: { 'example.com/trace': 'abc' } }))
  app.mcp.tool({ name: 'data' }, () => ({ temp: 21.5 }))
  app.mcp.tool({ name: 'nothing' }, () => undefined)
  const outputSchema: JsonObject = { type: 'object' }
  app.mcp.tool({ name: 'loose', outputSchema }, () => ({ temp: 21.5 }))
})

test('ToolReturn says what a tool may return', () => {
  expect<ToolReturn>().type.not.toBe<unknown>()
  expect<ToolReturn>().type.not.toBe<any>()
  expect<ToolReturn>().type.toBeAssignableFrom('text')
  expect<ToolReturn>().type.toBeAssignableFrom<ContentBlock[]>()
  expect<ToolReturn>().type.toBeAssignableFrom<CallToolResult>()
  expect<ToolReturn>().type.toBeAssignableFrom(undefined)
  expect<ToolReturn>().type.toBeAssignableFrom({ temp: 21.5 })
  expect<ToolReturn>().type.not.toBeAssignableFrom(Symbol('x'))
  expect<ToolReturn>().type.not.toBeAssignableFrom(1n)
  type Weather = ToolReturn<{ temp: number }>
  expect<Weather>().type.toBe<{ temp: number } | StructuredToolResult<{ temp: number }> | ToolErrorResult>()
  expect<Weather>().type.toBeAssignableFrom({ temp: 1 })
  expect<Weather>().type.toBeAssignableFrom({ content: [], structuredContent: { temp: 1 } })
  expect<Weather>().type.toBeAssignableFrom({ content: [], isError: true as const })
  expect<Weather>().type.not.toBeAssignableFrom('text')
  expect<Weather>().type.not.toBeAssignableFrom({ content: [] })
  expect<Weather>().type.not.toBeAssignableFrom(undefined)
})

test('ToolHandler types a handler written apart from its registration', () => {
  const inputSchema = { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] } as const
  const handler: ToolHandler<ToolArguments<{ inputSchema: typeof inputSchema }>> = (args) => args.to
  app.mcp.tool({ name: 'book', inputSchema }, handler)
  const loose: ToolHandler = (args) => String(args.anything)
  app.mcp.tool({ name: 'book', inputSchema }, loose)
  const weather: ToolHandler<{}, { temp: number }> = () => ({ temp: 1 })
  app.mcp.tool({ name: 'weather', outputSchema: { type: 'object', properties: { temp: { type: 'number' } }, required: ['temp'] } }, weather)
})
