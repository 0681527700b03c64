import { fail, plainObject } from '../check.js'
import type { McpContext } from '../context.js'
import { InvalidDefinitionError, invalidParams } from '../errors.js'
import { describeErrors, type SchemaCompiler, type Validator } from '../json-schema.js'
import { showsViews } from '../protocol/extensions.js'
import {
  PROTOCOL_VERSION, isPlainObject, type CallToolResult, type ContentBlock, type InputRequiredResult, type JsonObject,
  type JsonValue,
} from '../protocol/wire.js'
import type { Outcome } from '../replay/engine.js'
import { toolTask, type ToolTask, type ToolTaskOptions } from './tool-task.js'
import type { FromSchema } from '../types/json-schema.js'
import { Catalog, accessCheck, listedForm, type AccessCheck, type Entry } from './catalog.js'
import { ParamHeaders } from './param-headers.js'
import { HandlerFailed, type Handlers } from './handlers.js'
import { scopeList, type Scopes } from './scopes.js'
import type { ToolUi, Views } from './views.js'

/**
 * What a tool does, as hosts read it before they call it. Hints, not guarantees: a host must not trust them from a
 * server it does not trust. Connector directories (ChatGPT's, Claude's) ask for `readOnlyHint`, `destructiveHint` and
 * `idempotentHint` set explicitly; set `openWorldHint` too.
 */
export interface ToolAnnotations {
  /** A human-readable title. */
  title?: string | undefined
  /** The tool does not change its environment. Default false. */
  readOnlyHint?: boolean | undefined
  /** It may destroy or overwrite (meaningful when not read-only). Default true. */
  destructiveHint?: boolean | undefined
  /** Calling it again with the same arguments changes nothing more (meaningful when not read-only). Default false. */
  idempotentHint?: boolean | undefined
  /** It reaches an open world (the web, other services), not a closed one. Default true. */
  openWorldHint?: boolean | undefined
  [key: string]: unknown
}

/**
 * What `tools/list` tells clients about a tool. A schema is a JSON Schema object: a literal (whose type, written
 * inline or `as const`, types the handler), a TypeBox schema, or any object built at run time. Ajv validates it
 * whatever its TypeScript type.
 */
export interface ToolDefinition {
  /** 1–128 characters, unique in the server; `[A-Za-z0-9_.-]` is recommended. */
  name: string
  title?: string | undefined
  description?: string | undefined
  /** JSON Schema (2020-12) of the arguments, `type: 'object'` at the root. Default: no arguments. */
  inputSchema?: object | undefined
  /** JSON Schema of `structuredContent`; when set, results must carry conforming structured content. */
  outputSchema?: object | undefined
  /** Hints about what the tool does, for hosts and connector directories: see {@link ToolAnnotations}. */
  annotations?: ToolAnnotations | undefined
  icons?: JsonObject[] | undefined
  _meta?: JsonObject | undefined
  /** Whether the caller may see and call it; hidden, it answers as an absent one ({@link AccessCheck}). Not listed. */
  canAccess?: AccessCheck | undefined
  /** Makes the tool task-capable (the tasks extension): see {@link ToolTaskOptions}. Not listed. */
  task?: ToolTaskOptions | undefined
  /** OAuth scopes the caller's token must grant: else 403 with an `insufficient_scope` challenge. Not listed. */
  scopes?: string[] | undefined
  /**
   * Its view (the MCP Apps extension): a host that shows views renders the tool's results with the view registered
   * at `resourceUri`; `visibility: ['app']` keeps it for views. Listed as `_meta.ui`. See {@link ToolUi}.
   */
  ui?: ToolUi | undefined
}

/** A result whose `structuredContent` is the tool's structured output. */
export interface StructuredToolResult<Structured> extends CallToolResult {
  structuredContent: Structured
}

/** A result that reports a failure: it needs no structured content, whatever the outputSchema. */
export interface ToolErrorResult extends CallToolResult {
  isError: true
}

/**
 * What a tool handler may return (or resolve to).
 *
 * `ToolReturn`, for a tool without an outputSchema, or with one TypeScript cannot read:
 * - a `string`: one text block;
 * - `ContentBlock[]`: the content, as is;
 * - a `CallToolResult` (an object whose `content` is an array of blocks): the result, as is;
 * - `undefined`: a result without content;
 * - any other JSON value (plain object, array, number, …): one text block of its JSON, or, when the tool has an
 *   outputSchema, the structured content, checked against it and mirrored as that text block. The union is wide on
 *   purpose: it takes objects typed by interfaces.
 *
 * `ToolReturn<Structured>`, for a literal or TypeBox `outputSchema`: the structured content itself (checked and
 * mirrored as above), a `CallToolResult` carrying it as `structuredContent`, or an error result (`isError: true`).
 * A string or content blocks alone would fail the outputSchema at run time, so they do not compile.
 */
export type ToolReturn<Structured = never> =
  | Structured
  | StructuredToolResult<Structured>
  | ToolErrorResult
  | Unstructured<Structured>

