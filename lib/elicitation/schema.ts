import { InvalidRequestedSchemaError } from '../errors.js'
import { digest } from '../digest.js'
import { deepFreeze } from '../protocol/wire.js'

/**
 * The `requestedSchema()` builder: the one way a mocapi tool describes the input it elicits.
 * It only produces the flat MCP 2026-07-28 shapes, and infers the type of the answer content.
 */

/** A string format the requested schema may carry. */
export type StringFormat = 'email' | 'uri' | 'date' | 'date-time'

/** A free text field. */
export interface StringSchema {
  readonly type: 'string'
  readonly title?: string
  readonly description?: string
  readonly minLength?: number
  readonly maxLength?: number
  readonly format?: StringFormat
  readonly default?: string
}

/** A number or integer field. */
export interface NumberSchema {
  readonly type: 'number' | 'integer'
  readonly title?: string
  readonly description?: string
  readonly minimum?: number
  readonly maximum?: number
  readonly default?: number
}

/** A yes/no field. */
export interface BooleanSchema {
  readonly type: 'boolean'
  readonly title?: string
  readonly description?: string
  readonly default?: boolean
}

/** A single select among plain values. */
export interface UntitledSingleSelectEnumSchema {
  readonly type: 'string'
  readonly title?: string
  readonly description?: string
  readonly enum: readonly string[]
  readonly default?: string
}

/** A value with the label shown for it. */
export interface TitledChoice {
  readonly const: string
  readonly title: string
}

/** A single select among labelled values. */
export interface TitledSingleSelectEnumSchema {
  readonly type: 'string'
  readonly title?: string
  readonly description?: string
  readonly oneOf: readonly TitledChoice[]
  readonly default?: string
}

/** A multi select among plain values. */
export interface UntitledMultiSelectEnumSchema {
  readonly type: 'array'
  readonly title?: string
  readonly description?: string
  readonly minItems?: number
  readonly maxItems?: number
  readonly items: { readonly type: 'string', readonly enum: readonly string[] }
  readonly default?: readonly string[]
}

/** A multi select among labelled values. */
export interface TitledMultiSelectEnumSchema {
  readonly type: 'array'
  readonly title?: string
  readonly description?: string
  readonly minItems?: number
  readonly maxItems?: number
  readonly items: { readonly anyOf: readonly TitledChoice[] }
  readonly default?: readonly string[]
}

/** Any field of a requested schema. */
export type PrimitiveSchemaDefinition =
  | StringSchema
  | NumberSchema
  | BooleanSchema
  | UntitledSingleSelectEnumSchema
  | TitledSingleSelectEnumSchema
  | UntitledMultiSelectEnumSchema
  | TitledMultiSelectEnumSchema

/** The rendered, flat `requestedSchema` of an elicitation. */
export interface RequestedSchema {
  readonly type: 'object'
  readonly properties: { readonly [name: string]: PrimitiveSchemaDefinition }
  readonly required?: readonly string[]
}

/** Options every field accepts. */
export interface FieldOptions {
  title?: string
  description?: string
}

/** Options of `.string()`. */
export interface StringOptions extends FieldOptions {
  minLength?: number
  maxLength?: number
  format?: StringFormat
  default?: string
}

/** Options of `.number()` and `.integer()`. */
export interface NumberOptions extends FieldOptions {
  minimum?: number
  maximum?: number
  default?: number
}

/** Options of `.boolean()`. */
export interface BooleanOptions extends FieldOptions {
  default?: boolean
}

/** Options of `.choose()`. */
export interface ChooseOptions<V extends string = string> extends FieldOptions {
  default?: V
}

/** Options of `.chooseMany()`. */
export interface ChooseManyOptions<V extends string = string> extends FieldOptions {
  minItems?: number
  maxItems?: number
  default?: readonly V[]
}

/** A labelled choice given to `.choose()` or `.chooseMany()`. */
export interface Choice {
  readonly value: string
  readonly title: string
}

/** The choices of a select: plain strings, or labelled values. */
export type Choices = readonly string[] | readonly Choice[]

/** The values a list of choices allows. */
export type ChoiceValue<C extends Choices> = C[number] extends infer E
  ? E extends string ? E : E extends Choice ? E['value'] : never
  : never

/** `optional: true` makes the field optional in the answer and leaves it out of `required`. */
export interface Optionality<O extends boolean> {
  optional?: O
}

type Simplify<T> = { [K in keyof T]: T[K] } & {}

type With<T, N extends string, V, O extends boolean> = Simplify<
  T & ([O] extends [false] ? { [K in N]: V } : { [K in N]?: V })
>

