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
export type Validator = ValidateFunction

/** Answer schemas kept compiled at once: a handler that builds its schemas from data makes new ones. */
export const MAX_ANSWER_SCHEMAS = 256

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
export function firstError (errors: ErrorObject[] | null | undefined): { keyword: string, path: string[], params: Record<string, unknown>, message: string } {
  const error = (errors as ErrorObject[])[0]
  return { keyword: error.keyword, path: pathOf(error.instancePath), params: error.params, message: error.message as string }
}

export class SchemaCompiler {
  #ajv: Ajv2020 | undefined
  // Each entry notes when it was last used; the least recently used is found by a scan, and
  // only when a new schema must make room. Moving a hit to the end of the Map instead (a delete
  // and a set per answer) churned the Map's table on every answered ask.
  readonly #answers = new Map<string, { schema: object, validate: Validator, used: number }>()
  #uses = 0

  // Made on first use: an app that registers no schema never pays for the meta-schema.
  get #instance (): Ajv2020 {
    if (this.#ajv === undefined) {
      // ownProperties: a field named like an Object.prototype member is present only when given.
      // addUsedSchema: false keeps a schema's $id out of the instance's registry, so a tool can be
      // registered again after its removal, and two tools may share an $id.
      this.#ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true, addUsedSchema: false, ownProperties: true })
      addFormats.default(this.#ajv)
    }
    return this.#ajv
  }

  /** Compiles a definition's JSON Schema; throws an InvalidSchemaError naming `where` when it is not one. */
  compile (schema: object, where: string): Validator {
    try {
      return this.#instance.compile(schema)
    } catch (error) {
      throw new InvalidSchemaError(where, (error as Error).message)
    }
  }

  /** Forgets a compiled schema, so its validator can be collected once nothing else holds it. */
  release (schema: object): void {
    this.#ajv?.removeSchema(schema)
  }

  /**
   * The validator of an answer schema, keyed by its JSON text: compiled on first use, kept for
   * the most recently used {@link MAX_ANSWER_SCHEMAS} schemas.
   */
  answerValidator (json: string, render: () => object): Validator {
    const used = ++this.#uses
    const kept = this.#answers.get(json)
    if (kept !== undefined) {
      kept.used = used
      return kept.validate
    }
    const schema = render()
    const validate = this.compile(schema, 'a requested schema')
    if (this.#answers.size >= MAX_ANSWER_SCHEMAS) this.#evictLeastRecentlyUsed()
    this.#answers.set(json, { schema, validate, used })
    return validate
  }

  #evictLeastRecentlyUsed (): void {
    let oldest: string | undefined
    let oldestUse = Infinity
    for (const [json, entry] of this.#answers) {
      if (entry.used < oldestUse) {
        oldest = json
        oldestUse = entry.used
      }
    }
    const entry = this.#answers.get(oldest as string) as { schema: object }
    this.#answers.delete(oldest as string)
    this.release(entry.schema)
  }
}
