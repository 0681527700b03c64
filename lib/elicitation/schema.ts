import { InvalidRequestedSchemaError } from '../errors.js'
import { digest } from '../seal/digest.js'
import { deepFreeze } from '../protocol/wire.js'
import type { Choice, Choices, FieldOptions, PrimitiveSchemaDefinition, RequestedSchema, RequestedSchemaBuilder, TitledChoice } from './schema-types.js'

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

// The options each kind of field copies, in this order: the schema's text, and so its digest, follows it.
const STRING_KEYS = ['title', 'description', 'minLength', 'maxLength', 'format', 'default'] as const
const NUMBER_KEYS = ['title', 'description', 'minimum', 'maximum', 'default'] as const
const BOOLEAN_KEYS = ['title', 'description', 'default'] as const
const DESCRIBED_KEYS = ['title', 'description'] as const
const COUNT_KEYS = ['minItems', 'maxItems'] as const
const DEFAULT_KEYS = ['default'] as const

function copy (schema: Record<string, unknown>, opts: AnyOptions, keys: readonly string[]): Record<string, unknown> {
  for (const key of keys) {
    const value = opts[key]
    // arrays are copied so freezing the schema never freezes the caller's default
    if (value !== undefined) schema[key] = Array.isArray(value) ? [...value] : value
  }
  return schema
}

function fail (name: string, problem: string): never {
  throw new InvalidRequestedSchemaError(`requestedSchema field ${JSON.stringify(name)}: ${problem}`)
}

class Builder {
  readonly #fields: readonly Field[]
  #schema: RequestedSchema | undefined
  #json: string | undefined

  constructor (fields: readonly Field[]) {
    this.#fields = fields
  }

  static json (of: object): string | undefined {
    return #fields in of ? of.#text() : undefined
  }

  static is (of: object): boolean {
    return #fields in of
  }

  /** Whether two builders make the same schema, compared field by field: no text is made for it. */
  static same (a: Builder, b: Builder): boolean {
    const one = a.#fields
    const other = b.#fields
    if (one.length !== other.length) return false
    for (let i = 0; i < one.length; i++) {
      const x = one[i]
      const y = other[i]
      if (x.name !== y.name || x.optional !== y.optional || !equalJson(x.schema, y.schema)) return false
    }
    return true
  }

  // Rendered lazily: the intermediate builders of a chain never are.
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

  /** `JSON.stringify(schema)` unrendered, but integer-like names keep their place: digests in issued tokens match. */
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
    this.#check(name, opts)
    lengths(name, opts, 'minLength', 'maxLength')
    if (opts.format !== undefined && !FORMATS.includes(opts.format)) fail(name, `unknown format ${JSON.stringify(opts.format)}`)
    const d = opts.default
    if (d !== undefined && (typeof d !== 'string' || d.length < (opts.minLength ?? 0) || d.length > (opts.maxLength ?? Infinity))) {
      fail(name, 'default does not fit')
    }
    return this.#add(name, opts, copy({ type: 'string' }, opts, STRING_KEYS))
  }

  number (name: string, opts: AnyOptions = {}): Builder {
    return this.#numeric('number', name, opts)
  }

  integer (name: string, opts: AnyOptions = {}): Builder {
    return this.#numeric('integer', name, opts)
  }

  boolean (name: string, opts: AnyOptions = {}): Builder {
    this.#check(name, opts)
    if (opts.default !== undefined && typeof opts.default !== 'boolean') fail(name, 'default does not fit')
    return this.#add(name, opts, copy({ type: 'boolean' }, opts, BOOLEAN_KEYS))
  }

  choose (name: string, choices: Choices, opts: AnyOptions = {}): Builder {
    this.#check(name, opts)
    const values = choiceValues(name, choices)
    if (opts.default !== undefined && !values.includes(opts.default)) fail(name, 'default is not among the choices')
    const schema = copy({ type: 'string' }, opts, DESCRIBED_KEYS)
    if (typeof choices[0] === 'string') schema.enum = values
    else schema.oneOf = titled(choices as readonly Choice[])
    return this.#add(name, opts, copy(schema, opts, DEFAULT_KEYS))
  }

  chooseMany (name: string, choices: Choices, opts: AnyOptions = {}): Builder {
    this.#check(name, opts)
    const values = choiceValues(name, choices)
    lengths(name, opts, 'minItems', 'maxItems')
    const d = opts.default
    if (d !== undefined && (!Array.isArray(d) || d.length < (opts.minItems ?? 0) ||
      d.length > (opts.maxItems ?? Infinity) || !d.every((v) => values.includes(v)) || new Set(d).size !== d.length)) {
      fail(name, 'default does not fit')
    }
    const schema = copy(copy({ type: 'array' }, opts, DESCRIBED_KEYS), opts, COUNT_KEYS)
    schema.items = typeof choices[0] === 'string' ? { type: 'string', enum: values } : { anyOf: titled(choices as readonly Choice[]) }
    return this.#add(name, opts, copy(schema, opts, DEFAULT_KEYS))
  }

  #numeric (type: 'number' | 'integer', name: string, opts: AnyOptions): Builder {
    this.#check(name, opts)
    const { minimum, maximum, default: d } = opts
    if (minimum !== undefined && maximum !== undefined && minimum > maximum) fail(name, 'minimum is greater than maximum')
    if (d !== undefined && (typeof d !== 'number' || (type === 'integer' && !Number.isInteger(d)) ||
      d < (minimum ?? -Infinity) || d > (maximum ?? Infinity))) {
      fail(name, 'default does not fit')
    }
    return this.#add(name, opts, copy({ type }, opts, NUMBER_KEYS))
  }

  #check (name: string, opts: unknown): void {
    if (typeof name !== 'string' || name === '') throw new InvalidRequestedSchemaError('requestedSchema: a field name must be a non-empty string')
    if (typeof opts !== 'object' || opts === null || Array.isArray(opts)) fail(name, 'options must be an object')
    for (const field of this.#fields) if (field.name === name) fail(name, 'duplicate field name')
  }

  #add (name: string, opts: AnyOptions, schema: Record<string, unknown>): Builder {
    // Field schemas are new objects no caller holds; rendering the schema freezes them.
    const field = { name, optional: opts.optional === true, schema: schema as unknown as PrimitiveSchemaDefinition }
    return new Builder([...this.#fields, field])
  }
}