declare const content: unique symbol

/**
 * An immutable requested schema: every method returns a new builder with one more field,
 * so a builder can be shared and extended safely. `T` is the type of the accepted content.
 */
export interface RequestedSchemaBuilder<T extends object = {}> {
  /** Type-only: the content of an accepted answer. */
  readonly [content]: T
  /** The rendered schema, frozen. */
  readonly schema: RequestedSchema
  /** Renders the schema (same object as `schema`). */
  toJSON (): RequestedSchema
  /** Adds a free text field. */
  string<const N extends string, const O extends boolean = false> (name: N, opts?: StringOptions & Optionality<O>): RequestedSchemaBuilder<With<T, N, string, O>>
  /** Adds a number field. */
  number<const N extends string, const O extends boolean = false> (name: N, opts?: NumberOptions & Optionality<O>): RequestedSchemaBuilder<With<T, N, number, O>>
  /** Adds an integer field. */
  integer<const N extends string, const O extends boolean = false> (name: N, opts?: NumberOptions & Optionality<O>): RequestedSchemaBuilder<With<T, N, number, O>>
  /** Adds a yes/no field. */
  boolean<const N extends string, const O extends boolean = false> (name: N, opts?: BooleanOptions & Optionality<O>): RequestedSchemaBuilder<With<T, N, boolean, O>>
  /** Adds a single select. */
  choose<const N extends string, const C extends Choices, const O extends boolean = false> (name: N, choices: C, opts?: ChooseOptions<ChoiceValue<C>> & Optionality<O>): RequestedSchemaBuilder<With<T, N, ChoiceValue<C>, O>>
  /** Adds a multi select. */
  chooseMany<const N extends string, const C extends Choices, const O extends boolean = false> (name: N, choices: C, opts?: ChooseManyOptions<ChoiceValue<C>> & Optionality<O>): RequestedSchemaBuilder<With<T, N, Array<ChoiceValue<C>>, O>>
}

/** The content type of an accepted answer to a builder's schema. */
export type Infer<B extends RequestedSchemaBuilder<object>> = B extends RequestedSchemaBuilder<infer T> ? T : never

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

/**
 * @internal The key of a builder's JSON text: that of its rendered schema, made without rendering
 * it (it equals `JSON.stringify(builder.schema)` except that fields named like integers keep their
 * place). mocapi keys answer validators by it.
 */
export const SCHEMA_JSON: unique symbol = Symbol('mocapi.requestedSchema.json')

/** @internal The names of a builder's fields, in order, known without rendering its schema. */
export const SCHEMA_FIELDS: unique symbol = Symbol('mocapi.requestedSchema.fields')

/** @internal The digest of a builder's JSON text, which stands for the schema in ledger fingerprints. */
export const SCHEMA_DIGEST: unique symbol = Symbol('mocapi.requestedSchema.digest')

// Builders are immutable, so an identical call on the same builder can return the builder it
// returned before, with its JSON text, digest and rendered schema already made: a handler that
// builds its schema inline, as most do, then pays a few compares per round instead of building,
// serialising and hashing it again (bench/README.md has the figure). The builders kept are
// bounded in all and per field name, so a lookup compares with a few calls at most; once the
// process has kept MAX_KEPT, a new generation starts and the old one is dropped as its builders
// are, so schemas made from changing data cannot grow it, nor keep their data long.
const MAX_PER_NAME = 8
const MAX_KEPT = 1024
// A call is kept only when what it copies is small, and only up to this many fields deep, so that
// what a generation holds stays small too, however large the schemas an app builds from its data.
const MAX_KEPT_CHARACTERS = 1024
const MAX_KEPT_FIELDS = 32
const reuse = { kept: 0, generation: 0 }

// The options each kind of field reads: a call is identical to a kept one when these, its kind,
// its name and its choices are.
const READS = {
  string: ['title', 'description', 'minLength', 'maxLength', 'format', 'default', 'optional'],
  number: ['title', 'description', 'minimum', 'maximum', 'default', 'optional'],
  integer: ['title', 'description', 'minimum', 'maximum', 'default', 'optional'],
  boolean: ['title', 'description', 'default', 'optional'],
  choose: ['title', 'description', 'default', 'optional'],
  chooseMany: ['title', 'description', 'minItems', 'maxItems', 'default', 'optional'],
} as const

type FieldKind = keyof typeof READS

type Plain = string | number | boolean | undefined | readonly string[]

/** A call that made a kept builder: copies of everything the builder read. */
interface Kept {
  readonly kind: FieldKind
  readonly choices: ReadonlyArray<string | Choice> | undefined
  readonly options: readonly Plain[]
  readonly builder: Builder
}

