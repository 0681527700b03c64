import type { McpContext } from '../context.js'
import { invalidParams } from '../errors.js'
import type { InputRequiredResult, ReplayEngine } from '../mrtr/replay.js'
import { isPlainObject, type ContentBlock, type JsonObject } from '../protocol/wire.js'
import { toCompleter, type Completer, type CompletionSource } from './completions.js'
import { Catalog, accessCheck, checkFields, listedForm, type AccessCheck, type Entry } from './catalog.js'

/** One argument of a prompt, as `prompts/list` shows it, plus how to complete it. */
export interface PromptArgument {
  name: string
  title?: string
  description?: string
  required?: boolean
  /** Values for `completion/complete`: a completer, or a list completed by prefix. Not listed. */
  complete?: CompletionSource
}

/** A prompt's definition. */
export interface PromptDefinition {
  /** Unique among the server's prompts. */
  name: string
  title?: string
  description?: string
  arguments?: PromptArgument[]
  icons?: JsonObject[]
  _meta?: JsonObject
  /** Whether the caller may see and get the prompt; hidden prompts answer like absent ones. Not listed. */
  canAccess?: AccessCheck
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
  (args: Args, ctx: McpContext) => string | PromptMessage[] | GetPromptResult | Promise<string | PromptMessage[] | GetPromptResult>

interface Prompt extends Entry<PromptDefinition> {
  handler: PromptHandler
  /** How logs and errors name it, made once: `prompt <name>`. */
  label: string
  required: string[]
  known: Set<string>
  completers: Map<string, Completer>
}

const PROMPT_FIELDS = new Set(['name', 'title', 'description', 'arguments', 'icons', '_meta', 'canAccess'])
const ARGUMENT_FIELDS = new Set(['name', 'title', 'description', 'required', 'complete'])

function isMessages (value: unknown): value is PromptMessage[] {
  return Array.isArray(value) && value.every((m) => isPlainObject(m) && (m.role === 'user' || m.role === 'assistant') && isPlainObject(m.content))
}

/** The prompts of one server: registration, `prompts/list` and `prompts/get`. */
export class Prompts extends Catalog<PromptDefinition, Prompt> {
  /** Registers a prompt; throws a TypeError naming the bad field. */
  add (definition: PromptDefinition, handler: PromptHandler): void {
    if (!isPlainObject(definition)) throw new TypeError('mocapi: a prompt definition must be an object')
    const name = definition.name
    if (typeof name !== 'string' || name === '') throw new TypeError(`mocapi: prompt name must be a non-empty string, got ${JSON.stringify(name)}`)
    this.checkNew(name, `prompt "${name}"`, definition, PROMPT_FIELDS, handler)
    const args = definition.arguments ?? []
    if (!Array.isArray(args)) throw new TypeError(`mocapi: prompt "${name}" arguments must be an array`)
    const known = new Set<string>()
    const completers = new Map<string, Completer>()
    const listedArgs = args.map((arg, i) => {
      const where = `prompt "${name}" arguments[${i}]`
      if (!isPlainObject(arg) || typeof arg.name !== 'string' || arg.name === '') throw new TypeError(`mocapi: ${where} needs a non-empty name`)
      checkFields(arg, ARGUMENT_FIELDS, where)
      if (known.has(arg.name)) throw new TypeError(`mocapi: ${where} repeats the argument "${arg.name}"`)
      known.add(arg.name)
      const completer = toCompleter(arg.complete, `${where}.complete`)
      if (completer !== undefined) completers.set(arg.name, completer)
      return listedForm(arg)
    })
    this.put(name, {
      listed: listedForm(definition.arguments === undefined ? definition : { ...definition, arguments: listedArgs }),
      canAccess: accessCheck(definition.canAccess, `prompt "${name}"`),
      handler: handler as PromptHandler,
      label: `prompt ${name}`,
      required: args.filter((arg) => arg.required === true).map((arg) => arg.name),
      known,
      completers,
    })
  }

  /** The completer of one argument, when the caller may see the prompt; -32602 otherwise. */
  async completer (name: string, argument: string, ctx: McpContext): Promise<Completer | undefined> {
    const prompt = await this.find(name, ctx)
    if (prompt === undefined) throw invalidParams(`Unknown prompt: ${name}`)
    return prompt.completers.get(argument)
  }

  /** Runs `prompts/get` through the replay engine. */
  async get (ctx: McpContext, engine: ReplayEngine): Promise<GetPromptResult | InputRequiredResult> {
    const name = ctx.params.name as string
    const prompt = await this.find(name, ctx)
    if (prompt === undefined) throw invalidParams(`Unknown prompt: ${name}`)
    const args = (ctx.params.arguments ?? {}) as JsonObject
    for (const [key, value] of Object.entries(args)) {
      if (!prompt.known.has(key)) throw invalidParams(`Unknown argument "${key}" for prompt ${name}`)
      if (typeof value !== 'string') throw invalidParams(`Argument "${key}" of prompt ${name} must be a string`)
    }
    for (const key of prompt.required) {
      if (args[key] === undefined) throw invalidParams(`Missing required argument "${key}" for prompt ${name}`)
    }
    const outcome = await engine.run(ctx, prompt.label, () => prompt.handler(args as Record<string, string>, ctx))
    if (!('complete' in outcome)) return outcome
    const value = outcome.complete
    if (typeof value === 'string') return { messages: [{ role: 'user', content: { type: 'text', text: value } }] }
    if (isMessages(value)) return { messages: value }
    if (isPlainObject(value) && isMessages(value.messages)) return value
    throw new TypeError(`prompt ${name} returned neither a string, messages, nor a GetPromptResult`)
  }
}
