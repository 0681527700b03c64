import t from 'tap'
import { requestedSchema, schemaDigest, type RequestedSchemaBuilder } from '../../lib/elicitation/schema.js'
import { FormAnswers, MAX_FORMS, checkRootsAnswer, checkSamplingAnswer, checkUrlAnswer } from '../../lib/elicitation/answers.js'
import { SchemaCompiler, type Validator } from '../../lib/json-schema.js'

/** A compiler that counts what it compiles and releases. */
class CountingCompiler extends SchemaCompiler {
  compiled = 0
  released = 0
  override compile (schema: object, where: string): Validator {
    this.compiled++
    return super.compile(schema, where)
  }

  override release (schema: object): void {
    this.released++
    super.release(schema)
  }
}

const accepted = { action: 'accept', content: {} }

const flight = requestedSchema()
  .boolean('confirm')
  .choose('cabin', ['economy', 'business'])
  .choose('meal', [{ value: 'veg', title: 'Vegetarian' }, { value: 'fish', title: 'Fish' }], { optional: true })
  .string('email', { format: 'email', optional: true })
  .string('site', { format: 'uri', optional: true })
  .string('day', { format: 'date', optional: true })
  .string('at', { format: 'date-time', optional: true })
  .string('note', { minLength: 2, maxLength: 5, optional: true })
  .integer('seats', { minimum: 1, maximum: 4, optional: true })
  .number('weight', { maximum: 23.5, optional: true })
  .chooseMany('extras', ['bag', 'wifi'], { maxItems: 1, optional: true })
  .chooseMany('perks', [{ value: 'lounge', title: 'Lounge' }, { value: 'spa', title: 'Spa' }], { optional: true })
  .boolean('my field', { optional: true })

/** The check of accepted content for a builder, in a registration of its own. */
function contentCheck (builder: RequestedSchemaBuilder<object>, forms = new FormAnswers(new SchemaCompiler())) {
  return (content: unknown) => forms.check(forms.of(builder), { action: 'accept', content })
}

t.test('accepts content that fits, keeping only the declared fields', async (t) => {
  const check = contentCheck(flight)
  t.strictSame(check({ confirm: true, cabin: 'economy' }), { ok: true, value: { action: 'accept', content: { confirm: true, cabin: 'economy' } } })
  const full = {
    confirm: false,
    cabin: 'business',
    meal: 'fish',
    email: 'a@example.com',
    site: 'https://example.com/x',
    day: '2026-07-28',
    at: '2026-07-28T10:00:00Z',
    note: 'hey',
    seats: 2,
    weight: 23.5,
    extras: ['wifi'],
    perks: ['lounge', 'spa'],
    'my field': true,
  }
  t.strictSame(check({ ...full, extra: 'dropped', role: 'admin', profile: { isAdmin: true } }), { ok: true, value: { action: 'accept', content: full } })
})

t.test('undeclared keys never reach the handler, whatever their name', async (t) => {
  const check = contentCheck(requestedSchema().string('name'))
  const given = JSON.parse('{"name":"Ada","role":"admin","__proto__":{"isAdmin":true},"constructor":{"x":1}}')
  const result = check(given)
  t.ok(result.ok)
  const content = (result as { value: { content: Record<string, unknown> } }).value.content
  t.strictSame(Object.keys(content), ['name'])
  t.equal(Object.getPrototypeOf(content), Object.prototype)
  t.equal((content as { isAdmin?: unknown }).isAdmin, undefined)
})

t.test('fields named like Object.prototype members are read as own properties', async (t) => {
  const check = contentCheck(requestedSchema().string('constructor').string('toString').string('__proto__', { optional: true }))
  t.strictSame(check({}), { ok: false, message: "content must have required property 'constructor'" }, 'an inherited member is not an answer')
  const given = JSON.parse('{"constructor":"a","toString":"b","__proto__":"c"}')
  const result = check(given) as { ok: true, value: { content: Record<string, unknown> } }
  t.ok(result.ok)
  t.equal(Object.getOwnPropertyDescriptor(result.value.content, '__proto__')?.value, 'c')
  t.equal(result.value.content.constructor, 'a')
})

