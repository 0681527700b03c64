import { Type as TypeBox } from '@sinclair/typebox'
import Type from 'typebox'
import { expect, test } from 'tstyche'
import type { FromSchema } from '../lib/index.js'
import type { JsonObject } from '../lib/protocol/wire.js'

/** What a value accepted by `schema` is typed as. */
declare function accepted<S> (schema: S): FromSchema<S>

test('primitive types, and a list of types', () => {
  expect<FromSchema<{ type: 'string' }>>().type.toBe<string>()
  expect<FromSchema<{ type: 'number' }>>().type.toBe<number>()
  expect<FromSchema<{ type: 'integer' }>>().type.toBe<number>()
  expect<FromSchema<{ type: 'boolean' }>>().type.toBe<boolean>()
  expect<FromSchema<{ type: 'null' }>>().type.toBe<null>()
  expect<FromSchema<{ type: readonly ['string', 'null'] }>>().type.toBe<string | null>()
  expect<FromSchema<{ type: 'string', nullable: true }>>().type.toBe<string | null>()
  expect<FromSchema<{ type: 'string' | 'number' }>>().type.toBe<string | number>()
})

test('enum and const are literal types', () => {
  expect<FromSchema<{ enum: readonly ['economy', 'business'] }>>().type.toBe<'economy' | 'business'>()
  expect<FromSchema<{ type: 'integer', enum: readonly [1, 2, 3] }>>().type.toBe<1 | 2 | 3>()
  expect<FromSchema<{ const: 'flight' }>>().type.toBe<'flight'>()
  expect<FromSchema<{ enum: readonly ['a', null] }>>().type.toBe<'a' | null>()
})

test('objects: required keys are required, the others optional', () => {
  const schema = {
    type: 'object',
    properties: { to: { type: 'string' }, seats: { type: 'integer' }, cabin: { enum: ['economy', 'business'] } },
    required: ['to', 'cabin'],
  } as const
  expect(accepted(schema)).type.toBe<{ to: string, cabin: 'economy' | 'business', seats?: number }>()
  // A required key that `properties` does not describe must be there, of any type.
  expect<FromSchema<{ type: 'object', required: readonly ['id'] }>>().type.toBe<{ [key: string]: unknown, id: unknown }>()
})

test('additionalProperties: false is exact, true or a schema adds an index signature', () => {
  const properties = { a: { type: 'string' } } as const
  expect(accepted({ type: 'object', properties, additionalProperties: false } as const)).type.toBe<{ a?: string }>()
  expect(accepted({ type: 'object', properties } as const)).type.toBe<{ a?: string }>()
  expect(accepted({ type: 'object', properties, additionalProperties: true } as const)).type.toBe<{ [key: string]: unknown, a?: string }>()
  expect<FromSchema<{ type: 'object', additionalProperties: { type: 'number' } }>>().type.toBe<{ [key: string]: number }>()
  expect<FromSchema<{ type: 'object' }>>().type.toBe<{ [key: string]: unknown }>()
  expect<FromSchema<{ type: 'object', additionalProperties: false }>>().type.toBe<{}>()
})

test('nested objects and arrays', () => {
  const schema = {
    type: 'object',
    properties: {
      traveller: { type: 'object', properties: { name: { type: 'string' }, age: { type: 'integer' } }, required: ['name'] },
      stops: { type: 'array', items: { type: 'string' } },
      legs: { type: 'array', items: { type: 'object', properties: { from: { type: 'string' } }, required: ['from'] } },
      anything: { type: 'array' },
    },
    required: ['traveller', 'stops'],
  } as const
  expect(accepted(schema)).type.toBe<{
    traveller: { name: string, age?: number }
    stops: string[]
    legs?: Array<{ from: string }>
    anything?: unknown[]
  }>()
})

