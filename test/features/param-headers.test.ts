import t from 'tap'
import type { FastifyInstance } from 'fastify'
import http from 'node:http'
import net, { type AddressInfo } from 'node:net'
import type { McpContext } from '../../lib/context.js'
import { Handlers } from '../../lib/features/handlers.js'
import { requestedSchema } from '../../lib/index.js'
import { Tools } from '../../lib/features/tools.js'
import { SchemaCompiler } from '../../lib/json-schema.js'
import type { ReplayEngine } from '../../lib/replay/engine.js'
import { build, call, rpc } from '../helpers.js'
import { Scopes } from '../../lib/features/scopes.js'
import { Views } from '../../lib/features/views.js'
import type { Resources } from '../../lib/features/resources.js'

/** These tools take no task: nothing runs one. */

type Test = Parameters<typeof build>[0]

const region = { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } } }

/** An app with one tool `t` of `inputSchema`, which echoes its arguments. */
function withTool (t: Test, inputSchema: object = region): Promise<FastifyInstance> {
  return build(t, {}, (app) => {
    app.mcp.tool({ name: 't', inputSchema: inputSchema as Record<string, unknown> }, (args) => JSON.stringify(args))
  })
}

/** Calls `t` with `args` and `headers`; the status, and the echo or the error. */
async function callWith (app: FastifyInstance, args: object, headers: Record<string, string> = {}) {
  const { status, body } = await call(app, 'tools/call', { name: 't', arguments: args }, { headers })
  return { status, error: body.error, text: body.result?.content[0]?.text, isError: body.result?.isError }
}

function registering (inputSchema: object): () => void {
  return () => {
    new Tools(new Handlers({} as ReplayEngine, true), new SchemaCompiler(), new Scopes(undefined), new Views({} as Resources)).add({ name: 't', inputSchema: inputSchema as Record<string, unknown> }, () => 'x')
  }
}

