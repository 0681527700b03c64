/** Answers are checked before they enter the ledger, so nothing undeclared reaches the handler or rides in tokens. */
import { digest } from '../seal/digest.js'
import { firstError, type SchemaCompiler, type Validator } from '../json-schema.js'
import { deepFreeze, isPlainObject, setOwn, type JsonObject } from '../protocol/wire.js'
import { isBuilder, sameSchema, schemaJson, type PrimitiveSchemaDefinition, type RequestedSchema, type RequestedSchemaBuilder } from './schema.js'

export const MAX_FORMS = 256
/** Builders kept to compare an inline one with: a handler asks a few questions. */
const RECENT_BUILDERS = 8

export type Checked = { ok: true, value: unknown } | { ok: false, message: string }

/** An elicitation result once checked: content only comes with `accept`. */
export type ElicitAnswer<T = Record<string, unknown>> =
  | { action: 'accept', content: T }
  | { action: 'decline' }
  | { action: 'cancel' }

function actionOf (value: unknown): 'accept' | 'decline' | 'cancel' | undefined {
  if (!isPlainObject(value) || !Object.hasOwn(value, 'action')) return undefined
  const action = value.action
  return action === 'accept' || action === 'decline' || action === 'cancel' ? action : undefined
}

const NOT_AN_OBJECT = { ok: false, message: 'result must be an object' } as const
const BAD_ACTION = { ok: false, message: 'result.action must be one of accept, decline, cancel' } as const

export function checkUrlAnswer (value: unknown): Checked {
  if (!isPlainObject(value)) return NOT_AN_OBJECT
  const action = actionOf(value)
  return action === undefined ? BAD_ACTION : { ok: true, value: { action } }
}

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

export function checkRootsAnswer (value: unknown): Checked {
  const roots = isPlainObject(value) ? value.roots : undefined
  if (!Array.isArray(roots) || !roots.every((root) => isPlainObject(root) && typeof root.uri === 'string' && (root.name === undefined || typeof root.name === 'string'))) {
    return { ok: false, message: 'result.roots must be an array of { uri: string, name?: string }' }
  }
  return { ok: true, value: roots }
}

/** Labelled choices become a plain `enum`, so a wrong value reads the same whatever the select. */
function forAjv (property: PrimitiveSchemaDefinition): object {
  if ('oneOf' in property) return { type: 'string', enum: property.oneOf.map((c) => c.const) }
  if ('items' in property) {
    const items = 'anyOf' in property.items ? { type: 'string', enum: property.items.anyOf.map((c) => c.const) } : property.items
    return { ...property, items, uniqueItems: true }
  }
  return property
}

function answerSchema (schema: RequestedSchema): object {
  const properties: JsonObject = {}
  for (const [name, property] of Object.entries(schema.properties)) {
    setOwn(properties, name, forAjv(property))
  }
  return schema.required === undefined ? { type: 'object', properties } : { type: 'object', properties, required: schema.required }
}

function where (path: string[]): string {
  return 'content' + path.map((key, depth) => {
    if (depth > 0) return `[${key}]`
    return /^[A-Za-z_$][\w$]*$/.test(key) ? `.${key}` : `[${JSON.stringify(key)}]`
  }).join('')
}

/** One requested schema of a registration: digested, rendered and frozen once; validator compiled on first answer. */
export interface Form {
  readonly shape: string
  /** The length of its JSON text, which a round's size budget counts. */
  readonly size: number
  readonly schema: RequestedSchema
  readonly fields: readonly string[]
  answers: { schema: object, validate: Validator } | undefined
  used: number
}

/** Forms by JSON text; an inline builder equal to one of the last found matches it (bench/README.md#questions). */
export class FormAnswers {
  readonly #compiler: SchemaCompiler
  readonly #forms = new Map<string, Form>()
  readonly #recent: Array<{ builder: RequestedSchemaBuilder<object>, form: Form }> = []
  #uses = 0

  constructor (compiler: SchemaCompiler) {
    this.#compiler = compiler
  }

  of (builder: RequestedSchemaBuilder<object>): Form {
    const used = ++this.#uses
    const built = isBuilder(builder)
    if (built) {
      for (const recent of this.#recent) {
        // An evicted form (used 0) is left to be found again by its text.
        if (recent.form.used !== 0 && (recent.builder === builder || sameSchema(recent.builder, builder))) {
          recent.form.used = used
          return recent.form
        }
      }
    }
    const json = schemaJson(builder)
    let form = this.#forms.get(json)
    if (form === undefined) {
      if (this.#forms.size >= MAX_FORMS) this.#evict()
      // A hand-made object's schema is read back from its text, so later changes to the object are not seen.
      const schema = built ? builder.schema : deepFreeze(JSON.parse(json) as RequestedSchema)
      const fields = Object.keys(schema.properties)
      form = { shape: digest('elicit', json), size: json.length, schema, fields, answers: undefined, used }
      this.#forms.set(json, form)
    }
    form.used = used
    if (built) {
      if (this.#recent.length >= RECENT_BUILDERS) this.#recent.pop()
      this.#recent.unshift({ builder, form })
    }
    return form
  }

  check (form: Form, value: unknown): Checked {
    if (!isPlainObject(value)) return NOT_AN_OBJECT
    const action = actionOf(value)
    if (action === undefined) return BAD_ACTION
    if (action !== 'accept') return { ok: true, value: { action } }
    const given = Object.hasOwn(value, 'content') ? value.content : undefined
    if (!isPlainObject(given)) return { ok: false, message: 'content must be an object' }
    // Only declared own properties: what the schema does not ask for never arrives.
    const content: JsonObject = {}
    for (const name of form.fields) {
      if (!Object.hasOwn(given, name)) continue
      // Assigning __proto__ would set the prototype, not an own property.
      if (name === '__proto__') setOwn(content, name, given[name])
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

  /** Finds the least recently used form by a scan, so a hit does not churn the Map (bench/README.md#churn). */
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
    form.used = 0
    if (form.answers !== undefined) this.#compiler.release(form.answers.schema)
  }
}
