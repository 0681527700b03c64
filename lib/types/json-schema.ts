/** Levels of nesting read, so that no schema makes the compiler recurse without end. */
type MaxDepth = 10
/** `Down[D]` is `D - 1`; `never` below zero, where reading stops. */
type Down = [never, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10]

/**
 * The type of the values `Schema` accepts, as Fastify's type providers type `request.body`. A TypeBox 0.x schema gives
 * its `Static` type (found by its phantom `static`, so mocapi depends on no schema library). Anything else is read as
 * JSON Schema: a literal (`as const` or inline in `app.mcp.tool(...)`) or a TypeBox 1.x schema. It reads `type` (a
 * name or a list), `properties`, `required`, `additionalProperties`, `items`, `prefixItems` (with `minItems`), `enum`,
 * `const`, `anyOf`, `oneOf`, `allOf` and `nullable`. What it cannot read (`$ref`, `not`, `if`, a widened
 * `type: string`, …) is `unknown`, never `any`; so is what lies deeper than {@link MaxDepth} (10) levels.
 */
export type FromSchema<Schema> = 0 extends 1 & Schema
  ? unknown // a schema typed `any` says nothing
  : Schema extends { static: unknown, params: unknown[] }
    ? (Schema & { params: [] })['static'] // what TypeBox's own Static<Schema> is
    : Read<Schema, MaxDepth>

type Read<S, D extends number> = [D] extends [never]
  ? unknown
  : S extends boolean
    ? S extends true ? unknown : never // `true` accepts anything, `false` nothing
    : S extends object
      ? Nullable<S, Single<S, D>> & Union<S, 'anyOf', D> & Union<S, 'oneOf', D> & AllOf<S, D>
      : unknown

type Single<S, D extends number> = S extends { const: infer C }
  ? C
  : S extends { enum: ReadonlyArray<infer E> }
    ? E
    : S extends { type: infer T }
      ? Named<T extends ReadonlyArray<infer N> ? N : T, S, D>
      : unknown

/** One type per name; a name it does not know (a widened `string` included) makes the whole `unknown`. */
type Named<N, S, D extends number> = N extends 'string'
  ? string
  : N extends 'number' | 'integer'
    ? number
    : N extends 'boolean'
      ? boolean
      : N extends 'null'
        ? null
        : N extends 'array'
          ? ArrayOf<S, Down[D]>
          : N extends 'object'
            ? ObjectOf<S, Down[D]>
            : unknown

/** OpenAPI's `nullable: true`, which Ajv reads too. */
type Nullable<S, T> = S extends { nullable: true } ? T | null : T

type Union<S, Keyword extends string, D extends number> = S extends { [K in Keyword]: ReadonlyArray<infer M> }
  ? M extends unknown ? Read<M, Down[D]> : never
  : unknown

type AllOf<S, D extends number> = S extends { allOf: infer M } ? Both<M, Down[D]> : unknown

type Both<M, D extends number> = M extends readonly [infer First, ...infer Rest]
  ? Read<First, D> & Both<Rest, D>
  : unknown

type RequiredKeys<S> = S extends { required: ReadonlyArray<infer K> } ? Extract<K, string> : never

/** One object type, so that editors show `{ to: string, seats?: number }` rather than an intersection. */
type Flatten<T> = { [K in keyof T]: T[K] } & {}

type ObjectOf<S, D extends number> = [D] extends [never]
  ? unknown
  : S extends { properties: infer P }
    ? string extends keyof P
      ? { [key: string]: unknown } // properties typed as a record: not literal
      : Flatten<
        Properties<P, RequiredKeys<S>, D> & { [K in Exclude<RequiredKeys<S>, keyof P>]: unknown } & Additional<S, D>
      >
    : S extends { additionalProperties: false }
      ? Record<never, never>
      : Flatten<{ [K in RequiredKeys<S>]: unknown } & Additional<S, D, { [key: string]: unknown }>>

type Properties<P, Required extends string, D extends number> =
  & { -readonly [K in keyof P as K extends Required ? K : never]: Read<P[K], D> }
  & { -readonly [K in keyof P as K extends Required ? never : K]?: Read<P[K], D> }

/** Properties beyond `properties`: none for `false`, any for `true`, typed for a schema; none said: `Otherwise`. */
type Additional<S, D extends number, Otherwise = unknown> = S extends { additionalProperties: infer A }
  ? A extends false ? unknown : { [key: string]: A extends true ? unknown : Read<A, D> }
  : Otherwise

type ArrayOf<S, D extends number> = [D] extends [never]
  ? unknown
  : S extends { prefixItems: infer P extends readonly unknown[] }
    ? Tuple<P, S extends { minItems: infer M extends number } ? M : 0, Rest<S, D>, D>
    : S extends { items: infer I }
      ? Array<Read<I, D>>
      : unknown[]

/** The items after `prefixItems`: none for `items: false`. */
type Rest<S, D extends number> = S extends { items: infer I } ? I extends false ? [] : Array<Read<I, D>> : unknown[]

/** `prefixItems` as a tuple: the first `Min` items required, the others optional, then the rest. */
type Tuple<
  P extends readonly unknown[],
  Min extends number,
  R extends unknown[],
  D extends number,
  Done extends unknown[] = []
> =
  P extends readonly [infer First, ...infer Others]
    ? Done['length'] extends Min
      ? [...Done, ...{ -readonly [K in keyof P]?: Read<P[K], D> }, ...R]
      : Tuple<Others, Min, R, D, [...Done, Read<First, D>]>
    : [...Done, ...R]