t.test('registration refuses each annotation the spec does not allow, naming the tool and the property', async (t) => {
  const prop = (schema: object) => ({ type: 'object', properties: { p: schema } })
  const cases: Array<[string, object, RegExp]> = [
    ['not a string', prop({ type: 'string', 'x-mcp-header': 5 }), /inputSchema\.properties\.p: x-mcp-header must be a non-empty string, got 5/],
    ['null', prop({ type: 'string', 'x-mcp-header': null }), /inputSchema\.properties\.p: x-mcp-header must be a non-empty string, got null/],
    ['empty', prop({ type: 'string', 'x-mcp-header': '' }), /inputSchema\.properties\.p: x-mcp-header must be a non-empty string, got ""/],
    ['a space', prop({ type: 'string', 'x-mcp-header': 'My Region' }), /inputSchema\.properties\.p: x-mcp-header "My Region" must be an HTTP token/],
    ['a colon', prop({ type: 'string', 'x-mcp-header': 'a:b' }), /properties\.p: x-mcp-header "a:b" must be an HTTP token/],
    ['CR LF', prop({ type: 'string', 'x-mcp-header': 'a\r\nb' }), /properties\.p: x-mcp-header "a\\r\\nb" must be an HTTP token/],
    ['non-ASCII', prop({ type: 'string', 'x-mcp-header': 'Région' }), /properties\.p: x-mcp-header "Région" must be an HTTP token/],
    ['a separator', prop({ type: 'string', 'x-mcp-header': 'a/b' }), /must be an HTTP token/],
    ['type number', prop({ type: 'number', 'x-mcp-header': 'N' }), /properties\.p: x-mcp-header needs type "string", "integer" or "boolean", got "number"/],
    ['type object', prop({ type: 'object', 'x-mcp-header': 'N' }), /got "object"/],
    ['type array', prop({ type: 'array', 'x-mcp-header': 'N' }), /got "array"/],
    ['two types', prop({ type: ['string', 'null'], 'x-mcp-header': 'N' }), /needs type "string", "integer" or "boolean", got an array/],
    ['no type', prop({ enum: ['a'], 'x-mcp-header': 'N' }), /needs type "string", "integer" or "boolean", got undefined/],
    ['on the root', { type: 'object', 'x-mcp-header': 'Root' }, /tool "t" inputSchema: x-mcp-header is allowed only on a property reached from the root through "properties" alone/],
    ['under items', prop({ type: 'array', items: { type: 'string', 'x-mcp-header': 'I' } }), /inputSchema\.properties\.p\.items: x-mcp-header is allowed only on a property/],
    ['under items properties', prop({ type: 'array', items: { type: 'object', properties: { q: { type: 'string', 'x-mcp-header': 'Q' } } } }),
      /inputSchema\.properties\.p\.items\.properties\.q: x-mcp-header is allowed only/],
    ['under prefixItems', prop({ type: 'array', prefixItems: [{ type: 'string', 'x-mcp-header': 'I' }] }), /properties\.p\.prefixItems\[0\]: x-mcp-header is allowed only/],
    ['under oneOf', { type: 'object', oneOf: [{ properties: { q: { type: 'string', 'x-mcp-header': 'Q' } } }] }, /inputSchema\.oneOf\[0\]\.properties\.q: x-mcp-header/],
    ['under anyOf', prop({ anyOf: [{ type: 'string', 'x-mcp-header': 'Q' }] }), /properties\.p\.anyOf\[0\]: x-mcp-header/],
    ['under allOf', { type: 'object', allOf: [{ properties: { q: { type: 'string', 'x-mcp-header': 'Q' } } }] }, /inputSchema\.allOf\[0\]\.properties\.q/],
    ['under not', prop({ type: 'string', not: { type: 'string', 'x-mcp-header': 'Q' } }), /properties\.p\.not: x-mcp-header/],
    ['under if', { type: 'object', if: { properties: { q: { type: 'string', 'x-mcp-header': 'Q' } } } }, /inputSchema\.if\.properties\.q/],
    ['under then', { type: 'object', then: { properties: { q: { type: 'string', 'x-mcp-header': 'Q' } } } }, /inputSchema\.then\.properties\.q/],
    ['under else', { type: 'object', else: { properties: { q: { type: 'string', 'x-mcp-header': 'Q' } } } }, /inputSchema\.else\.properties\.q/],
    ['behind $ref', { type: 'object', properties: { p: { $ref: '#/$defs/P' } }, $defs: { P: { type: 'string', 'x-mcp-header': 'P' } } },
      /inputSchema\.\$defs\.P: x-mcp-header is allowed only/],
    ['in definitions', { type: 'object', definitions: { P: { type: 'string', 'x-mcp-header': 'P' } } }, /inputSchema\.definitions\.P/],
    ['in additionalProperties', { type: 'object', additionalProperties: { type: 'string', 'x-mcp-header': 'A' } }, /inputSchema\.additionalProperties: x-mcp-header/],
    ['in patternProperties', { type: 'object', patternProperties: { '^a': { type: 'string', 'x-mcp-header': 'A' } } }, /inputSchema\.patternProperties\["\^a"\]: x-mcp-header/],
    ['in dependentSchemas', { type: 'object', dependentSchemas: { a: { properties: { b: { type: 'string', 'x-mcp-header': 'B' } } } } },
      /inputSchema\.dependentSchemas\.a\.properties\.b/],
    ['in unevaluatedProperties', { type: 'object', unevaluatedProperties: { type: 'string', 'x-mcp-header': 'U' } }, /inputSchema\.unevaluatedProperties/],
    ['in contains', prop({ type: 'array', contains: { type: 'string', 'x-mcp-header': 'C' } }), /properties\.p\.contains/],
    ['in propertyNames', { type: 'object', propertyNames: { type: 'string', 'x-mcp-header': 'N' } }, /inputSchema\.propertyNames/],
    ['in an unknown keyword', { type: 'object', 'x-vendor': { nested: { type: 'string', 'x-mcp-header': 'V' } } }, /inputSchema\.x-vendor\.nested: x-mcp-header/],
    ['a reachable one first, a stray one after', { type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'A' } }, items: { 'x-mcp-header': 'B' } },
      /inputSchema\.items: x-mcp-header is allowed only/],
  ]
  for (const [label, schema, message] of cases) {
    t.throws(registering(schema), { code: 'FST_MOCAPI_INVALID_DEFINITION', message: /^mocapi: tool "t" / }, label)
    t.throws(registering(schema), { message }, label)
  }
})