/** A copy of a plain value, or undefined when it is not plain (such a call is not kept). */
function plainCopy (value: unknown): { value: Plain } | undefined {
  if (value === undefined || typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean') return { value }
  if (Array.isArray(value) && value.every((item) => typeof item === 'string')) return { value: [...value] as string[] }
  return undefined
}

/** About how many characters a plain value takes. */
function sizeOf (value: Plain): number {
  if (typeof value === 'string') return value.length
  if (Array.isArray(value)) return value.reduce((sum: number, item: string) => sum + item.length + 1, 0)
  return 8
}

function samePlain (kept: Plain, value: unknown): boolean {
  if (!Array.isArray(kept)) return Object.is(kept, value)
  if (!Array.isArray(value) || value.length !== kept.length) return false
  for (let i = 0; i < kept.length; i++) if (value[i] !== kept[i]) return false
  return true
}

function sameChoices (kept: ReadonlyArray<string | Choice> | undefined, choices: unknown): boolean {
  if (kept === undefined) return choices === undefined
  if (!Array.isArray(choices) || choices.length !== kept.length) return false
  for (let i = 0; i < kept.length; i++) {
    const a = kept[i]
    const b: unknown = choices[i]
    if (typeof a === 'string') {
      if (a !== b) return false
    } else if (typeof b !== 'object' || b === null || (b as Choice).value !== a.value || (b as Choice).title !== a.title) return false
  }
  return true
}

class Builder {
  readonly #fields: readonly Field[]
  /** Kept calls on this builder, by field name, and the generation they belong to. */
  #children: Map<string, Kept[]> | undefined
  #generation = -1
  #schema: RequestedSchema | undefined
  #json: string | undefined
  #digest: string | undefined

  constructor (fields: readonly Field[]) {
    this.#fields = fields
  }

  // Builders are often made per call inside a handler, and on a replayed round the rendered
  // object is not needed at all (only its digest, for the fingerprint), so each is made lazily.
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

  get [SCHEMA_JSON] (): string {
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

  get [SCHEMA_FIELDS] (): string[] {
    return this.#fields.map((field) => field.name)
  }

  get [SCHEMA_DIGEST] (): string {
    this.#digest ??= digest('elicit', this[SCHEMA_JSON])
    return this.#digest
  }

  toJSON (): RequestedSchema {
    return this.schema
  }

  string (name: string, opts: AnyOptions = {}): Builder {
    return this.#kept('string', name, undefined, opts) ?? this.#keep('string', name, undefined, opts, this.#string(name, opts))
  }

  number (name: string, opts: AnyOptions = {}): Builder {
    return this.#kept('number', name, undefined, opts) ?? this.#keep('number', name, undefined, opts, this.#numeric('number', name, opts))
  }

  integer (name: string, opts: AnyOptions = {}): Builder {
    return this.#kept('integer', name, undefined, opts) ?? this.#keep('integer', name, undefined, opts, this.#numeric('integer', name, opts))
  }

  boolean (name: string, opts: AnyOptions = {}): Builder {
    return this.#kept('boolean', name, undefined, opts) ?? this.#keep('boolean', name, undefined, opts, this.#boolean(name, opts))
  }

  choose (name: string, choices: Choices, opts: AnyOptions = {}): Builder {
    return this.#kept('choose', name, choices, opts) ?? this.#keep('choose', name, choices, opts, this.#choose(name, choices, opts))
  }

  chooseMany (name: string, choices: Choices, opts: AnyOptions = {}): Builder {
    return this.#kept('chooseMany', name, choices, opts) ?? this.#keep('chooseMany', name, choices, opts, this.#chooseMany(name, choices, opts))
  }

  /** The builder an identical call on this one returned before, when it was kept in the current generation. */
  #kept (kind: FieldKind, name: string, choices: unknown, opts: AnyOptions): Builder | undefined {
    if (this.#generation !== reuse.generation || typeof opts !== 'object' || opts === null || Array.isArray(opts)) return undefined
    const calls = this.#children?.get(name)
    if (calls === undefined) return undefined
    const options = READS[kind]
    for (const call of calls) {
      if (call.kind !== kind || !sameChoices(call.choices, choices)) continue
      let same = true
      for (let i = 0; i < options.length && same; i++) same = samePlain(call.options[i], opts[options[i]])
      if (same) return call.builder
    }
    return undefined
  }

  /** Keeps a new builder for identical calls to come, when everything it read is plain and there is room. */
  #keep (kind: FieldKind, name: string, list: Choices | undefined, opts: AnyOptions, builder: Builder): Builder {
    if (this.#fields.length >= MAX_KEPT_FIELDS) return builder
    const values: Plain[] = []
    let size = name.length
    for (const option of READS[kind]) {
      const copy = plainCopy(opts[option])
      if (copy === undefined) return builder
      values.push(copy.value)
      size += sizeOf(copy.value)
    }
    // The builder checked the choices: all strings, or all { value, title } with string members.
    if (list !== undefined) for (const c of list) size += typeof c === 'string' ? c.length + 1 : c.value.length + c.title.length + 2
    if (size > MAX_KEPT_CHARACTERS) return builder
    if (reuse.kept >= MAX_KEPT) {
      reuse.generation++
      reuse.kept = 0
    }
    if (this.#generation !== reuse.generation) {
      this.#generation = reuse.generation
      this.#children = new Map()
    }
    const children = this.#children as Map<string, Kept[]>
    const calls = children.get(name)
    if (calls !== undefined && calls.length >= MAX_PER_NAME) return builder
    const kept = list === undefined ? undefined : list.map((c: string | Choice) => typeof c === 'string' ? c : { value: c.value, title: c.title })
    const call = { kind, choices: kept, options: values, builder }
    if (calls === undefined) children.set(name, [call])
    else calls.push(call)
    reuse.kept++
    return builder
  }

  #string (name: string, opts: AnyOptions): Builder {
    const fail = this.#check(name, opts)
    lengths(fail, opts, 'minLength', 'maxLength')
    if (opts.format !== undefined && !FORMATS.includes(opts.format)) fail(`unknown format ${JSON.stringify(opts.format)}`)
    const d = opts.default
    if (d !== undefined && (typeof d !== 'string' || d.length < (opts.minLength ?? 0) || d.length > (opts.maxLength ?? Infinity))) {
      fail('default does not fit')
    }
    return this.#add(name, opts, { type: 'string', ...pick(opts, ['title', 'description', 'minLength', 'maxLength', 'format', 'default']) })
  }

  #boolean (name: string, opts: AnyOptions): Builder {
    const fail = this.#check(name, opts)
    if (opts.default !== undefined && typeof opts.default !== 'boolean') fail('default does not fit')
    return this.#add(name, opts, { type: 'boolean', ...pick(opts, ['title', 'description', 'default']) })
  }

  #choose (name: string, choices: Choices, opts: AnyOptions): Builder {
    const fail = this.#check(name, opts)
    const { values, titled } = choiceList(fail, choices)
    if (opts.default !== undefined && !values.includes(opts.default)) fail('default is not among the choices')
    const described = pick(opts, ['title', 'description'])
    const choice = titled ? { oneOf: titled } : { enum: values }
    return this.#add(name, opts, { type: 'string', ...described, ...choice, ...pick(opts, ['default']) })
  }

  #chooseMany (name: string, choices: Choices, opts: AnyOptions): Builder {
    const fail = this.#check(name, opts)
    const { values, titled } = choiceList(fail, choices)
    lengths(fail, opts, 'minItems', 'maxItems')
    const d = opts.default
    if (d !== undefined && (!Array.isArray(d) || d.length < (opts.minItems ?? 0) || d.length > (opts.maxItems ?? Infinity) ||
      !d.every((v) => values.includes(v)) || new Set(d).size !== d.length)) {
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

function choiceList (fail: (problem: string) => never, choices: Choices): { values: string[], titled: TitledChoice[] | undefined } {
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

const EMPTY = new Builder([])

/** Starts an empty requested schema; add fields with the chainable methods. */
export function requestedSchema (): RequestedSchemaBuilder {
  return EMPTY as unknown as RequestedSchemaBuilder
}

/** @internal The JSON text of a builder's schema; a hand-made object with a `schema` has it rendered. */
export function schemaJson (builder: RequestedSchemaBuilder<object>): string {
  return (builder as { [SCHEMA_JSON]?: string })[SCHEMA_JSON] ?? JSON.stringify(builder.schema)
}

/** @internal The names of the fields a builder's schema asks for. */
export function schemaFields (builder: RequestedSchemaBuilder<object>): string[] {
  return (builder as { [SCHEMA_FIELDS]?: string[] })[SCHEMA_FIELDS] ?? Object.keys(builder.schema.properties)
}

/** @internal The digest standing for a builder's schema in ledger fingerprints. */
export function schemaDigest (builder: RequestedSchemaBuilder<object>): string {
  return (builder as { [SCHEMA_DIGEST]?: string })[SCHEMA_DIGEST] ?? digest('elicit', JSON.stringify(builder.schema))
}
