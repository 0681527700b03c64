import { InvalidRequestedSchemaError } from '../errors.js'
import { digest } from '../digest.js'
import { deepFreeze } from '../protocol/wire.js'
import type { Choice, Choices, FieldOptions, PrimitiveSchemaDefinition, RequestedSchema, RequestedSchemaBuilder, TitledChoice } from './schema-types.js'

/**
 * The `requestedSchema()` builder: the one way a mocapi tool describes the input it elicits.
 * It only produces the flat MCP 2026-07-28 shapes, and infers the type of the answer content.
 */

export type {
  StringFormat,
  StringSchema,
  NumberSchema,
  BooleanSchema,
  UntitledSingleSelectEnumSchema,
  TitledChoice,
  TitledSingleSelectEnumSchema,
  UntitledMultiSelectEnumSchema,
  TitledMultiSelectEnumSchema,
  PrimitiveSchemaDefinition,
  RequestedSchema,
  FieldOptions,
  StringOptions,
  NumberOptions,
  BooleanOptions,
  ChooseOptions,
  ChooseManyOptions,
  Choice,
  Choices,
  ChoiceValue,
  Optionality,
  RequestedSchemaBuilder,
  Infer,
} from './schema-types.js'

interface Field {
  readonly name: string
  readonly optional: boolean
  readonly schema: PrimitiveSchemaDefinition
}

type AnyOptions = FieldOptions & Record<string, any> & { optional?: boolean }

const FORMATS: readonly unknown[] = ['email', 'uri', 'date', 'date-time']

/** Copies the options given, in this order, leaving out the ones not set. */
function pick (opts: AnyOptions, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  // arrays are copied so freezing the schema never freezes the caller's default
  for (const key of keys) if (opts[key] !== undefined) out[key] = Array.isArray(opts[key]) ? [...opts[key]] : opts[key]
  return out
}

class Builder {
  readonly #fields: readonly Field[]
  #schema: RequestedSchema | undefined
  #json: string | undefined
  #digest: string | undefined

  constructor (fields: readonly Field[]) {
    this.#fields = fields
  }

  /** The JSON text of a builder's schema, made once; undefined for an object that is no builder. */
  static json (of: object): string | undefined {
    return #fields in of ? of.#text() : undefined
  }

  /** The names of a builder's fields, in order; undefined for an object that is no builder. */
  static fields (of: object): string[] | undefined {
    return #fields in of ? of.#fields.map((field) => field.name) : undefined
  }

  /** The digest of a builder's JSON text, made once; undefined for an object that is no builder. */
  static digest (of: object): string | undefined {
    if (!(#fields in of)) return undefined
    of.#digest ??= digest('elicit', of.#text())
    return of.#digest
  }

  // The intermediate builders of a chain are never rendered, so nothing is made before it is asked for.
  get schema (): RequestedSchema {
    if (this.#schema === undefined) {
      // fromEntries defines own properties, so even a field named __proto__ is kept
      const properties = Object.fromEntries(this.#fields.map((f) => [f.name, f.schema]))
      const required = this.#fields.filter((f) => !f.optional).map((f) => f.name)
      this.#schema = deepFreeze(required.length > 0
        ? { type: 'object', properties, required }
        : { type: 'object', properties })
    }
    return this.#schema
  }

  toJSON (): RequestedSchema {
    return this.schema
  }

  /**
   * `JSON.stringify(this.schema)` made from the fields without rendering the schema (a replayed
   * round needs only the text), except that fields named like integers keep their place: the text,
   * and so the digest in ledger fingerprints, is the one earlier builds made.
   */
  #text (): string {
    if (this.#json === undefined) {
      let properties = ''
      let required = ''
      for (const field of this.#fields) {
        const name = JSON.stringify(field.name)
        properties += `${properties === '' ? '' : ','}${name}:${JSON.stringify(field.schema)}`
        if (!field.optional) required += `${required === '' ? '' : ','}${name}`
      }
      this.#json = `{"type":"object","properties":{${properties}}${required === '' ? '' : `,"required":[${required}]`}}`
    }
    return this.#json
  }

  string (name: string, opts: AnyOptions = {}): Builder {
    const fail = this.#check(name, opts)
    lengths(fail, opts, 'minLength', 'maxLength')
    if (opts.format !== undefined && !FORMATS.includes(opts.format)) fail(`unknown format ${JSON.stringify(opts.format)}`)
    const d = opts.default
    if (d !== undefined && (typeof d !== 'string' || d.length < (opts.minLength ?? 0) || d.length > (opts.maxLength ?? Infinity))) {
      fail('default does not fit')
    }
    return this.#add(name, opts, { type: 'string', ...pick(opts, ['title', 'description', 'minLength', 'maxLength', 'format', 'default']) })
  }

  number (name: string, opts: AnyOptions = {}): Builder {
    return this.#numeric('number', name, opts)
  }

  integer (name: string, opts: AnyOptions = {}): Builder {
    return this.#numeric('integer', name, opts)
  }

  boolean (name: string, opts: AnyOptions = {}): Builder {
    const fail = this.#check(name, opts)
    if (opts.default !== undefined && typeof opts.default !== 'boolean') fail('default does not fit')
    return this.#add(name, opts, { type: 'boolean', ...pick(opts, ['title', 'description', 'default']) })
  }

  choose (name: string, choices: Choices, opts: AnyOptions = {}): Builder {
    const fail = this.#check(name, opts)
    const { values, titled } = choiceList(fail, choices)
    if (opts.default !== undefined && !values.includes(opts.default)) fail('default is not among the choices')
    const described = pick(opts, ['title', 'description'])
    const choice = titled ? { oneOf: titled } : { enum: values }
    return this.#add(name, opts, { type: 'string', ...described, ...choice, ...pick(opts, ['default']) })
  }

  chooseMany (name: string, choices: Choices, opts: AnyOptions = {}): Builder {
    const fail = this.#check(name, opts)
    const { values, titled } = choiceList(fail, choices)
    lengths(fail, opts, 'minItems', 'maxItems')
    const d = opts.default
    if (d !== undefined && (!Array.isArray(d) || d.length < (opts.minItems ?? 0) ||
      d.length > (opts.maxItems ?? Infinity) || !d.every((v) => values.includes(v)) || new Set(d).size !== d.length)) {
      fail('default does not fit')
    }
    const items = titled ? { anyOf: titled } : { type: 'string', enum: values }
    return this.#add(name, opts, { type: 'array', ...pick(opts, ['title', 'description', 'minItems', 'maxItems']), items, ...pick(opts, ['default']) })
  }

  #numeric (type: 'number' | 'integer', name: string, opts: AnyOptions): Builder {
    const fail = this.#check(name, opts)
    const { minimum, maximum, default: d } = opts
    if (minimum !== undefined && maximum !== undefined && minimum > maximum) fail('minimum is greater than maximum')
    if (d !== undefined && (typeof d !== 'number' || (type === 'integer' && !Number.isInteger(d)) ||
      d < (minimum ?? -Infinity) || d > (maximum ?? Infinity))) {
      fail('default does not fit')
    }
    return this.#add(name, opts, { type, ...pick(opts, ['title', 'description', 'minimum', 'maximum', 'default']) })
  }

