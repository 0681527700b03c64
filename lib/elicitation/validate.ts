/**
 * Checks elicitation answers against the requested schema, with one shared Ajv instance.
 * Compiling is the costly part, so validators are compiled once per builder and reused.
 */
import { Ajv, type ErrorObject } from 'ajv'
import addFormats from 'ajv-formats'
import type { PrimitiveSchemaDefinition, RequestedSchema, RequestedSchemaBuilder } from './schema.js'

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
  const validate = ajv.compile(schema.required === undefined
    ? { type: 'object', properties }
    : { type: 'object', properties, required: schema.required })
  return (content) => {
    if (validate(content)) return { ok: true }
    const [error] = validate.errors as ErrorObject[]
    return { ok: false, message: `${where(error.instancePath)} ${error.message}` }
  }
}

const validators = new WeakMap<object, AnswerValidator<any>>()

/** The validator of a builder's schema, compiled on first use and then reused. */
export function validatorFor<T extends object> (builder: RequestedSchemaBuilder<T>): AnswerValidator<T> {
  let validator = validators.get(builder)
  if (validator === undefined) {
    validator = compileAnswerValidator(builder.schema)
    validators.set(builder, validator)
  }
  return validator
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
