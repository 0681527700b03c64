import t from 'tap'
import { build, call } from '../helpers.js'

// The conformance suite's JSON_SCHEMA_2020_12_FIXTURE (json-schema-2020-12, SEP-1613 and SEP-2106).
function fixture () {
  return {
    $schema: 'https://json-schema.org/draft/2020-12/schema',
    type: 'object',
    $defs: {
      address: {
        $anchor: 'addressDef',
        type: 'object',
        properties: {
          street: { type: 'string' },
          city: { type: 'string' },
        },
      },
    },
    properties: {
      name: { type: 'string' },
      address: { $ref: '#/$defs/address' },
      contactMethod: { type: 'string', enum: ['phone', 'email'] },
      phone: { type: 'string' },
      email: { type: 'string' },
    },
    allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
    if: {
      properties: { contactMethod: { const: 'phone' } },
      required: ['contactMethod'],
    },
    then: { required: ['phone'] },
    else: { required: ['email'] },
    additionalProperties: false,
  }
}

async function withFixture (t: Parameters<typeof build>[0]) {
  return build(t, {}, (app) => {
    app.mcp.tool({ name: 'json_schema_2020_12_tool', description: 'Tool with JSON Schema 2020-12 features', inputSchema: fixture() },
      (args) => JSON.stringify(args))
  })
}

t.test('tools/list returns a 2020-12 schema exactly as registered: $schema, $defs with $anchor, composition, conditionals', async (t) => {
  const app = await withFixture(t)
  const { body } = await call(app, 'tools/list')
  t.same(body.result.tools, [{ name: 'json_schema_2020_12_tool', description: 'Tool with JSON Schema 2020-12 features', inputSchema: fixture() }])
  t.equal(JSON.stringify(body.result.tools[0].inputSchema), JSON.stringify(fixture()), 'key order too')
  await call(app, 'tools/call', { name: 'json_schema_2020_12_tool', arguments: { email: 'a@example.com' } })
  t.same((await call(app, 'tools/list')).body.result.tools[0].inputSchema, fixture(), 'and after a call has run the validator')
})

t.test('tools/call validates against every part of it', async (t) => {
  const app = await withFixture(t)
  const run = async (args: object) => (await call(app, 'tools/call', { name: 'json_schema_2020_12_tool', arguments: args })).body.result
  const accepted = [
    { email: 'a@example.com' },
    { contactMethod: 'phone', phone: '555' },
    { name: 'Ada', contactMethod: 'email', email: 'a@example.com', address: { street: '1 Main', city: 'Paris' } },
    { phone: '555', email: 'a@example.com' },
  ]
  for (const args of accepted) t.same((await run(args)).content, [{ type: 'text', text: JSON.stringify(args) }], JSON.stringify(args))
  const refused: Array<[object, RegExp]> = [
    [{}, /^Invalid arguments: arguments must have required property/],
    [{ phone: '555' }, /must have required property 'email'/],
    [{ contactMethod: 'phone', email: 'a@example.com' }, /must have required property 'phone'/],
    [{ contactMethod: 'fax', email: 'a@example.com' }, /arguments\.contactMethod must be equal to one of the allowed values/],
    [{ email: 'a@example.com', nickname: 'x' }, /arguments must not have property 'nickname'/],
    [{ email: 'a@example.com', address: { city: 5 } }, /arguments\.address\.city must be string/],
  ]
  for (const [args, message] of refused) {
    const result = await run(args)
    t.equal(result.isError, true, JSON.stringify(args))
    t.match(result.content[0].text, message, JSON.stringify(args))
  }
})