t.test('registration refuses a header name used twice, whatever its case', async (t) => {
  const schema = {
    type: 'object',
    properties: {
      a: { type: 'string', 'x-mcp-header': 'Region' },
      nested: { type: 'object', properties: { b: { type: 'integer', 'x-mcp-header': 'REGION' } } },
    },
  }
  t.throws(registering(schema), {
    code: 'FST_MOCAPI_INVALID_DEFINITION',
    message: 'mocapi: tool "t" inputSchema.properties.nested.properties.b: x-mcp-header "REGION" repeats the one of inputSchema.properties.a (header names are case-insensitive)',
  })
})

t.test('a refused tool is not registered, and the name stays free', async (t) => {
  const app = await build(t)
  t.throws(() => app.mcp.tool({ name: 'bad', inputSchema: { type: 'object', properties: { p: { type: 'number', 'x-mcp-header': 'P' } } } }, () => 'x'),
    { code: 'FST_MOCAPI_INVALID_DEFINITION', message: /tool "bad" inputSchema\.properties\.p/ })
  app.mcp.tool({ name: 'bad', inputSchema: { type: 'object', properties: { p: { type: 'integer', 'x-mcp-header': 'P' } } } }, () => 'x')
  t.same(app.mcp.listTools().map((tool) => tool.name), ['bad'])
})

t.test('what only looks like an annotation is not one', async (t) => {
  const schema = {
    type: 'object',
    properties: {
      'x-mcp-header': { type: 'object', description: 'a property of that name' },
      tags: { type: 'array', default: [{ 'x-mcp-header': 'D' }], examples: [{ 'x-mcp-header': 'E' }] },
      kind: { type: 'object', const: { 'x-mcp-header': 'C' }, enum: [{ 'x-mcp-header': 'C' }] },
    },
    required: ['x-mcp-header'],
    dependentRequired: { 'x-mcp-header': ['tags'] },
    $defs: { 'x-mcp-header': { type: 'string' } },
  }
  const app = await withTool(t, schema)
  t.same(await callWith(app, { 'x-mcp-header': {}, tags: [] }), { status: 200, error: undefined, text: '{"x-mcp-header":{},"tags":[]}', isError: undefined })
})

t.test('a valid annotation passes, at any depth of properties, and is listed unchanged', async (t) => {
  const schema = {
    type: 'object',
    properties: {
      Region: { type: 'string', 'x-mcp-header': 'Region' },
      count: { type: 'integer', 'x-mcp-header': "!#$%&'*+-.^_`|~09az" },
      a: { type: 'object', properties: { b: { type: 'object', properties: { c: { type: 'boolean', 'x-mcp-header': 'Deep' } } } } },
    },
  }
  const app = await withTool(t, schema)
  const { body } = await call(app, 'tools/list')
  t.same(body.result.tools[0].inputSchema, schema)
})