t.test('names the offending field', async (t) => {
  const check = contentCheck(flight)
  const base = { confirm: true, cabin: 'economy' }
  const cases: Array<[unknown, string]> = [
    [{ cabin: 'economy' }, "content must have required property 'confirm'"],
    [{ confirm: true, cabin: 'first' }, 'content.cabin must be equal to one of the allowed values'],
    [{ ...base, meal: 'beef' }, 'content.meal must be equal to one of the allowed values'],
    [{ ...base, email: 'nope' }, 'content.email must match format "email"'],
    [{ ...base, site: 'not a uri' }, 'content.site must match format "uri"'],
    [{ ...base, day: '28/07/2026' }, 'content.day must match format "date"'],
    [{ ...base, at: '2026-07-28' }, 'content.at must match format "date-time"'],
    [{ ...base, note: 'x' }, 'content.note must NOT have fewer than 2 characters'],
    [{ ...base, seats: 1.5 }, 'content.seats must be integer'],
    [{ ...base, seats: 5 }, 'content.seats must be <= 4'],
    [{ ...base, weight: '3' }, 'content.weight must be number'],
    [{ ...base, extras: ['wifi', 'bag'] }, 'content.extras must NOT have more than 1 items'],
    [{ ...base, extras: ['tv'] }, 'content.extras[0] must be equal to one of the allowed values'],
    [{ ...base, perks: ['spa', 'spa'] }, 'content.perks must NOT have duplicate items (items ## 1 and 0 are identical)'],
    [{ ...base, perks: ['gym'] }, 'content.perks[0] must be equal to one of the allowed values'],
    [{ ...base, 'my field': 'yes' }, 'content["my field"] must be boolean'],
    [{ ...base, note: { text: 'hi' } }, 'content.note must be string'],
    [{ ...base, cabin: ['economy'] }, 'content.cabin must be string'],
    [null, 'content must be an object'],
    [['confirm'], 'content must be an object'],
  ]
  for (const [content, message] of cases) t.strictSame(check(content), { ok: false, message }, message)
})

t.test('a schema whose fields are all optional takes an empty answer', async (t) => {
  const check = contentCheck(requestedSchema().string('note', { optional: true }))
  t.strictSame(check({}), { ok: true, value: { action: 'accept', content: {} } })
})

t.test('decodes escaped pointer segments', async (t) => {
  const check = contentCheck(requestedSchema().integer('a/b~c'))
  t.strictSame(check({ 'a/b~c': 'x' }), { ok: false, message: 'content["a/b~c"] must be integer' })
})

t.test('checks the action of every kind of answer', async (t) => {
  const forms = new FormAnswers(new SchemaCompiler())
  const schema = requestedSchema().boolean('confirm')
  const check = (value: unknown) => forms.check(forms.of(schema), value)
  t.strictSame(check({ action: 'decline', content: { junk: 1 } }), { ok: true, value: { action: 'decline' } })
  t.strictSame(check({ action: 'cancel' }), { ok: true, value: { action: 'cancel' } })
  t.strictSame(check({ action: 'accept' }), { ok: false, message: 'content must be an object' })
  const badAction = { ok: false, message: 'result.action must be one of accept, decline, cancel' }
  t.strictSame(check({ action: 'ACCEPT' }), badAction)
  t.strictSame(check({}), badAction)
  t.strictSame(check(Object.create({ action: 'accept' })), badAction, 'an inherited action is no action')
  for (const value of [null, 'accept', [], undefined]) t.strictSame(check(value), { ok: false, message: 'result must be an object' })

  t.strictSame(checkUrlAnswer({ action: 'accept', content: { x: 1 } }), { ok: true, value: { action: 'accept' } })
  t.strictSame(checkUrlAnswer({ action: 'nope' }), badAction)
  t.strictSame(checkUrlAnswer(7), { ok: false, message: 'result must be an object' })
  t.ok(checkSamplingAnswer({ role: 'assistant', content: { type: 'text', text: 'x' }, model: 'm' }).ok)
  t.strictSame(checkRootsAnswer({ roots: [{ uri: 'file:///a' }] }), { ok: true, value: [{ uri: 'file:///a' }] })
})

t.test('builders that render the same schema share one form and one validator, in a bounded cache', async (t) => {
  const compiler = new CountingCompiler()
  const forms = new FormAnswers(compiler)
  const make = () => requestedSchema().string('city', { optional: true }).integer('nights', { minimum: 1, optional: true })
  const first = forms.of(make())
  forms.check(first, accepted)
  t.equal(forms.of(make()), first, 'the same JSON reuses the form')
  forms.check(forms.of(make()), accepted)
  t.equal(compiler.compiled, 1, 'and its validator')
  for (let i = 0; i < MAX_FORMS; i++) forms.check(forms.of(requestedSchema().string(`n${i}`, { optional: true })), accepted)
  t.equal(compiler.released, 1, 'the validator of the form evicted is released')
  t.not(forms.of(make()), first, 'the oldest form was evicted after enough others')
  forms.check(forms.of(make()), accepted)
  t.equal(compiler.compiled, MAX_FORMS + 2)
})

