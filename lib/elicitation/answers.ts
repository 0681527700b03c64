/**
 * Checks the answers a client gives to input requests before they enter the ledger. A form
 * answer keeps only the fields its requested schema declares, each of the type declared, so
 * nothing else reaches the handler or rides in later tokens.
 */
import { digest } from '../digest.js'
import { firstError, type SchemaCompiler, type Validator } from '../json-schema.js'
import { deepFreeze, isPlainObject, type JsonObject } from '../protocol/wire.js'
import { isBuilder, schemaJson, type PrimitiveSchemaDefinition, type RequestedSchema, type RequestedSchemaBuilder } from './schema.js'

/** The most requested schemas a registration keeps. */
export const MAX_FORMS = 256

/** One answer from `inputResponses` once checked: the value the handler gets, or why it was refused. */
export type Checked = { ok: true, value: unknown } | { ok: false, message: string }

/** An elicitation result once checked: content only comes with `accept`. */
export type ElicitAnswer<T = Record<string, unknown>> =
  | { action: 'accept', content: T }
  | { action: 'decline' }
  | { action: 'cancel' }

/** The action of an elicitation result, or undefined when it is none of the three. */
function actionOf (value: unknown): 'accept' | 'decline' | 'cancel' | undefined {
  if (!isPlainObject(value) || !Object.hasOwn(value, 'action')) return undefined
  const action = value.action
  return action === 'accept' || action === 'decline' || action === 'cancel' ? action : undefined
}

const NOT_AN_OBJECT = { ok: false, message: 'result must be an object' } as const
const BAD_ACTION = { ok: false, message: 'result.action must be one of accept, decline, cancel' } as const

/** A URL-mode answer: only the action counts. */
export function checkUrlAnswer (value: unknown): Checked {
  if (!isPlainObject(value)) return NOT_AN_OBJECT
  const action = actionOf(value)
  return action === undefined ? BAD_ACTION : { ok: true, value: { action } }
}

/** A sampling answer: a `CreateMessageResult`. */
export function checkSamplingAnswer (value: unknown): Checked {
  if (!isPlainObject(value)) return NOT_AN_OBJECT
  if (value.role !== 'user' && value.role !== 'assistant') return { ok: false, message: 'result.role must be user or assistant' }
  const content = value.content
  if (Array.isArray(content) ? !content.every(isBlock) : !isBlock(content)) {
    return { ok: false, message: 'result.content must be a content block ({ type: string, … }) or an array of them' }
  }
  if (typeof value.model !== 'string') return { ok: false, message: 'result.model must be a string' }
  if (value.stopReason !== undefined && typeof value.stopReason !== 'string') return { ok: false, message: 'result.stopReason must be a string' }
  return { ok: true, value }
}

function isBlock (value: unknown): boolean {
  return isPlainObject(value) && typeof value.type === 'string'
}

/** A roots answer: `{ roots: [{ uri, name? }] }`; the handler gets the roots. */
export function checkRootsAnswer (value: unknown): Checked {
  const roots = isPlainObject(value) ? value.roots : undefined
  if (!Array.isArray(roots) || !roots.every((root) => isPlainObject(root) && typeof root.uri === 'string' && (root.name === undefined || typeof root.name === 'string'))) {
    return { ok: false, message: 'result.roots must be an array of { uri: string, name?: string }' }
  }
  return { ok: true, value: roots }
}

/**
 * Labelled choices become a plain `enum`, so a wrong value reads the same whatever the select;
 * multi selects take no value twice.
 */
function forAjv (property: PrimitiveSchemaDefinition): object {
  if ('oneOf' in property) return { type: 'string', enum: property.oneOf.map((c) => c.const) }
  if ('items' in property) {
    const items = 'anyOf' in property.items ? { type: 'string', enum: property.items.anyOf.map((c) => c.const) } : property.items
    return { ...property, items, uniqueItems: true }
  }
  return property
}