t.test('a hostile schema is refused quickly: too deep, too large, cyclic, or exploding through shared parts', async (t) => {
  let deep: Record<string, unknown> = { type: 'string' }
  for (let i = 0; i < 10_000; i++) deep = { type: 'object', properties: { p: deep } }
  const wide: Record<string, unknown> = {}
  for (let i = 0; i < 150_000; i++) wide[`p${i}`] = { type: 'string' }
  const cyclic: Record<string, unknown> = { type: 'object', properties: {} }
  ;(cyclic.properties as Record<string, unknown>).self = cyclic
  let shared: Record<string, unknown> = { type: 'string' }
  for (let i = 0; i < 25; i++) shared = { anyOf: [shared, shared] }
  const cases: Array<[string, object, RegExp]> = [
    ['deep', deep, /tool "t" inputSchema is nested deeper than 64 levels, too deep to check for x-mcp-header/],
    ['wide', { type: 'object', properties: wide }, /tool "t" inputSchema has more than 100000 values, too many to check for x-mcp-header/],
    ['cyclic', cyclic, /nested deeper than 64 levels/],
    ['shared', { type: 'object', properties: { p: shared } }, /more than 100000 values/],
  ]
  for (const [label, schema, message] of cases) {
    const started = Date.now()
    t.throws(registering(schema), { code: 'FST_MOCAPI_INVALID_DEFINITION', message }, label)
    t.ok(Date.now() - started < 2000, `${label} is refused in under 2 s`)
  }
  let fine: Record<string, unknown> = { type: 'string', 'x-mcp-header': 'Deep' }
  for (let i = 0; i < 30; i++) fine = { type: 'object', properties: { p: fine } }
  t.doesNotThrow(registering(fine), '30 levels of properties are fine')
})

t.test('a string argument needs its header, equal to it', async (t) => {
  const app = await withTool(t)
  t.same(await callWith(app, { region: 'eu-west' }, { 'mcp-param-region': 'eu-west' }), { status: 200, error: undefined, text: '{"region":"eu-west"}', isError: undefined })
  const missing = await callWith(app, { region: 'eu-west' })
  t.equal(missing.status, 400)
  t.same(missing.error, { code: -32020, message: 'Header mismatch: the Mcp-Param-Region header is required, since arguments.region has a value' })
  const other = await callWith(app, { region: 'eu-west' }, { 'mcp-param-region': 'us-east' })
  t.equal(other.status, 400)
  t.same(other.error, { code: -32020, message: 'Header mismatch: the Mcp-Param-Region header does not match arguments.region' })
  const caseDiffers = await callWith(app, { region: 'eu-west' }, { 'mcp-param-region': 'EU-WEST' })
  t.equal(caseDiffers.error.code, -32020, 'values are case-sensitive')
  t.equal((await callWith(app, { region: 'eu-west' }, { 'MCP-PARAM-REGION': 'eu-west' })).status, 200, 'header names are not')
  t.equal((await callWith(app, { region: 'eu-west' }, { 'mcp-param-region': ' \teu-west\t ' })).status, 200, 'spaces and tabs around the value are not part of it')
  t.equal((await callWith(app, { region: '' }, { 'mcp-param-region': '' })).status, 200, 'an empty string')
  t.equal((await callWith(app, { region: 'a\tb c' }, { 'mcp-param-region': 'a\tb c' })).status, 200, 'inner tab and space are plain')
  const repeated = await callWith(app, { region: 'eu' }, { 'mcp-param-region': ['eu', 'eu'] as unknown as string })
  t.same(repeated.error, { code: -32020, message: 'Header mismatch: the Mcp-Param-Region header does not match arguments.region' }, 'a repeated header reads as "eu, eu"')
})

t.test('an absent or null argument expects no header', async (t) => {
  const app = await withTool(t)
  t.same(await callWith(app, {}), { status: 200, error: undefined, text: '{}', isError: undefined })
  const sent = await callWith(app, {}, { 'mcp-param-region': 'eu' })
  t.equal(sent.status, 400)
  t.same(sent.error, { code: -32020, message: 'Header mismatch: the Mcp-Param-Region header is sent but arguments.region has no value' })
  const nullSent = await callWith(app, { region: null }, { 'mcp-param-region': 'eu' })
  t.equal(nullSent.error.code, -32020)
  const noArguments = await call(app, 'tools/call', { name: 't' }, { headers: { 'mcp-param-region': 'eu' } })
  t.equal(noArguments.body.error.code, -32020, 'no arguments at all')
  const nullQuiet = await callWith(app, { region: null })
  t.equal(nullQuiet.status, 200, 'null without a header passes the header check')
  t.equal(nullQuiet.isError, true, 'and the input schema then refuses it')
  t.match(nullQuiet.text, /arguments\.region must be string/)
})