/** What only a tool without typed structured content may return. */
type Unstructured<Structured> = [Structured] extends [never]
  ? string | ContentBlock[] | CallToolResult | JsonValue | object | undefined
  : never

/**
 * A tool handler: `(args, ctx)`. It re-runs from the top on every input-required round. `Args` are
 * the arguments, checked against the inputSchema before the handler runs; `Structured`, the type of
 * its structured content (see {@link ToolReturn}).
 */
export type ToolHandler<Args = Record<string, any>, Structured = never> =
  (args: Args, ctx: McpContext) => ToolReturn<Structured> | Promise<ToolReturn<Structured>>

/**
 * A handler's arguments: the type of a literal or TypeBox `inputSchema` (see {@link FromSchema}); `{}` without one,
 * as mocapi then refuses any; `Record<string, any>` for one TypeScript cannot read (typed `JsonObject` or built at
 * run time), whose handlers type their arguments themselves.
 */
export type ToolArguments<Definition> = [SchemaOf<Definition, 'inputSchema'>] extends [never]
  ? Record<never, never>
  : unknown extends FromSchema<SchemaOf<Definition, 'inputSchema'>> ? Record<string, any> : FromSchema<SchemaOf<Definition, 'inputSchema'>>

/** Whether a definition's inputSchema decides its handler's arguments: it is absent, literal or TypeBox. */
export type TypedBySchema<Definition> = [SchemaOf<Definition, 'inputSchema'>] extends [never]
  ? true
  : unknown extends FromSchema<SchemaOf<Definition, 'inputSchema'>> ? false : true

/** The type of a tool's structured content, from a literal or TypeBox `outputSchema`; `never` when none can be read. */
export type ToolStructuredContent<Definition> = unknown extends FromSchema<SchemaOf<Definition, 'outputSchema'>>
  ? never
  : FromSchema<SchemaOf<Definition, 'outputSchema'>>

type SchemaOf<Definition, Key extends 'inputSchema' | 'outputSchema'> = Key extends keyof Definition
  ? Exclude<Definition[Key], undefined>
  : never

export interface Tool extends Entry<ToolDefinition> {
  handler: ToolHandler
  label: string
  inputSchema: JsonObject
  outputSchema: JsonObject | undefined
  validateInput: Validator
  validateOutput: Validator | undefined
  paramHeaders: ParamHeaders | undefined
  task: ToolTask | undefined
  view: string | undefined
}

// The spec recommends [A-Za-z0-9_.-]; mocapi only refuses what no header or list can carry.
const TOOL_NAME = /^[^\s\p{Cc}]{1,128}$/u
const NO_ARGUMENTS = { type: 'object', additionalProperties: false }
const HINTS = ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'] as const

function checkAnnotations (annotations: unknown, where: string): void {
  if (annotations === undefined) return
  const object = plainObject(annotations, `${where} annotations`, InvalidDefinitionError)
  for (const hint of HINTS) {
    if (object[hint] !== undefined && typeof object[hint] !== 'boolean') fail(`${where} annotations.${hint}`, 'true or false', object[hint], InvalidDefinitionError)
  }
  if (object.title !== undefined && typeof object.title !== 'string') fail(`${where} annotations.title`, 'a string', object.title, InvalidDefinitionError)
}

const KNOWN_FIELDS = new Set(['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations', 'icons', '_meta', 'canAccess', 'task', 'scopes', 'ui'])

function errorResult (text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true }
}

function isContent (value: unknown): value is ContentBlock[] {
  return Array.isArray(value) && value.every((block) => isPlainObject(block) && typeof block.type === 'string')
}

export interface ToolCall {
  readonly tool: Tool
  readonly args: JsonObject
}

/** A pass of a task parks: its questions went to the task, and nothing is replied. */
export type ToolEnd = CallToolResult | InputRequiredResult | Extract<Outcome<unknown>, { kind: 'parked' }>

export class Tools extends Catalog<ToolDefinition, Tool> {
  readonly #handlers: Handlers
  readonly #compiler: SchemaCompiler
  readonly #scopes: Scopes
  readonly #views: Views
  /** Listed forms of the tools only views call, left out for clients that show no views. */
  readonly #appOnly = new Set<ToolDefinition>()

  constructor (handlers: Handlers, compiler: SchemaCompiler, scopes: Scopes, views: Views) {
    super()
    this.#handlers = handlers
    this.#compiler = compiler
    this.#scopes = scopes
    this.#views = views
  }

  override get varies (): boolean {
    return super.varies || this.#appOnly.size > 0
  }