t.test('the form cache evicts the least recently used schema, not the first added', async (t) => {
  const compiler = new CountingCompiler()
  const forms = new FormAnswers(compiler)
  const form = (i: number | string) => {
    const made = forms.of(requestedSchema().string(`n${i}`, { optional: true }))
    forms.check(made, accepted)
    return made
  }
  for (let i = 0; i < MAX_FORMS; i++) form(i)
  const firstAdded = form(0)
  form('new')
  t.equal(compiler.compiled, MAX_FORMS + 1, 'the cache was full, and one new schema was compiled')
  t.equal(form(0), firstAdded, 'the first schema added, used just before, is kept')
  t.equal(compiler.compiled, MAX_FORMS + 1)
  form(1)
  t.equal(compiler.compiled, MAX_FORMS + 2, 'the least recently used one was the one evicted')
})

t.test('a builder equal to a recent one finds its form field by field; one that differs anywhere does not', async (t) => {
  const forms = new FormAnswers(new SchemaCompiler())
  const base = () => requestedSchema().boolean('confirm', { title: 'Confirm' }).chooseMany('extras', [{ value: 'bag', title: 'Bag' }], { minItems: 0 })
  const form = forms.of(base())
  t.equal(forms.of(base()), form, 'an equal builder, made anew')
  const variants: Array<[string, RequestedSchemaBuilder<object>]> = [
    ['another name', requestedSchema().boolean('confirmed', { title: 'Confirm' }).chooseMany('extras', [{ value: 'bag', title: 'Bag' }], { minItems: 0 })],
    ['optional', requestedSchema().boolean('confirm', { title: 'Confirm', optional: true }).chooseMany('extras', [{ value: 'bag', title: 'Bag' }], { minItems: 0 })],
    ['another title', requestedSchema().boolean('confirm', { title: 'Sure?' }).chooseMany('extras', [{ value: 'bag', title: 'Bag' }], { minItems: 0 })],
    ['a choice titled otherwise', requestedSchema().boolean('confirm', { title: 'Confirm' }).chooseMany('extras', [{ value: 'bag', title: 'Suitcase' }], { minItems: 0 })],
    ['one more option', requestedSchema().boolean('confirm', { title: 'Confirm' }).chooseMany('extras', [{ value: 'bag', title: 'Bag' }], { minItems: 0, maxItems: 1 })],
    ['one field fewer', requestedSchema().boolean('confirm', { title: 'Confirm' })],
    ['a default where none was', requestedSchema().boolean('confirm', { title: 'Confirm', default: false }).chooseMany('extras', [{ value: 'bag', title: 'Bag' }], { minItems: 0 })],
    ['a list where an object was', requestedSchema().boolean('confirm', { title: 'Confirm' }).chooseMany('extras', ['bag'], { minItems: 0 })],
  ]
  for (const [what, builder] of variants) {
    const found = forms.of(builder)
    t.not(found, form, what)
    t.equal(found.shape, schemaDigest(builder), `${what}: its own form`)
  }
  t.equal(forms.of(base()), form, 'and the first is still found')
})

t.test('an object that only has a rendered schema is checked too', async (t) => {
  const handMade = { schema: { type: 'object', properties: { code: { type: 'string', minLength: 4 } }, required: ['code'] } }
  const check = contentCheck(handMade as never)
  t.strictSame(check({ code: '1234' }), { ok: true, value: { action: 'accept', content: { code: '1234' } } })
  t.strictSame(check({ code: '12' }), { ok: false, message: 'content.code must NOT have fewer than 4 characters' })
})

t.test('a registration hashes a schema built on every round once, and keeps a bounded number of forms', async (t) => {
  const forms = new FormAnswers(new SchemaCompiler())
  const inline = () => requestedSchema().boolean('confirm').choose('cabin', ['economy', 'business'])
  const expected = schemaDigest(inline())
  t.equal(forms.of(inline()).shape, expected)
  t.equal(forms.of(inline()).shape, expected, 'a fresh builder of the same schema: the same digest')
  t.equal(forms.of(inline()).schema, forms.of(inline()).schema, 'rendered once')
  // Past the bound, digests are made again and still right.
  let wrong = 0
  for (let i = 0; i < 1100; i++) {
    const schema = requestedSchema().string(`field${i}`)
    if (forms.of(schema).shape !== schemaDigest(requestedSchema().string(`field${i}`))) wrong++
  }
  t.equal(wrong, 0, 'every digest past the bound is right')
  t.equal(forms.of(inline()).shape, expected, 'and the first schema, after the digests kept were dropped')
  t.not(forms.of(requestedSchema().boolean('confirm')).shape, expected, 'another schema, another digest')
})