test('prefixItems are a tuple, its first minItems items required', () => {
  const pair = { type: 'array', prefixItems: [{ type: 'string' }, { type: 'number' }], minItems: 1, items: false } as const
  expect(accepted(pair)).type.toBe<[string, number?]>()
  const open = { type: 'array', prefixItems: [{ type: 'string' }] } as const
  expect(accepted(open)).type.toBe<[string?, ...unknown[]]>()
  const rest = { type: 'array', prefixItems: [{ type: 'string' }], minItems: 1, items: { type: 'boolean' } } as const
  expect(accepted(rest)).type.toBe<[string, ...boolean[]]>()
})

test('anyOf and oneOf are unions, allOf an intersection', () => {
  expect<FromSchema<{ anyOf: readonly [{ type: 'string' }, { type: 'number' }] }>>().type.toBe<string | number>()
  const oneOf = {
    oneOf: [{ type: 'object', properties: { kind: { const: 'a' } }, required: ['kind'] }, { type: 'null' }],
  } as const
  expect(accepted(oneOf)).type.toBe<{ kind: 'a' } | null>()
  const allOf = {
    allOf: [{ type: 'object', properties: { a: { type: 'string' } }, required: ['a'] }, { type: 'object', properties: { b: { type: 'number' } } }],
  } as const
  expect(accepted(allOf)).type.toBe<{ a: string } & { b?: number }>()
})

test('what it cannot read is unknown, never any', () => {
  expect<FromSchema<{ $ref: '#/$defs/x' }>>().type.toBe<unknown>()
  expect<FromSchema<{ not: { type: 'string' } }>>().type.toBe<unknown>()
  expect<FromSchema<{ type: string }>>().type.toBe<unknown>()
  expect<FromSchema<{ type: readonly ['string', 'date'] }>>().type.toBe<unknown>()
  expect<FromSchema<JsonObject>>().type.toBe<unknown>()
  expect<FromSchema<object>>().type.toBe<unknown>()
  expect<FromSchema<any>>().type.toBe<unknown>()
  expect<FromSchema<true>>().type.toBe<unknown>()
  expect<FromSchema<false>>().type.toBe<never>()
  // A schema written without `as const` and kept in a variable has widened types.
  const widened = { type: 'object', properties: { to: { type: 'string' } } }
  expect(accepted(widened)).type.toBe<unknown>()
})

test('reading stops at a bounded depth', () => {
  type Nest<S, N extends unknown[] = []> = N['length'] extends 14 ? S : Nest<{ type: 'object', properties: { x: S }, required: ['x'] }, [...N, 0]>
  type Deep = FromSchema<Nest<{ type: 'string' }>>
  expect<Deep['x']['x']['x']['x']['x']['x']['x']['x']['x']>().type.toBe<{ x: unknown }>()
  expect<FromSchema<Nest<{ type: 'string' }, [0, 0, 0, 0, 0, 0, 0, 0, 0, 0]>>['x']['x']['x']['x']>().type.toBe<string>()
})

test('a TypeBox 0.x schema gives its Static type', () => {
  const schema = TypeBox.Object({
    to: TypeBox.String(),
    seats: TypeBox.Optional(TypeBox.Integer()),
    cabin: TypeBox.Union([TypeBox.Literal('economy'), TypeBox.Literal('business')]),
    stops: TypeBox.Array(TypeBox.String()),
  })
  expect(accepted(schema)).type.toBe<{ to: string, seats?: number, cabin: 'economy' | 'business', stops: string[] }>()
})

test('a TypeBox 1.x schema reads as the JSON Schema it is', () => {
  const schema = Type.Object({
    to: Type.String(),
    seats: Type.Optional(Type.Integer()),
    cabin: Type.Union([Type.Literal('economy'), Type.Literal('business')]),
    note: Type.Union([Type.String(), Type.Null()]),
  })
  expect(accepted(schema)).type.toBe<{ to: string, seats?: number, cabin: 'economy' | 'business', note: string | null }>()
})