  /** Checks the name is new and returns the reporter of problems with this field. */
  #check (name: string, opts: unknown): (problem: string) => never {
    if (typeof name !== 'string' || name === '') throw new InvalidRequestedSchemaError('requestedSchema: a field name must be a non-empty string')
    const fail = failure(name)
    if (typeof opts !== 'object' || opts === null || Array.isArray(opts)) fail('options must be an object')
    if (this.#fields.some((f) => f.name === name)) fail('duplicate field name')
    return fail
  }

  #add (name: string, opts: AnyOptions, schema: Record<string, unknown>): Builder {
    // Field schemas are new objects no caller holds; rendering the schema freezes them.
    const field = { name, optional: opts.optional === true, schema: schema as unknown as PrimitiveSchemaDefinition }
    return new Builder([...this.#fields, field])
  }
}

function failure (name: string): (problem: string) => never {
  return (problem) => { throw new InvalidRequestedSchemaError(`requestedSchema field ${JSON.stringify(name)}: ${problem}`) }
}

/** Checks a pair of counts: each a non-negative integer, the first not above the second. */
function lengths (fail: (problem: string) => never, opts: AnyOptions, min: string, max: string): void {
  for (const key of [min, max]) {
    const v = opts[key]
    if (v !== undefined && !(Number.isInteger(v) && v >= 0)) fail(`${key} must be a non-negative integer`)
  }
  if (opts[min] > opts[max]) fail(`${min} is greater than ${max}`)
}

function choiceList (
  fail: (problem: string) => never,
  choices: Choices
): { values: string[], titled: TitledChoice[] | undefined } {
  if (!Array.isArray(choices) || choices.length === 0) fail('choices must be a non-empty array')
  const list: ReadonlyArray<string | Choice> = choices
  let titled: TitledChoice[] | undefined
  if (!list.every((c) => typeof c === 'string')) {
    if (!list.every((c) => typeof c === 'object' && c !== null && typeof c.value === 'string' && typeof c.title === 'string')) {
      fail('choices must be all strings or all { value, title }')
    }
    titled = (list as readonly Choice[]).map((c) => ({ const: c.value, title: c.title }))
  }
  const values = list.map((c) => typeof c === 'string' ? c : c.value)
  if (new Set(values).size !== values.length) fail('duplicate choice value')
  return { values, titled }
}

const EMPTY = Object.freeze(new Builder([]))

/** Starts an empty requested schema; add fields with the chainable methods. */
export function requestedSchema (): RequestedSchemaBuilder {
  return EMPTY as unknown as RequestedSchemaBuilder
}

/** @internal The JSON text of a builder's schema; a hand-made object with a `schema` has it rendered. */
export function schemaJson (builder: RequestedSchemaBuilder<object>): string {
  return Builder.json(builder) ?? JSON.stringify(builder.schema)
}

/** @internal The names of the fields a builder's schema asks for. */
export function schemaFields (builder: RequestedSchemaBuilder<object>): string[] {
  return Builder.fields(builder) ?? Object.keys(builder.schema.properties)
}

/** @internal The digest standing for a builder's schema in ledger fingerprints. */
export function schemaDigest (builder: RequestedSchemaBuilder<object>): string {
  return Builder.digest(builder) ?? digest('elicit', JSON.stringify(builder.schema))
}