t.test('a property named like an Object.prototype member is read only when given', async (t) => {
  const app = await withTool(t, { type: 'object', properties: { constructor: { type: 'string', 'x-mcp-header': 'Ctor' } } })
  t.equal((await callWith(app, {})).status, 200)
  t.equal((await callWith(app, {}, { 'mcp-param-ctor': 'x' })).error.code, -32020)
  t.equal((await callWith(app, { constructor: 'x' }, { 'mcp-param-ctor': 'x' })).status, 200)
})

t.test('base64 values are decoded strictly; a half sentinel is a literal', async (t) => {
  const app = await withTool(t)
  const cases: Array<[string, string, boolean]> = [
    ['Hello', '=?base64?SGVsbG8=?=', true],
    ['Hello', '=?base64?SGVsbG8?=', false],
    ['Hello', '=?base64?SGVs!!!bG8=?=', false],
    ['Hello', '=?base64?SGVsbG9=?=', false],
    ['Hello', '=?base64?SGVs bG8=?=', false],
    ['Hello', '=?base64?SGVsbG8==?=', false],
    ['Hello', '=?base64?SGVsbG8=\n?=', false],
    ['Hello', '=?BASE64?SGVsbG8=?=', false],
    ['SGVsbG8=', 'SGVsbG8=', true],
    ['=?base64?SGVsbG8=', '=?base64?SGVsbG8=', true],
    ['SGVsbG8=?=', 'SGVsbG8=?=', true],
    ['=?base64?', '=?base64?', true],
    ['=?base64?=', '=?base64?=', true],
    ['', '=?base64??=', true],
    ['?>', '=?base64?Pz4=?=', true],
    ['?>', '=?base64?Pz4-?=', false],
    ['\xff', '=?base64?/w==?=', false],
    ['Hello, 世界', '=?base64?SGVsbG8sIOS4lueVjA==?=', true],
    [' padded ', '=?base64?IHBhZGRlZCA=?=', true],
    ['line1\nline2', '=?base64?bGluZTEKbGluZTI=?=', true],
    ['=?base64?literal?=', '=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=', true],
    ['=?base64?literal?=', '=?base64?literal?=', false],
    ['café', 'café', false],
  ]
  for (const [value, headerValue, accepted] of cases) {
    const reply = await callWith(app, { region: value }, { 'mcp-param-region': headerValue })
    const label = `${JSON.stringify(value)} with ${JSON.stringify(headerValue)}`
    if (accepted) t.equal(reply.status, 200, label)
    else t.match(reply, { status: 400, error: { code: -32020, message: /^Header mismatch: the Mcp-Param-Region header / } }, label)
  }
  t.equal((await callWith(app, { region: 'Hello' }, { 'mcp-param-region': '=?base64?SGVsbG8?=' })).error.message,
    'Header mismatch: the Mcp-Param-Region header is malformed (not printable ASCII, nor valid =?base64?…?=)')
})