/** Equality of the JSON values a field's schema holds (its keys in the order `copy` writes them). */
function equalJson (a: unknown, b: unknown): boolean {
  if (a === b) return true
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null || Array.isArray(a) !== Array.isArray(b)) return false
  const keys = Object.keys(a)
  if (keys.length !== Object.keys(b).length) return false
  for (const key of keys) {
    if (!equalJson((a as Record<string, unknown>)[key], (b as Record<string, unknown>)[key])) return false
  }
  return true
}

function lengths (name: string, opts: AnyOptions, min: string, max: string): void {
  for (const key of [min, max]) {
    const v = opts[key]
    if (v !== undefined && !(Number.isInteger(v) && v >= 0)) fail(name, `${key} must be a non-negative integer`)
  }
  if (opts[min] > opts[max]) fail(name, `${min} is greater than ${max}`)
}

function choiceValues (name: string, choices: Choices): string[] {
  if (!Array.isArray(choices) || choices.length === 0) fail(name, 'choices must be a non-empty array')
  const list: ReadonlyArray<string | Choice> = choices
  const values: string[] = []
  const strings = typeof list[0] === 'string'
  for (const choice of list) {
    if (strings ? typeof choice !== 'string' : !isChoice(choice)) fail(name, 'choices must be all strings or all { value, title }')
    values.push(typeof choice === 'string' ? choice : choice.value)
  }
  if (new Set(values).size !== values.length) fail(name, 'duplicate choice value')
  return values
}

function isChoice (choice: unknown): choice is Choice {
  return typeof choice === 'object' && choice !== null && typeof (choice as Choice).value === 'string' &&
    typeof (choice as Choice).title === 'string'
}

function titled (choices: readonly Choice[]): TitledChoice[] {
  return choices.map((c) => ({ const: c.value, title: c.title }))
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

/** @internal Whether two builders make the same schema, without making its text. */
export function sameSchema (a: RequestedSchemaBuilder<object>, b: RequestedSchemaBuilder<object>): boolean {
  return Builder.same(a as unknown as Builder, b as unknown as Builder)
}

/** @internal Whether an object is a `requestedSchema()` builder rather than a hand-made one. */
export function isBuilder (builder: RequestedSchemaBuilder<object>): boolean {
  return Builder.is(builder)
}

/** @internal The digest standing for a builder's schema in ledger fingerprints. */
export function schemaDigest (builder: RequestedSchemaBuilder<object>): string {
  return digest('elicit', schemaJson(builder))
}