  add (definition: ToolDefinition, handler: ToolHandler): void {
    plainObject(definition, 'a tool definition', InvalidDefinitionError)
    const name = definition.name
    if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
      throw new InvalidDefinitionError(`tool name must be 1-128 characters without spaces or control characters, got ${JSON.stringify(name)}`)
    }
    const where = `tool "${name}"`
    this.checkNew(name, where, definition as unknown as Record<string, unknown>, KNOWN_FIELDS, handler)
    const inputSchema = definition.inputSchema ?? NO_ARGUMENTS
    if (!isPlainObject(inputSchema) || inputSchema.type !== 'object') {
      throw new InvalidDefinitionError(`${where} inputSchema must be an object schema with type: 'object'`)
    }
    const outputSchema = definition.outputSchema === undefined ? undefined : plainObject(definition.outputSchema, `${where} outputSchema`, InvalidDefinitionError)
    const canAccess = accessCheck(definition.canAccess, where)
    checkAnnotations(definition.annotations, where)
    const scopes = scopeList(definition.scopes, where)
    const ui = this.#views.toolUi(definition.ui, definition._meta, where)
    const task = toolTask(definition.task, where)
    const paramHeaders = ParamHeaders.compile(inputSchema, where)
    const validateInput = this.#compiler.compile(inputSchema, `${where} inputSchema`)
    let validateOutput
    try {
      validateOutput = outputSchema === undefined ? undefined : this.#compiler.compile(outputSchema, `${where} outputSchema`)
    } catch (error) {
      this.#compiler.release(inputSchema)
      throw error
    }
    const { ui: _ui, ...described } = definition
    const listed = listedForm(ui.meta === undefined
      ? { ...described, inputSchema }
      : { ...described, inputSchema, _meta: ui.meta })
    this.put(name, {
      listed,
      canAccess,
      handler: handler as ToolHandler,
      label: `tool ${name}`,
      inputSchema,
      outputSchema,
      validateInput,
      validateOutput,
      paramHeaders,
      task,
      scopes,
      view: ui.resourceUri,
    })
    if (ui.resourceUri !== undefined) this.#views.link(ui.resourceUri, name)
    if (ui.appOnly) this.#appOnly.add(listed)
  }

  delete (name: string): boolean {
    const tool = this.remove(name)
    if (tool === undefined) return false
    this.#compiler.release(tool.inputSchema)
    if (tool.outputSchema !== undefined) this.#compiler.release(tool.outputSchema)
    if (tool.view !== undefined) this.#views.unlink(tool.view, name)
    this.#appOnly.delete(tool.listed)
    return true
  }

  override async visible (ctx: McpContext): Promise<ToolDefinition[]> {
    const shown = await super.visible(ctx)
    if (this.#appOnly.size === 0 || showsViews(ctx.clientCapabilities)) return shown
    return shown.filter((listed) => !this.#appOnly.has(listed))
  }

  async resolve (ctx: McpContext): Promise<ToolCall | CallToolResult> {
    const name = ctx.params.name as string
    let tool = this.find(name, ctx)
    if (tool instanceof Promise) tool = await tool
    if (tool === undefined) throw invalidParams(`Unknown tool: ${name}`)
    this.#scopes.check(tool.scopes, ctx, 'The tool', name)
    const args = (ctx.params.arguments ?? {}) as JsonObject
    // 2025-era clients never send these headers.
    if (tool.paramHeaders !== undefined &&
      ctx.protocolVersion === PROTOCOL_VERSION) tool.paramHeaders.check(ctx.request.headers, args)
    if (!tool.validateInput(args)) return errorResult(`Invalid arguments: ${describeErrors('arguments', tool.validateInput.errors)}`)
    return { tool, args }
  }

  async run (ctx: McpContext, { tool, args }: ToolCall): Promise<ToolEnd> {
    const handler = tool.handler
    let outcome
    try {
      outcome = await this.#handlers.replay(ctx, tool.label, () => handler(args, ctx))
    } catch (error) {
      if (error instanceof HandlerFailed) return errorResult(error.message)
      throw error
    }
    if (outcome.kind === 'complete') return this.#result(tool, outcome.value)
    return outcome.kind === 'input_required' ? outcome.result : outcome
  }

  /** A stored call's tool (a task's next pass): its arguments were checked when the call was made. */
  async stored (ctx: McpContext): Promise<ToolCall> {
    const name = ctx.params.name as string
    const tool = await this.find(name, ctx)
    if (tool === undefined) throw invalidParams(`Unknown tool: ${name}`)
    return { tool, args: ctx.params.arguments as JsonObject }
  }

  #result (tool: Tool, value: unknown): CallToolResult {
    let result: CallToolResult
    if (typeof value === 'string') result = { content: [{ type: 'text', text: value }] }
    else if (isContent(value)) result = { content: value }
    else if (isPlainObject(value) && isContent(value.content)) result = value as unknown as CallToolResult
    else if (tool.validateOutput !== undefined) {
      result = { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value }
    } else result = { content: value === undefined ? [] : [{ type: 'text', text: JSON.stringify(value) }] }

    const validate = tool.validateOutput
    if (validate !== undefined && result.isError !== true) {
      if (!('structuredContent' in result)) return errorResult(`Tool ${tool.listed.name} returned no structuredContent, which its outputSchema requires`)
      if (!validate(result.structuredContent)) {
        return errorResult(`Tool ${tool.listed.name} returned structuredContent that does not match its outputSchema: ${describeErrors('structuredContent', validate.errors)}`)
      }
    }
    return result
  }
}