t.test('integers compare by value', async (t) => {
  const app = await withTool(t, { type: 'object', properties: { n: { type: 'integer', 'x-mcp-header': 'N' } } })
  const range = 'must be a decimal integer within ±9007199254740991'
  const cases: Array<[number, string, string | undefined]> = [
    [42, '42', undefined],
    [42, '042', undefined],
    [42, '42.0', undefined],
    [42, '42.000', undefined],
    [42, '=?base64?NDI=?=', undefined],
    [-7, '-7', undefined],
    [0, '-0', undefined],
    [0, '0', undefined],
    [9007199254740991, '9007199254740991', undefined],
    [-9007199254740991, '-9007199254740991', undefined],
    [42, '43', 'does not match arguments.n'],
    [42, '42.5', range],
    [42, '4.2e1', range],
    [42, '+42', range],
    [42, '0x2a', range],
    [42, 'forty-two', range],
    [42, '', range],
    [42, '4 2', range],
    [9007199254740992, '9007199254740992', range],
    [42, '00000000000000000000000000042', undefined],
    [42, '42424242424242424242', range],
  ]
  for (const [value, headerValue, refused] of cases) {
    const reply = await callWith(app, { n: value }, { 'mcp-param-n': headerValue })
    const label = `${value} with ${JSON.stringify(headerValue)}`
    if (refused === undefined) t.equal(reply.status, 200, label)
    else {
      t.equal(reply.status, 400, label)
      t.equal(reply.error.message, `Header mismatch: the Mcp-Param-N header ${refused}`, label)
    }
  }
  const wrongType = await callWith(app, { n: '42' }, { 'mcp-param-n': '42' })
  t.equal(wrongType.status, 200, 'a string where an integer belongs is left to the input schema')
  t.equal(wrongType.isError, true)
  t.match(wrongType.text, /arguments\.n must be integer/)
  t.equal((await callWith(app, { n: 4.5 })).isError, true, 'so is a fraction, even without a header')
})

t.test('booleans are true or false', async (t) => {
  const app = await withTool(t, { type: 'object', properties: { dry: { type: 'boolean', 'x-mcp-header': 'Dry-Run' } } })
  t.equal((await callWith(app, { dry: true }, { 'mcp-param-dry-run': 'true' })).status, 200)
  t.equal((await callWith(app, { dry: false }, { 'mcp-param-dry-run': 'false' })).status, 200)
  t.equal((await callWith(app, { dry: true }, { 'mcp-param-dry-run': '=?base64?dHJ1ZQ==?=' })).status, 200)
  t.equal((await callWith(app, { dry: true }, { 'mcp-param-dry-run': 'false' })).error.message,
    'Header mismatch: the Mcp-Param-Dry-Run header does not match arguments.dry')
  for (const bad of ['TRUE', 'True', '1', 'yes', '']) {
    t.equal((await callWith(app, { dry: true }, { 'mcp-param-dry-run': bad })).error.message,
      'Header mismatch: the Mcp-Param-Dry-Run header must be true or false', JSON.stringify(bad))
  }
  t.equal((await callWith(app, { dry: false })).error.code, -32020, 'false is a value: its header is required')
})

t.test('nested properties are read along their path', async (t) => {
  const app = await withTool(t, {
    type: 'object',
    properties: { address: { type: 'object', properties: { city: { type: 'string', 'x-mcp-header': 'City' } } } },
  })
  t.equal((await callWith(app, { address: { city: 'Paris' } }, { 'mcp-param-city': 'Paris' })).status, 200)
  t.equal((await callWith(app, { address: { city: 'Paris' } })).error.message,
    'Header mismatch: the Mcp-Param-City header is required, since arguments.address.city has a value')
  t.equal((await callWith(app, { address: {} })).status, 200)
  t.equal((await callWith(app, {})).status, 200)
  t.equal((await callWith(app, {}, { 'mcp-param-city': 'Paris' })).error.code, -32020)
  const notAnObject = await callWith(app, { address: 'Paris' }, { 'mcp-param-city': 'Paris' })
  t.equal(notAnObject.error.code, -32020, 'a path through a non-object has no value')
  t.equal((await callWith(app, { address: ['Paris'] })).isError, true, 'an array on the path has no value either; the schema refuses it')
})

t.test('property names that are not identifiers are named in brackets', async (t) => {
  const app = await withTool(t, { type: 'object', properties: { 'a.b': { type: 'string', 'x-mcp-header': 'AB' } } })
  t.equal((await callWith(app, { 'a.b': 'x' })).error.message, 'Header mismatch: the Mcp-Param-AB header is required, since arguments["a.b"] has a value')
})

