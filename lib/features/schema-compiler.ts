import { Ajv2020, type ErrorObject, type ValidateFunction } from 'ajv/dist/2020.js'
import addFormats from 'ajv-formats'

// One compiler for the JSON Schemas handlers declare (inputSchema, outputSchema, prompt
// arguments). Schemas compile at registration, never per request.
const ajv = new Ajv2020({ strict: false, allErrors: false, validateFormats: true })
addFormats.default(ajv)

/** Compiles a handler's JSON Schema; throws a TypeError naming `where` when the schema is invalid. */
export function compileSchema (schema: object, where: string): ValidateFunction {
  try {
    return ajv.compile(schema)
  } catch (error) {
    throw new TypeError(`mocapi: ${where} is not a valid JSON Schema: ${(error as Error).message}`)
  }
}

/** One line naming the first failure of a validation that failed: `arguments.to must be string`. */
export function describeErrors (root: string, errors: ErrorObject[] | null | undefined): string {
  // Ajv fills `errors` whenever validation fails, each with a message.
  const error = (errors as ErrorObject[])[0]
  const path = error.instancePath.split('/').slice(1).map((s) => `.${s.replace(/~1/g, '/').replace(/~0/g, '~')}`).join('')
  if (error.keyword === 'additionalProperties') {
    return `${root}${path} must not have property '${(error.params as { additionalProperty: string }).additionalProperty}'`
  }
  return `${root}${path} ${error.message as string}`
}
