/** Types of the `requestedSchema()` builder: the flat shapes it renders, its options, the answer type it infers. */

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
  title?: string | undefined
  description?: string | undefined
}

/** Options of `.string()`. */
export interface StringOptions extends FieldOptions {
  minLength?: number | undefined
  maxLength?: number | undefined
  format?: StringFormat | undefined
  default?: string | undefined
}

/** Options of `.number()` and `.integer()`. */
export interface NumberOptions extends FieldOptions {
  minimum?: number | undefined
  maximum?: number | undefined
  default?: number | undefined
}

/** Options of `.boolean()`. */
export interface BooleanOptions extends FieldOptions {
  default?: boolean | undefined
}

/** Options of `.choose()`. */
export interface ChooseOptions<V extends string = string> extends FieldOptions {
  default?: V | undefined
}

/** Options of `.chooseMany()`. */
export interface ChooseManyOptions<V extends string = string> extends FieldOptions {
  minItems?: number | undefined
  maxItems?: number | undefined
  default?: readonly V[] | undefined
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
export interface Optionality<O extends boolean | undefined> {
  optional?: O | undefined
}

type Simplify<T> = { [K in keyof T]: T[K] } & {}

type With<T, N extends string, V, O extends boolean | undefined> = Simplify<
  T & ([O] extends [false | undefined] ? { [K in N]: V } : { [K in N]?: V })
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
  string<const N extends string, const O extends boolean | undefined = false> (
    name: N,
    opts?: StringOptions & Optionality<O>
  ): RequestedSchemaBuilder<With<T, N, string, O>>
  /** Adds a number field. */
  number<const N extends string, const O extends boolean | undefined = false> (
    name: N,
    opts?: NumberOptions & Optionality<O>
  ): RequestedSchemaBuilder<With<T, N, number, O>>
  /** Adds an integer field. */
  integer<const N extends string, const O extends boolean | undefined = false> (
    name: N,
    opts?: NumberOptions & Optionality<O>
  ): RequestedSchemaBuilder<With<T, N, number, O>>
  /** Adds a yes/no field. */
  boolean<const N extends string, const O extends boolean | undefined = false> (
    name: N,
    opts?: BooleanOptions & Optionality<O>
  ): RequestedSchemaBuilder<With<T, N, boolean, O>>
  /** Adds a single select. */
  choose<const N extends string, const C extends Choices, const O extends boolean | undefined = false> (
    name: N,
    choices: C,
    opts?: ChooseOptions<ChoiceValue<C>> & Optionality<O>
  ): RequestedSchemaBuilder<With<T, N, ChoiceValue<C>, O>>
  /** Adds a multi select. */
  chooseMany<const N extends string, const C extends Choices, const O extends boolean | undefined = false> (
    name: N,
    choices: C,
    opts?: ChooseManyOptions<ChoiceValue<C>> & Optionality<O>
  ): RequestedSchemaBuilder<With<T, N, Array<ChoiceValue<C>>, O>>
}

/** The content type of an accepted answer to a builder's schema. */
export type Infer<B extends RequestedSchemaBuilder<object>> = B extends RequestedSchemaBuilder<infer T> ? T : never