t.test('every annotated property is checked, before the arguments are validated', async (t) => {
  const app = await withTool(t, {
    type: 'object',
    properties: {
      region: { type: 'string', 'x-mcp-header': 'Region' },
      priority: { type: 'integer', 'x-mcp-header': 'Priority' },
      note: { type: 'string' },
    },
    required: ['note'],
  })
  t.equal((await callWith(app, { region: 'eu', priority: 1, note: 'n' }, { 'mcp-param-region': 'eu', 'mcp-param-priority': '1' })).status, 200)
  t.equal((await callWith(app, { region: 'eu', priority: 1, note: 'n' }, { 'mcp-param-region': 'eu' })).error.message,
    'Header mismatch: the Mcp-Param-Priority header is required, since arguments.priority has a value')
  t.equal((await callWith(app, { region: 'eu' }, { 'mcp-param-region': 'us' })).error.code, -32020, 'the header first, though note is missing')
  t.equal((await callWith(app, { region: 'eu' }, { 'mcp-param-region': 'eu' })).isError, true, 'then the schema')
  t.equal((await callWith(app, { note: 'n' }, { 'mcp-param-other': 'x' })).status, 200, 'headers of no annotated property are ignored')
})

t.test('an unknown or hidden tool is unknown before any header is read', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'hidden', inputSchema: region, canAccess: () => false }, () => 'x')
  })
  const { status, body } = await call(app, 'tools/call', { name: 'hidden', arguments: { region: 'eu' } })
  t.equal(status, 200)
  t.equal(body.error.code, -32602)
})

t.test('each round of an interactive call is checked', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 't', inputSchema: region }, async (args, ctx) => {
      const answer = await ctx.elicit('Sure?', requestedSchema().boolean('ok'), { key: 'sure' })
      return `${args.region} ${answer.action}`
    })
  })
  const headers = { 'mcp-param-region': 'eu' }
  const first = await call(app, 'tools/call', { name: 't', arguments: { region: 'eu' } }, { headers })
  t.equal(first.body.result.resultType, 'input_required')
  const retry = { name: 't', arguments: { region: 'eu' }, inputResponses: { sure: { action: 'accept', content: { ok: true } } }, requestState: first.body.result.requestState }
  t.equal((await call(app, 'tools/call', retry)).body.error.code, -32020)
  t.equal((await call(app, 'tools/call', retry, { headers })).body.result.content[0].text, 'eu accept')
})

t.test('only 2026-07-28 requests are checked: 2025-era clients never send these headers', async (t) => {
  const engine = { run: async (_ctx: unknown, _label: string, run: () => unknown) => ({ kind: 'complete', value: await run(), round: 1 }) } as unknown as ReplayEngine
  const tools = new Tools(new Handlers(engine, true), new SchemaCompiler(), new Scopes(undefined), new Views({} as Resources))
  const callTool = async (ctx: McpContext) => {
    const resolved = await tools.resolve(ctx)
    return 'tool' in resolved ? await tools.run(ctx, resolved) : resolved
  }
  tools.add({ name: 't', inputSchema: region }, (args) => `region ${args.region}`)
  const context = (protocolVersion: string) => ({
    params: { name: 't', arguments: { region: 'eu' } }, protocolVersion, request: { headers: {} },
  }) as unknown as McpContext
  t.same(await callTool(context('2025-11-25')), { content: [{ type: 'text', text: 'region eu' }] })
  await t.rejects(callTool(context('2026-07-28')), { code: -32020, statusCode: 400 })
})

/** A mocapi app with the `t` tool listening on 127.0.0.1. */
async function listening (t: Test) {
  const app = await withTool(t)
  await app.listen({ host: '127.0.0.1', port: 0 })
  return (app.server.address() as AddressInfo).port
}