/** The schema answers are checked against: the requested one, with selects made plain. */
export function answerSchema (schema: RequestedSchema): object {
  const properties: JsonObject = {}
  for (const [name, property] of Object.entries(schema.properties)) {
    Object.defineProperty(properties, name, {
      value: forAjv(property),
      enumerable: true,
      writable: true,
      configurable: true
    })
  }
  return schema.required === undefined ? { type: 'object', properties } : { type: 'object', properties, required: schema.required }
}

/** Turns a failure path into the path named in messages: `content.cabin`, `content.seats[1]`. */
function where (path: string[]): string {
  return 'content' + path.map((key, depth) => {
    if (depth > 0) return `[${key}]`
    return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`
  }).join('')
}

/** What a registration keeps of one requested schema, for as long as it is asked. */
export interface Form {
  /** The digest standing for the schema in ledger fingerprints. */
  readonly shape: string
  /** The schema as sent, rendered and frozen once. */
  readonly schema: RequestedSchema
  /** The names of the fields it asks for: what an answer may carry. */
  readonly fields: readonly string[]
  /** Its validator and the schema it was compiled from, once an answer came. */
  answers: { schema: object, validate: Validator } | undefined
  used: number
}

/**
 * The requested schemas of one registration, keyed by their JSON text: a schema built inline on
 * every round is digested, rendered and compiled once, and the most recently used {@link MAX_FORMS}
 * are kept (bench/README.md#questions).
 */
export class FormAnswers {
  readonly #compiler: SchemaCompiler
  readonly #forms = new Map<string, Form>()
  #uses = 0

  constructor (compiler: SchemaCompiler) {
    this.#compiler = compiler
  }

  /** The form of a builder's schema. */
  of (builder: RequestedSchemaBuilder<object>): Form {
    const json = schemaJson(builder)
    const used = ++this.#uses
    let form = this.#forms.get(json)
    if (form !== undefined) {
      form.used = used
      return form
    }
    if (this.#forms.size >= MAX_FORMS) this.#evict()
    // A builder's schema is frozen; an object that only has one is read from its text, so later changes to it are not.
    const schema = isBuilder(builder) ? builder.schema : deepFreeze(JSON.parse(json) as RequestedSchema)
    form = { shape: digest('elicit', json), schema, fields: Object.keys(schema.properties), answers: undefined, used }
    this.#forms.set(json, form)
    return form
  }

  /** Checks an answer to a form; its validator is compiled on the first answer. */
  check (form: Form, value: unknown): Checked {
    if (!isPlainObject(value)) return NOT_AN_OBJECT
    const action = actionOf(value)
    if (action === undefined) return BAD_ACTION
    if (action !== 'accept') return { ok: true, value: { action } }
    const given = Object.hasOwn(value, 'content') ? value.content : undefined
    if (!isPlainObject(given)) return { ok: false, message: 'content must be an object' }
    // Only the declared fields, read as own properties: what the schema does not ask for never arrives.
    const content: JsonObject = {}
    for (const name of form.fields) {
      if (!Object.hasOwn(given, name)) continue
      // Assignment makes an own property of any name but __proto__, which it would take for the prototype.
      if (name === '__proto__') Object.defineProperty(content, name, { value: given[name], enumerable: true, writable: true, configurable: true })
      else content[name] = given[name]
    }
    if (form.answers === undefined) {
      const schema = answerSchema(form.schema)
      form.answers = { schema, validate: this.#compiler.compile(schema, 'a requested schema') }
    }
    const validate = form.answers.validate
    if (validate(content)) return { ok: true, value: { action, content } }
    const error = firstError(validate.errors)
    return { ok: false, message: `${where(error.path)} ${error.message}` }
  }

  /** Drops the least recently used form, found by a scan so a hit does not churn the Map (bench/README.md#churn). */
  #evict (): void {
    let oldest: string | undefined
    let oldestUse = Infinity
    for (const [json, form] of this.#forms) {
      if (form.used < oldestUse) {
        oldest = json
        oldestUse = form.used
      }
    }
    const form = this.#forms.get(oldest as string) as Form
    this.#forms.delete(oldest as string)
    if (form.answers !== undefined) this.#compiler.release(form.answers.schema)
  }
}
