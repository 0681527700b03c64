import { expect, test } from 'tstyche'
import { requestedSchema, type Infer, type RequestedSchema, type RequestedSchemaBuilder, type PrimitiveSchemaDefinition } from '../lib/elicitation/schema.js'

declare function contentOf<B extends RequestedSchemaBuilder<object>> (builder: B): Infer<B>

test('infers the cabin example', () => {
  const schema = requestedSchema().boolean('confirm').choose('cabin', ['economy', 'business'])
  expect(contentOf(schema)).type.toBe<{ confirm: boolean, cabin: 'economy' | 'business' }>()
  expect(schema).type.toBe<RequestedSchemaBuilder<{ confirm: boolean, cabin: 'economy' | 'business' }>>()
})

test('starts empty', () => {
  expect<Infer<ReturnType<typeof requestedSchema>>>().type.toBe<{}>()
})

test('optional fields become optional properties', () => {
  const schema = requestedSchema().string('name').string('note', { optional: true }).integer('age', { optional: false })
  expect(contentOf(schema)).type.toBe<{ name: string, note?: string, age: number }>()
  const maybe = Math.random() > 0.5
  expect<Infer<typeof schema>>().type.not.toBe<{ name: string, note: string, age: number }>()
  const either = requestedSchema().boolean('ok', { optional: maybe })
  expect(contentOf(either)).type.toBe<{ ok?: boolean }>()
})

test('optional: undefined leaves the field required, as the schema it renders says', () => {
  const schema = requestedSchema().string('name', { optional: undefined })
  expect(contentOf(schema)).type.toBe<{ name: string }>()
})

test('number and integer infer number', () => {
  const schema = requestedSchema().number('weight', { minimum: 0 }).integer('seats', { default: 1 })
  expect(contentOf(schema)).type.toBe<{ weight: number, seats: number }>()
})

test('titled choices infer from value', () => {
  const schema = requestedSchema().choose('cabin', [{ value: 'y', title: 'Economy' }, { value: 'j', title: 'Business' }], { default: 'j' })
  expect(contentOf(schema)).type.toBe<{ cabin: 'y' | 'j' }>()
})

test('chooseMany infers an array of the choices', () => {
  const schema = requestedSchema()
    .chooseMany('meals', ['veg', 'fish'], { default: ['veg'] })
    .chooseMany('extras', [{ value: 'bag', title: 'Bag' }], { optional: true })
  expect(contentOf(schema)).type.toBe<{ meals: Array<'veg' | 'fish'>, extras?: Array<'bag'> }>()
})

test('options are checked', () => {
  expect(requestedSchema().choose).type.not.toBeCallableWith('cabin', ['economy'], { default: 'first' })
  expect(requestedSchema().chooseMany).type.not.toBeCallableWith('meals', ['veg'], { default: ['beef'] })
  expect(requestedSchema().string).type.not.toBeCallableWith('email', { format: 'phone' })
  expect(requestedSchema().string).type.not.toBeCallableWith('email', { minlength: 3 })
  expect(requestedSchema().number).type.not.toBeCallableWith('n', { default: '1' })
  expect(requestedSchema().choose).type.not.toBeCallableWith('c', ['a', { value: 'b', title: 'B' }])
})

test('builders render a RequestedSchema', () => {
  const schema = requestedSchema().boolean('ok')
  expect(schema.toJSON()).type.toBe<RequestedSchema>()
  expect(schema.schema.properties.ok).type.toBe<PrimitiveSchemaDefinition>()
})