/** One `tools/call` of `t` over HTTP; `headers` are raw header lines, so a name may repeat. */
function post (port: number, args: object, headers: Array<[string, string]>): Promise<{ status: number, type: string, json: any }> {
  const request = rpc('tools/call', { name: 't', arguments: args }, { id: 9 })
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/mcp', agent: false }, (response) => {
      let body = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => { body += chunk })
      response.on('end', () => resolve({ status: response.statusCode as number, type: String(response.headers['content-type']), json: JSON.parse(body) }))
    })
    req.on('error', reject)
    for (const [name, value] of Object.entries(request.headers as Record<string, string>)) req.setHeader(name, value)
    const extra = new Map<string, string[]>()
    for (const [name, value] of headers) extra.set(name, [...(extra.get(name) ?? []), value])
    for (const [name, values] of extra) req.setHeader(name, values)
    req.end(JSON.stringify(request.payload))
  })
}

t.test('over http: the same rules, with json-rpc errors the client can read', async (t) => {
  const port = await listening(t)
  const ok = await post(port, { region: 'Hello' }, [['Mcp-Param-Region', 'Hello']])
  t.equal(ok.status, 200)
  t.equal(ok.json.result.content[0].text, '{"region":"Hello"}')
  t.equal((await post(port, { region: 'Hello' }, [['Mcp-Param-Region', '=?base64?SGVsbG8=?=']])).status, 200)
  t.equal((await post(port, { region: 'SGVsbG8=' }, [['Mcp-Param-Region', 'SGVsbG8=']])).status, 200)
  t.equal((await post(port, { region: '=?base64?SGVsbG8=' }, [['Mcp-Param-Region', '=?base64?SGVsbG8=']])).status, 200)
  t.equal((await post(port, { region: 'Hello' }, [['MCP-PARAM-REGION', '   Hello   ']])).status, 200)
  const refusals: Array<[string, object, Array<[string, string]>]> = [
    ['bad padding', { region: 'Hello' }, [['Mcp-Param-Region', '=?base64?SGVsbG8?=']]],
    ['not the alphabet', { region: 'Hello' }, [['Mcp-Param-Region', '=?base64?SGVs!!!bG8=?=']]],
    ['missing', { region: 'test-value' }, []],
    ['repeated', { region: 'Hello' }, [['Mcp-Param-Region', 'Hello'], ['Mcp-Param-Region', 'Hello']]],
    ['unexpected', {}, [['Mcp-Param-Region', 'Hello']]],
  ]
  for (const [label, args, headers] of refusals) {
    const reply = await post(port, args, headers)
    t.equal(reply.status, 400, label)
    t.match(reply.type, /^application\/json/, label)
    t.match(reply.json, { jsonrpc: '2.0', id: 9, error: { code: -32020, message: /^Header mismatch: the Mcp-Param-Region header / } }, label)
  }
})

t.test('over http: raw bytes that are not ASCII are refused, and the next request is served', async (t) => {
  const port = await listening(t)
  const request = rpc('tools/call', { name: 't', arguments: { region: 'café' } }, { id: 5 })
  const body = Buffer.from(JSON.stringify(request.payload))
  const head = Object.entries(request.headers as Record<string, string>).map(([name, value]) => `${name}: ${value}\r\n`).join('')
  const reply = await new Promise<string>((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1', () => socket.end(Buffer.concat([
      Buffer.from(`POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nconnection: close\r\n${head}content-length: ${body.length}\r\nmcp-param-region: `),
      Buffer.from('café'),
      Buffer.from('\r\n\r\n'),
      body,
    ])))
    let text = ''
    socket.setEncoding('latin1')
    socket.on('data', (chunk: string) => { text += chunk })
    socket.on('error', reject)
    socket.on('close', () => resolve(text))
  })
  t.match(reply, /^HTTP\/1\.1 400 /)
  t.match(JSON.parse(reply.slice(reply.indexOf('\r\n\r\n') + 4)), { id: 5, error: { code: -32020, message: /Mcp-Param-Region header is malformed/ } })
  const encoded = await post(port, { region: 'café' }, [['Mcp-Param-Region', `=?base64?${Buffer.from('café').toString('base64')}?=`]])
  t.equal(encoded.status, 200)
  t.equal(encoded.json.result.content[0].text, '{"region":"café"}')
})
