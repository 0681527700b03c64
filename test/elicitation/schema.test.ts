import t from 'tap'
import { requestedSchema, schemaDigest, schemaJson } from '../../lib/elicitation/schema.js'

t.test('renders the cabin example', async (t) => {
  const schema = requestedSchema().boolean('confirm').choose('cabin', ['economy', 'business'])
  t.same(schema.toJSON(), {
    type: 'object',
    properties: {
      confirm: { type: 'boolean' },
      cabin: { type: 'string', enum: ['economy', 'business'] },
    },
    required: ['confirm', 'cabin'],
  })
  t.equal(JSON.stringify(schema), JSON.stringify(schema.schema))
})

t.test('renders every option given, in spec key order', async (t) => {
  const schema = requestedSchema()
    .string('email', { title: 'Email', description: 'Where to write', minLength: 3, maxLength: 99, format: 'email', default: 'a@b.c' })
    .number('weight', { title: 'Weight', description: 'kg', minimum: 0.5, maximum: 30, default: 2.5 })
    .integer('seats', { minimum: 1, maximum: 9, default: 1 })
    .boolean('window', { title: 'Window', description: 'Seat by the window', default: true })
    .choose('cabin', [{ value: 'y', title: 'Economy' }, { value: 'j', title: 'Business' }], { title: 'Cabin', description: 'Class', default: 'j' })
    .chooseMany('meals', ['veg', 'fish'], { title: 'Meals', description: 'Any', minItems: 1, maxItems: 2, default: ['veg'] })
    .chooseMany('extras', [{ value: 'bag', title: 'Bag' }, { value: 'wifi', title: 'Wi-Fi' }], { default: ['wifi'] })
  const { properties } = schema.schema
  t.strictSame(Object.keys(properties), ['email', 'weight', 'seats', 'window', 'cabin', 'meals', 'extras'])
  t.strictSame(properties.email, { type: 'string', title: 'Email', description: 'Where to write', minLength: 3, maxLength: 99, format: 'email', default: 'a@b.c' })
  t.strictSame(properties.weight, { type: 'number', title: 'Weight', description: 'kg', minimum: 0.5, maximum: 30, default: 2.5 })
  t.strictSame(properties.seats, { type: 'integer', minimum: 1, maximum: 9, default: 1 })
  t.strictSame(properties.window, { type: 'boolean', title: 'Window', description: 'Seat by the window', default: true })
  t.strictSame(properties.cabin, { type: 'string', title: 'Cabin', description: 'Class', oneOf: [{ const: 'y', title: 'Economy' }, { const: 'j', title: 'Business' }], default: 'j' })
  t.strictSame(properties.meals, { type: 'array', title: 'Meals', description: 'Any', minItems: 1, maxItems: 2, items: { type: 'string', enum: ['veg', 'fish'] }, default: ['veg'] })
  t.strictSame(properties.extras, { type: 'array', items: { anyOf: [{ const: 'bag', title: 'Bag' }, { const: 'wifi', title: 'Wi-Fi' }] }, default: ['wifi'] })
  t.same(Object.keys(properties.email), ['type', 'title', 'description', 'minLength', 'maxLength', 'format', 'default'])
  t.same(Object.keys(properties.cabin), ['type', 'title', 'description', 'oneOf', 'default'])
  t.same(Object.keys(properties.meals), ['type', 'title', 'description', 'minItems', 'maxItems', 'items', 'default'])
})

t.test('optional fields stay out of required', async (t) => {
  const schema = requestedSchema().string('name').string('note', { optional: true, title: undefined })
  t.strictSame(schema.toJSON().required, ['name'])
  t.strictSame(schema.schema.properties.note, { type: 'string' })
  t.strictSame(requestedSchema().boolean('ok', { optional: true }).toJSON(), { type: 'object', properties: { ok: { type: 'boolean' } } })
  t.strictSame(requestedSchema().toJSON(), { type: 'object', properties: {} })
})

t.test('builders are immutable and reusable', async (t) => {
  const base = requestedSchema().boolean('confirm')
  const a = base.string('a')
  const b = base.string('b')
  t.not(a, base)
  t.strictSame(Object.keys(base.schema.properties), ['confirm'])
  t.strictSame(Object.keys(a.schema.properties), ['confirm', 'a'])
  t.strictSame(Object.keys(b.schema.properties), ['confirm', 'b'])
  t.equal(a.schema, a.toJSON(), 'rendered once')
  t.ok(Object.isFrozen(a.schema))
  t.ok(Object.isFrozen(a.schema.properties.confirm))
  t.throws(() => { (a.schema.required as string[]).push('x') }, TypeError)
  const picked: Array<'x' | 'y'> = ['x']
  requestedSchema().chooseMany('m', ['x', 'y'], { default: picked }).toJSON()
  t.notOk(Object.isFrozen(picked), 'the caller default stays mutable')
})

t.test('keeps a field named __proto__', async (t) => {
  const schema = requestedSchema().boolean('__proto__')
  t.ok(Object.hasOwn(schema.schema.properties, '__proto__'))
  t.strictSame(schema.schema.required, ['__proto__'])
})

