/**
 * The JSON Schema compiler of one plugin registration: tool input and output schemas, prompt
 * arguments and elicitation answers all compile here, once, at registration or on first use.
 * Nothing is shared between registrations, so an `$id` never clashes across apps, and releasing
 * a schema (a tool removed, an answer schema evicted) frees its compiled validator.
 */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { InvalidSchemaError } from './errors.js'

/** A compiled validator; `errors` holds the failures of its last call. */
export interface Validator {
  (data: unknown): boolean
  errors?: ErrorObject[] | null
}

/** A schema compiled and not yet released, with the validator handed out for it. */
interface Live {
  readonly schema: object
  /** The validator handed out: it calls `compiled`, which a new Ajv instance may replace. */
  readonly validate: Validator
  compiled: ValidateFunction
  /** How many holders got `validate` (one schema object may serve several definitions). */
  holders: number
}

/** An Ajv instance is replaced once it released this many schemas, or as many as are live if more. */
export const RECYCLE_AFTER = 256

function pathOf (pointer: string): string[] {
  return pointer.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
}

/** One line naming the first failure of a validation that failed: `arguments.to must be string`. */
export function describeErrors (root: string, errors: ErrorObject[] | null | undefined): string {
  // Ajv fills `errors` whenever validation fails, each with a message.
  const error = (errors as ErrorObject[])[0]
  const path = pathOf(error.instancePath).map((s) => `.${s}`).join('')
  if (error.keyword === 'additionalProperties') {
    return `${root}${path} must not have property '${(error.params as { additionalProperty: string }).additionalProperty}'`
  }
  return `${root}${path} ${error.message as string}`
}

/** The first failure of a validation that failed, as its keyword and the path of the value at fault. */
export function firstError (
  errors: ErrorObject[] | null | undefined
): { keyword: string, path: string[], params: Record<string, unknown>, message: string } {
  const error = (errors as ErrorObject[])[0]
  return {
    keyword: error.keyword,
    path: pathOf(error.instancePath),
    params: error.params,
    message: error.message as string
  }
}

function newInstance (): Ajv2020 {
  // ownProperties: a field named like an Object.prototype member is present only when given.
  // addUsedSchema: false keeps a schema's $id out of the instance's registry, so a tool can be
  // registered again after its removal, and two tools may share an $id.
  const ajv = new Ajv2020({
    strict: false,
    allErrors: false,
    validateFormats: true,
    addUsedSchema: false,
    ownProperties: true
  })
  addFormats.default(ajv)
  return ajv
}

/**
 * Ajv keeps every schema it compiled in its instance's code scope, removeSchema or not, so an app
 * that adds and removes tools, or whose handlers build requested schemas from data, would grow
 * without end (bench/README.md#ajv-recycling). So validators are handed out as wrappers, and once
 * an instance has released {@link RECYCLE_AFTER} schemas (or as many as are live, if more), the
 * live ones are compiled again on a fresh instance and the old one is let go. What a compiler
 * holds stays within the live schemas plus that many released ones.
 */
export class SchemaCompiler {
  #ajv: Ajv2020 | undefined
  readonly #live = new Map<object, Live>()
  #released = 0

  // Made on first use: an app that registers no schema never pays for the meta-schema.
  get #instance (): Ajv2020 {
    this.#ajv ??= newInstance()
    return this.#ajv
  }

  /** Compiles a definition's JSON Schema; throws an InvalidSchemaError naming `where` when it is not one. */
  compile (schema: object, where: string): Validator {
    const live = this.#live.get(schema)
    if (live !== undefined) {
      live.holders++
      return live.validate
    }
    let compiled
    try {
      compiled = this.#instance.compile(schema)
    } catch (error) {
      throw new InvalidSchemaError(where, (error as Error).message)
    }
    const validate: Validator = (data) => {
      const current = entry.compiled
      const valid = current(data) as boolean
      validate.errors = current.errors
      return valid
    }
    const entry: Live = { schema, validate, compiled, holders: 1 }
    this.#live.set(schema, entry)
    return validate
  }

  /** Releases a compiled schema (one holder of it): once none is left, its validator can be collected. */
  release (schema: object): void {
    const live = this.#live.get(schema)
    if (live === undefined || --live.holders > 0) return
    this.#live.delete(schema)
    if (++this.#released >= Math.max(RECYCLE_AFTER, this.#live.size)) this.#recycle()
  }

  /** Compiles the live schemas on a fresh instance, so the old one and all it kept can be collected. */
  #recycle (): void {
    const fresh = newInstance()
    for (const live of this.#live.values()) {
      // A schema its owner changed after compiling it may no longer compile: its validator then
      // keeps the code it has, and with it the old instance, until it is released too.
      try {
        live.compiled = fresh.compile(live.schema)
      } catch {
        continue
      }
    }
    this.#ajv = fresh
    this.#released = 0
  }
}
