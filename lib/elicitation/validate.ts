/**
 * Checks elicitation answers against the requested schema, with one shared Ajv instance.
 * Compiling is the costly part, so validators are compiled once per schema and reused.
 */
import { Ajv, type ErrorObject } from 'ajv'
import addFormats from 'ajv-formats'
import { digest } from '../digest.js'
import { SCHEMA_JSON, type PrimitiveSchemaDefinition, type RequestedSchema, type RequestedSchemaBuilder } from './schema.js'

// Ajv keeps every compiled schema alive, so compile per schema, never per request.
const ajv = new Ajv({ allErrors: false, strict: false })
addFormats.default(ajv, ['email', 'uri', 'date', 'date-time'])

/** The outcome of checking answer content. */
export type AnswerCheck = { ok: true } | { ok: false, message: string }

declare const answer: unique symbol

/** Checks the content of an accepted answer; `T` is the content type it guarantees. */
export type AnswerValidator<T = Record<string, unknown>> = ((content: unknown) => AnswerCheck) & { readonly [answer]?: T }

/** An elicitation result once checked: content only comes with `accept`. */
export type ElicitAnswer<T = Record<string, unknown>> =
  | { action: 'accept', content: T }
  | { action: 'decline' }
  | { action: 'cancel' }

/** Labelled choices become a plain `enum`, so a wrong value reads the same whatever the select. */
function forAjv (property: PrimitiveSchemaDefinition): object {
  if ('oneOf' in property) return { type: 'string', enum: property.oneOf.map((c) => c.const) }
  if ('items' in property && 'anyOf' in property.items) {
    return { ...property, items: { type: 'string', enum: property.items.anyOf.map((c) => c.const) } }
  }
  return property
}

/** Turns a JSON pointer into the path named in messages: `content.cabin`, `content.seats[1]`. */
function where (pointer: string): string {
  return 'content' + pointer.split('/').slice(1).map((segment, depth) => {
    const key = segment.replace(/~1/g, '/').replace(/~0/g, '~')
    if (depth > 0) return `[${key}]`
    return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`
  }).join('')
}

/** Compiles a checker of answer content for a requested schema. Compile once per schema. */
export function compileAnswerValidator (schema: RequestedSchema): AnswerValidator {
  const properties = Object.fromEntries(Object.entries(schema.properties).map(([name, p]) => [name, forAjv(p)]))
  const compiled = schema.required === undefined
    ? { type: 'object', properties }
    : { type: 'object', properties, required: schema.required }
  const validate = ajv.compile(compiled)
  ajv.removeSchema(compiled)
  return (content) => {
    if (validate(content)) return { ok: true }
    const [error] = validate.errors as ErrorObject[]
    return { ok: false, message: `${where(error.instancePath)} ${error.message}` }
  }
}

/** What mocapi keeps per requested schema: a short digest of its JSON text, and its validator once compiled. */
export interface SchemaInfo {
  readonly digest: string
  validator: AnswerValidator<any> | undefined
}

// Keyed by the schema's JSON text, so builders made per call (`requestedSchema()…` inside a
// handler) share one entry; bounded, and Ajv is told to forget each compiled schema.
const bySchema = new Map<string, SchemaInfo>()
const MAX_CACHED_SCHEMAS = 1000

/** The JSON text of a builder's schema; a hand-made object with a `schema` has it rendered. */
function schemaJson (builder: RequestedSchemaBuilder<object>): string {
  return (builder as { [SCHEMA_JSON]?: string })[SCHEMA_JSON] ?? JSON.stringify(builder.schema)
}

/** The entry of a builder's schema, made on first use. */
export function schemaInfo (builder: RequestedSchemaBuilder<object>): SchemaInfo {
  const json = schemaJson(builder)
  let info = bySchema.get(json)
  if (info === undefined) {
    info = { digest: digest('requestedSchema', json), validator: undefined }
    if (bySchema.size >= MAX_CACHED_SCHEMAS) bySchema.delete(bySchema.keys().next().value as string)
    bySchema.set(json, info)
  }
  return info
}

/** The validator of a builder's schema, compiled on first use and then reused. */
export function validatorFor<T extends object> (builder: RequestedSchemaBuilder<T>, info = schemaInfo(builder)): AnswerValidator<T> {
  info.validator ??= compileAnswerValidator(builder.schema)
  return info.validator
}

/** Checks an elicitation result: a known action and, for `accept`, content that passes the validator. */
export function validateElicitResult<T = Record<string, unknown>> (
  value: unknown,
  validator: AnswerValidator<T>
): { ok: true, value: ElicitAnswer<T> } | { ok: false, message: string } {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return { ok: false, message: 'result must be an object' }
  const { action, content } = value as { action?: unknown, content?: unknown }
  if (action === 'decline' || action === 'cancel') return { ok: true, value: { action } }
  if (action !== 'accept') return { ok: false, message: 'result.action must be one of accept, decline, cancel' }
  const check = validator(content)
  return check.ok ? { ok: true, value: { action, content: content as T } } : check
}