t.test('a schema without required fields renders none, and its answers may be empty', async (t) => {
  const loose = requestedSchema().string('note', { optional: true })
  t.same(loose.schema, { type: 'object', properties: { note: { type: 'string' } } })
})

t.test('rejects bad field names', async (t) => {
  const named = /a field name must be a non-empty string/
  t.throws(() => requestedSchema().string(''), { code: 'FST_MOCAPI_INVALID_REQUESTED_SCHEMA', message: named })
  t.throws(() => requestedSchema().string(1 as unknown as string), { code: 'FST_MOCAPI_INVALID_REQUESTED_SCHEMA', message: named })
  t.throws(() => requestedSchema().string('a').boolean('a'), { code: 'FST_MOCAPI_INVALID_REQUESTED_SCHEMA', message: 'requestedSchema field "a": duplicate field name' })
})

t.test('rejects bad strings', async (t) => {
  const bad = (opts: object, message: RegExp): void => {
    t.throws(() => requestedSchema().string('name', opts as {}), { code: 'FST_MOCAPI_INVALID_REQUESTED_SCHEMA', message }, JSON.stringify(opts))
  }
  bad({ minLength: 3, maxLength: 2 }, /field "name": minLength is greater than maxLength/)
  bad({ minLength: -1 }, /field "name": minLength must be a non-negative integer/)
  bad({ maxLength: 1.5 }, /maxLength must be a non-negative integer/)
  bad({ format: 'phone' }, /field "name": unknown format "phone"/)
  bad({ default: 3 }, /field "name": default does not fit/)
  bad({ default: 'ab', minLength: 3 }, /default does not fit/)
  bad({ default: 'abcd', maxLength: 3 }, /default does not fit/)
  t.ok(requestedSchema().string('name', { minLength: 3, maxLength: 3, default: 'abc' }))
  t.strictSame(requestedSchema().string('name', { default: '' }).schema.properties.name, { type: 'string', default: '' })
})

t.test('rejects bad numbers', async (t) => {
  const bad = (kind: 'number' | 'integer', opts: object, message: RegExp): void => {
    t.throws(() => requestedSchema()[kind]('n', opts as {}), { code: 'FST_MOCAPI_INVALID_REQUESTED_SCHEMA', message }, kind + JSON.stringify(opts))
  }
  bad('number', { minimum: 2, maximum: 1 }, /field "n": minimum is greater than maximum/)
  bad('number', { default: '1' }, /field "n": default does not fit/)
  bad('number', { default: 0, minimum: 1 }, /default does not fit/)
  bad('number', { default: 5, maximum: 4 }, /default does not fit/)
  bad('integer', { default: 1.5 }, /default does not fit/)
  t.ok(requestedSchema().number('n', { minimum: 1, default: 1.5 }).integer('i', { maximum: 2, default: 2 }))
})

t.test('rejects bad booleans', async (t) => {
  t.throws(() => requestedSchema().boolean('ok', { default: 'yes' as unknown as boolean }), /field "ok": default does not fit/)
})

t.test('rejects bad choices', async (t) => {
  const bad = (choices: unknown, message: RegExp, opts: object = {}): void => {
    t.throws(() => requestedSchema().choose('c', choices as string[], opts), { code: 'FST_MOCAPI_INVALID_REQUESTED_SCHEMA', message }, JSON.stringify(choices))
  }
  bad([], /field "c": choices must be a non-empty array/)
  bad('ab', /choices must be a non-empty array/)
  bad(['a', 'a'], /field "c": duplicate choice value/)
  bad([{ value: 'a', title: 'A' }, { value: 'a', title: 'B' }], /duplicate choice value/)
  bad(['a', { value: 'b', title: 'B' }], /choices must be all strings or all \{ value, title \}/)
  bad([null], /choices must be all strings/)
  bad([{ value: 1, title: 'A' }], /choices must be all strings/)
  bad([{ value: 'a' }], /choices must be all strings/)
  bad(['a', 'b'], /field "c": default is not among the choices/, { default: 'z' })
})

t.test('rejects bad multi selects', async (t) => {
  const bad = (opts: object, message: RegExp): void => {
    t.throws(() => requestedSchema().chooseMany('m', ['a', 'b', 'c'], opts), { code: 'FST_MOCAPI_INVALID_REQUESTED_SCHEMA', message }, JSON.stringify(opts))
  }
  bad({ minItems: 2, maxItems: 1 }, /field "m": minItems is greater than maxItems/)
  bad({ minItems: -1 }, /minItems must be a non-negative integer/)
  bad({ default: 'a' }, /field "m": default does not fit/)
  bad({ default: ['z'] }, /default does not fit/)
  bad({ default: ['a'], minItems: 2 }, /default does not fit/)
  bad({ default: ['a', 'b'], maxItems: 1 }, /default does not fit/)
  bad({ default: ['a', 'a'] }, /default does not fit/)
  t.throws(() => requestedSchema().chooseMany('m', []), /field "m": choices must be a non-empty array/)
  t.ok(requestedSchema().chooseMany('m', ['a', 'b'], { minItems: 0, maxItems: 2, default: [] }))
})

