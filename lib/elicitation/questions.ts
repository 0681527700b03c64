/** One object per ask, its wire request built only when sent: a replay reads the ledger (bench/README.md#questions). */
import { digest } from '../seal/digest.js'
import { isPlainObject, type ClientCapabilities, type InputRequest, type JsonObject } from '../protocol/wire.js'
import { checkRootsAnswer, checkSamplingAnswer, checkUrlAnswer, type Checked, type Form, type FormAnswers } from './answers.js'
import type { RequestedSchemaBuilder } from './schema.js'

type KeyPrefix = 'elicit' | 'sample' | 'roots'

// Constants, not made per ask: V8 looks a fresh string up at every property access (bench/README.md#questions).
const DEFAULT_KEYS: Readonly<Record<KeyPrefix, readonly string[]>> = {
  elicit: Array.from({ length: 64 }, (_, i) => `elicit-${i + 1}`),
  sample: Array.from({ length: 64 }, (_, i) => `sample-${i + 1}`),
  roots: Array.from({ length: 64 }, (_, i) => `roots-${i + 1}`),
}

export function defaultKey (prefix: KeyPrefix, ordinal: number): string {
  return DEFAULT_KEYS[prefix][ordinal] ?? `${prefix}-${ordinal + 1}`
}

export type QuestionKind = 'elicit' | 'elicitUrl' | 'sample' | 'roots'

export interface Question {
  readonly kind: QuestionKind
  readonly prefix: KeyPrefix
  /** The digest of the schema, URL or sampling params. */
  shapeOf (): string
  readonly text: string
  /** About its characters as sent, which the round's budget bounds. */
  readonly size: number
  missing (capabilities: ClientCapabilities): Record<string, unknown> | undefined
  build (): InputRequest
  check (value: unknown): Checked
}

export class FormQuestion implements Question {
  readonly kind = 'elicit'
  readonly prefix = 'elicit'
  readonly text: string
  readonly #schema: RequestedSchemaBuilder<object>
  readonly #forms: FormAnswers
  #form: Form | undefined

  /** `forms`: the registration's, which finds the schema's form (digested, rendered, compiled) once. */
  constructor (message: string, schema: RequestedSchemaBuilder<object>, forms: FormAnswers) {
    this.text = message
    this.#schema = schema
    this.#forms = forms
  }

  get #formOf (): Form {
    this.#form ??= this.#forms.of(this.#schema)
    return this.#form
  }

  shapeOf (): string {
    return this.#formOf.shape
  }

  get size (): number {
    return this.text.length + this.#formOf.size
  }

  missing (capabilities: ClientCapabilities): Record<string, unknown> | undefined {
    const elicitation = capabilities.elicitation
    if (!isPlainObject(elicitation)) return { elicitation: {} }
    if (elicitation.form === undefined && elicitation.url !== undefined) return { elicitation: { form: {} } }
    return undefined
  }

  build (): InputRequest {
    const requestedSchema = this.#formOf.schema as unknown as JsonObject
    return { method: 'elicitation/create', params: { mode: 'form', message: this.text, requestedSchema } }
  }

  check (value: unknown): Checked {
    return this.#forms.check(this.#formOf, value)
  }
}

export class UrlQuestion implements Question {
  readonly kind = 'elicitUrl'
  readonly prefix = 'elicit'
  readonly text: string
  readonly size: number
  readonly #shape: string
  readonly #url: string

  constructor (message: string, url: string) {
    this.text = message
    this.#url = url
    this.#shape = digest('elicitUrl', url)
    this.size = message.length + url.length
  }

  shapeOf (): string {
    return this.#shape
  }

  missing (capabilities: ClientCapabilities): Record<string, unknown> | undefined {
    const elicitation = capabilities.elicitation
    return isPlainObject(elicitation) && isPlainObject(elicitation.url) ? undefined : { elicitation: { url: {} } }
  }

  build (): InputRequest {
    return { method: 'elicitation/create', params: { mode: 'url', message: this.text, url: this.#url } }
  }

  check (value: unknown): Checked {
    return checkUrlAnswer(value)
  }
}

export class SamplingQuestion implements Question {
  readonly kind = 'sample'
  readonly prefix = 'sample'
  readonly text = ''
  readonly size: number
  readonly #shape: string
  readonly #params: JsonObject

  constructor (params: JsonObject) {
    const json = JSON.stringify(params)
    this.#params = params
    this.#shape = digest('sample', json)
    this.size = json.length
  }

  shapeOf (): string {
    return this.#shape
  }

  missing (capabilities: ClientCapabilities): Record<string, unknown> | undefined {
    const sampling = capabilities.sampling
    const params = this.#params
    if (!isPlainObject(sampling)) return { sampling: {} }
    if ((params.tools !== undefined || params.toolChoice !== undefined) &&
      !isPlainObject(sampling.tools)) return { sampling: { tools: {} } }
    if (params.includeContext !== undefined && params.includeContext !== 'none' && !isPlainObject(sampling.context)) {
      return { sampling: { context: {} } }
    }
    return undefined
  }

  build (): InputRequest {
    return { method: 'sampling/createMessage', params: this.#params }
  }

  check (value: unknown): Checked {
    return checkSamplingAnswer(value)
  }
}

const ROOTS_SHAPE = digest('roots', '')

export const ROOTS_QUESTION: Question = Object.freeze({
  kind: 'roots',
  prefix: 'roots',
  text: '',
  shapeOf: () => ROOTS_SHAPE,
  size: 0,
  missing: (capabilities: ClientCapabilities) => isPlainObject(capabilities.roots) ? undefined : { roots: {} },
  build: (): InputRequest => ({ method: 'roots/list', params: {} }),
  check: (value: unknown) => checkRootsAnswer(value),
})

/** The question a sent request asked, rebuilt from it: what an answer arriving through a task is checked against. */
export function questionFor (request: InputRequest, forms: FormAnswers): Question {
  const params = request.params as JsonObject
  if (request.method === 'sampling/createMessage') return new SamplingQuestion(params)
  if (request.method === 'roots/list') return ROOTS_QUESTION
  if (params.mode === 'url') return new UrlQuestion(params.message as string, params.url as string)
  const schema = { schema: params.requestedSchema } as unknown as RequestedSchemaBuilder<object>
  return new FormQuestion(params.message as string, schema, forms)
}
