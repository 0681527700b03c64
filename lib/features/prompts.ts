import { knownFields, plainObject } from '../check.js'
import type { McpContext } from '../context.js'
import { InvalidDefinitionError, invalidParams } from '../errors.js'
import { firstError, type SchemaCompiler, type Validator } from '../json-schema.js'
import { isPlainObject, setOwn, type ContentBlock, type InputRequiredResult, type JsonObject } from '../protocol/wire.js'
import { toCompleter, type Completer, type CompletionSource } from './completions.js'
import { Catalog, accessCheck, listedForm, type AccessCheck, type Entry } from './catalog.js'
import { replyOf, type Handlers } from './handlers.js'
import { scopeList, type Scopes } from './scopes.js'

/** One argument of a prompt, as `prompts/list` shows it, plus how to complete it. */
export interface PromptArgument {
  name: string
  title?: string | undefined
  description?: string | undefined
  required?: boolean | undefined
  /** Values for `completion/complete`: a completer, or a list completed by prefix. Not listed. */
  complete?: CompletionSource | undefined
}

/** A prompt's definition. */
export interface PromptDefinition {
  /** Unique among the server's prompts. */
  name: string
  title?: string | undefined
  description?: string | undefined
  arguments?: PromptArgument[] | undefined
  icons?: JsonObject[] | undefined
  _meta?: JsonObject | undefined
  /** Whether the caller may see and get it; hidden, it answers as an absent one ({@link AccessCheck}). Not listed. */
  canAccess?: AccessCheck | undefined
  /** OAuth scopes the caller's token must grant: else 403 with an `insufficient_scope` challenge. Not listed. */
  scopes?: string[] | undefined
}

/** One message of a prompt. */
export interface PromptMessage {
  role: 'user' | 'assistant'
  content: ContentBlock
}

/** The result of `prompts/get`. */
export interface GetPromptResult {
  description?: string
  messages: PromptMessage[]
  _meta?: JsonObject
}

/**
 * A prompt handler: `(args, ctx)`. It may return a string (one user text message), the
 * messages, or a whole `GetPromptResult`. Like tools, it re-runs on every input-required round.
 */
export type PromptHandler<Args = Record<string, string>> =
  (args: Args, ctx: McpContext) =>
    string | PromptMessage[] | GetPromptResult | Promise<string | PromptMessage[] | GetPromptResult>

interface Prompt extends Entry<PromptDefinition> {
  handler: PromptHandler
  label: string
  argumentsSchema: JsonObject
  validateArguments: Validator
  completers: Map<string, Completer>
}

const PROMPT_FIELDS = new Set(['name', 'title', 'description', 'arguments', 'icons', '_meta', 'canAccess', 'scopes'])
const ARGUMENT_FIELDS = new Set(['name', 'title', 'description', 'required', 'complete'])

function isMessages (value: unknown): value is PromptMessage[] {
  return Array.isArray(value) && value.every((m) => isPlainObject(m) && (m.role === 'user' || m.role === 'assistant') && isPlainObject(m.content))
}

export class Prompts extends Catalog<PromptDefinition, Prompt> {
  readonly #handlers: Handlers
  readonly #compiler: SchemaCompiler
  readonly #scopes: Scopes

  constructor (handlers: Handlers, compiler: SchemaCompiler, scopes: Scopes) {
    super()
    this.#handlers = handlers
    this.#compiler = compiler
    this.#scopes = scopes
  }

  add (definition: PromptDefinition, handler: PromptHandler): void {
    plainObject(definition, 'a prompt definition', InvalidDefinitionError)
    const name = definition.name
    if (typeof name !== 'string' || name === '') throw new InvalidDefinitionError(`prompt name must be a non-empty string, got ${JSON.stringify(name)}`)
    const where = `prompt "${name}"`
    this.checkNew(name, where, definition as unknown as Record<string, unknown>, PROMPT_FIELDS, handler)
    const args = definition.arguments ?? []
    if (!Array.isArray(args)) throw new InvalidDefinitionError(`${where} arguments must be an array`)
    const properties: JsonObject = {}
    const required: string[] = []
    const completers = new Map<string, Completer>()
    const listedArgs = args.map((arg, i) => {
      const at = `${where} arguments[${i}]`
      if (!isPlainObject(arg) || typeof arg.name !== 'string' || arg.name === '') throw new InvalidDefinitionError(`${at} needs a non-empty name`)
      knownFields(arg as unknown as Record<string, unknown>, ARGUMENT_FIELDS, at, InvalidDefinitionError)
      if (Object.hasOwn(properties, arg.name)) throw new InvalidDefinitionError(`${at} repeats the argument "${arg.name}"`)
      setOwn(properties, arg.name, { type: 'string' })
      if (arg.required === true) required.push(arg.name)
      const completer = toCompleter(arg.complete, `${at}.complete`)
      if (completer !== undefined) completers.set(arg.name, completer)
      return listedForm(arg)
    })
    const canAccess = accessCheck(definition.canAccess, where)
    const scopes = scopeList(definition.scopes, where)
    const argumentsSchema = { type: 'object', properties, required, additionalProperties: false }
    this.put(name, {
      listed: listedForm(definition.arguments === undefined ? definition : { ...definition, arguments: listedArgs }),
      canAccess,
      scopes,
      handler: handler as PromptHandler,
      label: `prompt ${name}`,
      argumentsSchema,
      validateArguments: this.#compiler.compile(argumentsSchema, `${where} arguments`),
      completers,
    })
  }

  delete (name: string): boolean {
    const prompt = this.remove(name)
    if (prompt === undefined) return false
    this.#compiler.release(prompt.argumentsSchema)
    return true
  }

  async completer (name: string, argument: string, ctx: McpContext): Promise<Completer | undefined> {
    const prompt = await this.find(name, ctx)
    if (prompt === undefined) throw invalidParams(`Unknown prompt: ${name}`)
    this.#scopes.check(prompt.scopes, ctx, 'The prompt', name)
    return prompt.completers.get(argument)
  }

  async get (ctx: McpContext): Promise<GetPromptResult | InputRequiredResult> {
    const name = ctx.params.name as string
    const prompt = await this.find(name, ctx)
    if (prompt === undefined) throw invalidParams(`Unknown prompt: ${name}`)
    this.#scopes.check(prompt.scopes, ctx, 'The prompt', name)
    const args = (ctx.params.arguments ?? {}) as JsonObject
    if (!prompt.validateArguments(args)) throw invalidParams(argumentsProblem(name, prompt.validateArguments))
    const handler = prompt.handler
    const strings = args as Record<string, string>
    const run = async (): Promise<GetPromptResult> => promptResult(name, await handler(strings, ctx))
    return replyOf(await this.#handlers.replay(ctx, prompt.label, run))
  }
}

function promptResult (name: string, value: string | PromptMessage[] | GetPromptResult): GetPromptResult {
  if (typeof value === 'string') return { messages: [{ role: 'user', content: { type: 'text', text: value } }] }
  if (isMessages(value)) return { messages: value }
  if (isPlainObject(value) && isMessages(value.messages)) return value
  throw new TypeError(`prompt ${name} returned neither a string, messages, nor a GetPromptResult`)
}

function argumentsProblem (name: string, validate: Validator): string {
  const { keyword, path, params } = firstError(validate.errors)
  if (keyword === 'additionalProperties') return `Unknown argument "${params.additionalProperty as string}" for prompt ${name}`
  if (keyword === 'required') return `Missing required argument "${params.missingProperty as string}" for prompt ${name}`
  return `Argument "${path[0]}" of prompt ${name} must be a string`
}
