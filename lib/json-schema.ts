/** One compiler per plugin registration, for tools, prompts and answers, so an `$id` never clashes across apps. */
import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'
import { InvalidSchemaError } from './errors.js'

export interface Validator {
  (data: unknown): boolean
  errors?: ErrorObject[] | null
}

interface Live {
  readonly schema: object
  readonly validate: Validator
  compiled: ValidateFunction
  holders: number
}

/** An Ajv instance is replaced once it released this many schemas, or as many as are live if more. */
export const RECYCLE_AFTER = 256

function pathOf (pointer: string): string[] {
  return pointer.split('/').slice(1).map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
}

export function describeErrors (root: string, errors: ErrorObject[] | null | undefined): string {
  // Ajv fills `errors` whenever validation fails, each with a message.
  const error = (errors as ErrorObject[])[0]
  const path = pathOf(error.instancePath).map((s) => `.${s}`).join('')
  if (error.keyword === 'additionalProperties') {
    return `${root}${path} must not have property '${(error.params as { additionalProperty: string }).additionalProperty}'`
  }
  return `${root}${path} ${error.message as string}`
}

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
  // addUsedSchema: false keeps $ids out of the registry, so a removed tool can come back and two tools share an $id.
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

/** Ajv keeps every schema it compiled, so live ones move to a fresh instance (bench/README.md#ajv-recycling). */
export class SchemaCompiler {
  #ajv: Ajv2020 | undefined
  readonly #live = new Map<object, Live>()
  #released = 0

  // Made on first use: an app that registers no schema never pays for the meta-schema.
  get #instance (): Ajv2020 {
    this.#ajv ??= newInstance()
    return this.#ajv
  }

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

  release (schema: object): void {
    const live = this.#live.get(schema)
    if (live === undefined || --live.holders > 0) return
    this.#live.delete(schema)
    if (++this.#released >= Math.max(RECYCLE_AFTER, this.#live.size)) this.#recycle()
  }

  #recycle (): void {
    const fresh = newInstance()
    for (const live of this.#live.values()) {
      // A schema changed since may no longer compile: it keeps its old code, and the old instance, until released.
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