t.test('a builder\'s JSON text is that of its rendered schema, made once', async (t) => {
  const builders = {
    empty: requestedSchema(),
    optional: requestedSchema().boolean('ok', { optional: true }),
    cabin: requestedSchema().boolean('confirm').choose('cabin', ['economy', 'business']),
    every: requestedSchema()
      .string('e\u00e9"\\', { title: 'Quote " and \u2028', minLength: 1, format: 'email' })
      .number('w', { minimum: -1.5, default: 0 })
      .choose('c', [{ value: 'y', title: 'Economy' }], { optional: true })
      .chooseMany('m', ['veg', 'fish'], { maxItems: 2, default: ['veg'] })
      .string('__proto__', { optional: true }),
  }
  for (const [name, builder] of Object.entries(builders)) {
    const text = schemaJson(builder)
    t.equal(text, JSON.stringify(builder.schema), name)
    t.equal(schemaJson(builder), text, `${name}: made once`)
  }
  const fresh = requestedSchema().string('a').string('b', { optional: true })
  t.equal(schemaJson(fresh), '{"type":"object","properties":{"a":{"type":"string"},"b":{"type":"string"}},"required":["a"]}',
    'the text of a fresh builder')
  t.ok(Object.isFrozen(fresh.schema.properties.b))
})

t.test('an identical call renders the same schema and digest; any difference gives its own', async (t) => {
  const make = () => requestedSchema()
    .string('email', { title: 'Email', format: 'email', minLength: 3 })
    .number('weight', { minimum: -0, maximum: 30 })
    .integer('seats', { default: 1, optional: true })
    .boolean('ok', { default: true })
    .choose('cabin', [{ value: 'y', title: 'Economy' }, { value: 'j', title: 'Business' }], { default: 'j' })
    .chooseMany('meals', ['veg', 'fish'], { default: ['veg'], maxItems: 2 })
  t.strictSame(make().schema, make().schema)
  t.equal(schemaDigest(make()), schemaDigest(make()))
  t.equal(schemaDigest(make()).length, 22, '128 bits, base64url')

  // Each of these differs from the base call in one input only, in ways a careless key would merge.
  const base = requestedSchema().string('a|b', { title: 'x' })
  const variants = {
    'another name': requestedSchema().string('a', { title: '|bx' }),
    'another title': requestedSchema().string('a|b', { title: 'x|' }),
    'another kind': requestedSchema().choose('a|b', ['x'], { title: 'x' }),
    optional: requestedSchema().string('a|b', { title: 'x', optional: true }),
    'no title': requestedSchema().string('a|b'),
    'a number': requestedSchema().number('a|b', { title: 'x' }),
    'choices joined': requestedSchema().choose('a|b', ['x,y']),
    'choices apart': requestedSchema().choose('a|b', ['x', 'y']),
    'titled choice': requestedSchema().choose('a|b', [{ value: 'x', title: 'x' }]),
  }
  const digests = new Set([schemaDigest(base)])
  for (const [what, builder] of Object.entries(variants)) {
    t.not(JSON.stringify(builder.schema), JSON.stringify(base.schema), `${what}: its own schema`)
    t.notOk(digests.has(schemaDigest(builder)), `${what}: its own digest`)
    digests.add(schemaDigest(builder))
  }
  t.equal(schemaDigest({ schema: base.schema } as never), schemaDigest(base), 'an object with only a rendered schema digests the same')
  const picked = ['a', 'b']
  const fromArray = requestedSchema().choose('m', picked)
  picked[1] = 'z'
  t.strictSame(fromArray.schema.properties.m, { type: 'string', enum: ['a', 'b'] }, 'a builder holds a copy of its choices')
  t.strictSame(requestedSchema().boolean('b', { default: false }).schema.properties.b, { type: 'boolean', default: false })
  t.throws(() => requestedSchema().string('s', { title: 'ok', default: { toString: () => 'x' } as unknown as string }), /default does not fit/)
  t.throws(() => requestedSchema().string('s', null as never), { code: 'FST_MOCAPI_INVALID_REQUESTED_SCHEMA', message: /options must be an object/ })
})

t.test('invalid calls still throw, however close to a valid one', async (t) => {
  const valid = requestedSchema().boolean('flag')
  t.throws(() => requestedSchema().boolean('flag', [] as never), { code: 'FST_MOCAPI_INVALID_REQUESTED_SCHEMA' })
  t.throws(() => requestedSchema().boolean('flag', null as never), { code: 'FST_MOCAPI_INVALID_REQUESTED_SCHEMA' })
  t.throws(() => requestedSchema().choose('pick', 'ab' as never), { code: 'FST_MOCAPI_INVALID_REQUESTED_SCHEMA' })
  for (let i = 0; i < 2; i++) t.throws(() => requestedSchema().boolean('flag', { default: 'no' as never }), { code: 'FST_MOCAPI_INVALID_REQUESTED_SCHEMA' })
  t.throws(() => valid.boolean('flag'), { code: 'FST_MOCAPI_INVALID_REQUESTED_SCHEMA' }, 'a duplicate name on a valid builder')
})
