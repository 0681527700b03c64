import t from 'tap'
import { requestedSchema } from '../../lib/elicitation/schema.js'
import { compileAnswerValidator, validateElicitResult, validatorFor } from '../../lib/elicitation/validate.js'

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
  .chooseMany('perks', [{ value: 'lounge', title: 'Lounge' }], { optional: true })
  .boolean('my field', { optional: true })

t.test('accepts content that fits', async (t) => {
  const check = validatorFor(flight)
  t.strictSame(check({ confirm: true, cabin: 'economy' }), { ok: true })
  t.strictSame(check({
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
    perks: ['lounge'],
    'my field': true,
    extra: 'ignored',
  }), { ok: true })
})

t.test('names the offending field', async (t) => {
  const check = validatorFor(flight)
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
    [{ ...base, perks: ['spa'] }, 'content.perks[0] must be equal to one of the allowed values'],
    [{ ...base, 'my field': 'yes' }, 'content["my field"] must be boolean'],
    [null, 'content must be object'],
    [['confirm'], 'content must be object'],
  ]
  for (const [content, message] of cases) t.strictSame(check(content), { ok: false, message }, message)
})

t.test('decodes escaped pointer segments', async (t) => {
  const check = compileAnswerValidator(requestedSchema().integer('a/b~c').schema)
  t.strictSame(check({ 'a/b~c': 'x' }), { ok: false, message: 'content["a/b~c"] must be integer' })
})

t.test('compiles hand-written schemas without required', async (t) => {
  const check = compileAnswerValidator({ type: 'object', properties: { n: { type: 'number' } } })
  t.strictSame(check({}), { ok: true })
  t.strictSame(check({ n: 'x' }), { ok: false, message: 'content.n must be number' })
})

t.test('compiles once per builder', async (t) => {
  t.equal(validatorFor(flight), validatorFor(flight))
})

t.test('checks elicit results', async (t) => {
  const check = validatorFor(requestedSchema().boolean('confirm'))
  t.strictSame(validateElicitResult({ action: 'accept', content: { confirm: true } }, check),
    { ok: true, value: { action: 'accept', content: { confirm: true } } })
  t.strictSame(validateElicitResult({ action: 'decline', content: { junk: 1 } }, check), { ok: true, value: { action: 'decline' } })
  t.strictSame(validateElicitResult({ action: 'cancel' }, check), { ok: true, value: { action: 'cancel' } })
  t.strictSame(validateElicitResult({ action: 'accept', content: {} }, check),
    { ok: false, message: "content must have required property 'confirm'" })
  t.strictSame(validateElicitResult({ action: 'accept' }, check), { ok: false, message: 'content must be object' })
  const badAction = { ok: false, message: 'result.action must be one of accept, decline, cancel' }
  t.strictSame(validateElicitResult({ action: 'ACCEPT' }, check), badAction)
  t.strictSame(validateElicitResult({}, check), badAction)
  for (const value of [null, 'accept', [], undefined]) {
    t.strictSame(validateElicitResult(value, check), { ok: false, message: 'result must be an object' })
  }
})

t.test('builders that render the same schema share one validator, in a bounded cache', async (t) => {
  const make = () => requestedSchema().string('city').integer('nights', { minimum: 1 })
  const first = validatorFor(make())
  t.equal(validatorFor(make()), first, 'a new builder with the same schema reuses the validator')
  t.not(validatorFor(requestedSchema().string('town')), first)
  for (let i = 0; i < 1000; i++) validatorFor(requestedSchema().integer(`n${i}`))
  t.not(validatorFor(make()), first, 'the oldest schema was evicted after 1000 others')
})

t.test('an object that only has a rendered schema gets a validator too', async (t) => {
  const handMade = { schema: { type: 'object', properties: { code: { type: 'string', minLength: 4 } }, required: ['code'] } }
  const check = validatorFor(handMade as any)
  t.strictSame(check({ code: '1234' }), { ok: true })
  t.strictSame(check({ code: '12' }), { ok: false, message: 'content.code must NOT have fewer than 4 characters' })
  t.equal(validatorFor({ schema: { ...handMade.schema } } as any), check, 'shared by the JSON of the schema')
})
