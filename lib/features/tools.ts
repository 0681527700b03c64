import { isPlainObject, plainObject } from '../check.js'
import type { McpContext } from '../context.js'
import { InvalidDefinitionError, McpError, invalidParams } from '../errors.js'
import { describeErrors, type SchemaCompiler, type Validator } from '../json-schema.js'
import type { InputRequiredResult, ReplayEngine } from '../mrtr/engine.js'
import { PROTOCOL_VERSION, type CallToolResult, type ContentBlock, type JsonObject, type JsonValue } from '../protocol/wire.js'
import { Catalog, accessCheck, listedForm, type AccessCheck, type Entry } from './catalog.js'
import type { Failures } from './failures.js'
import { ParamHeaders } from './param-headers.js'

/** What `tools/list` tells clients about a tool. */
export interface ToolDefinition {
  /** 1–128 characters, unique in the server; `[A-Za-z0-9_.-]` is recommended. */
  name: string
  title?: string
  description?: string
  /** JSON Schema (2020-12) of the arguments, `type: 'object'` at the root. Default: no arguments. */
  inputSchema?: JsonObject
  /** JSON Schema of `structuredContent`; when set, results must carry conforming structured content. */
  outputSchema?: JsonObject
  annotations?: JsonObject
  icons?: JsonObject[]
  _meta?: JsonObject
  /** Whether the caller may see and call the tool; hidden tools answer like absent ones. Not listed. */
  canAccess?: AccessCheck
}

/**
 * What a tool handler may return: a string (one text block), content blocks, a whole
 * `CallToolResult`, or any other JSON value (an object of plain data, a number, …), which becomes
 * the structured content of a tool with an `outputSchema` and one text block of its JSON
 * otherwise. `undefined` is a result without content.
 */
export type ToolReturn = string | ContentBlock[] | CallToolResult | JsonValue | object | undefined

/** A tool handler: `(args, ctx)`. It re-runs from the top on every input-required round. */
export type ToolHandler<Args = Record<string, any>> = (args: Args, ctx: McpContext) => ToolReturn | Promise<ToolReturn>

interface Tool extends Entry<ToolDefinition> {
  handler: ToolHandler
  /** How logs and errors name it, made once: `tool <name>`. */
  label: string
  inputSchema: JsonObject
  outputSchema: JsonObject | undefined
  validateInput: Validator
  validateOutput: Validator | undefined
  /** Its `Mcp-Param-*` headers, when its inputSchema has `x-mcp-header` properties. */
  paramHeaders: ParamHeaders | undefined
}

// The spec recommends [A-Za-z0-9_.-]; mocapi only refuses what no header or list can carry.
const TOOL_NAME = /^[^\s\p{Cc}]{1,128}$/u
const NO_ARGUMENTS = { type: 'object', additionalProperties: false }
const KNOWN_FIELDS = new Set(['name', 'title', 'description', 'inputSchema', 'outputSchema', 'annotations', 'icons', '_meta', 'canAccess'])

function errorResult (text: string): CallToolResult {
  return { content: [{ type: 'text', text }], isError: true }
}

function isContent (value: unknown): value is ContentBlock[] {
  return Array.isArray(value) && value.every((block) => isPlainObject(block) && typeof block.type === 'string')
}

/** The tools of one server: registration, `tools/list` and `tools/call`. */
export class Tools extends Catalog<ToolDefinition, Tool> {
  readonly #engine: ReplayEngine
  readonly #compiler: SchemaCompiler
  readonly #failures: Failures

  constructor (engine: ReplayEngine, compiler: SchemaCompiler, failures: Failures) {
    super()
    this.#engine = engine
    this.#compiler = compiler
    this.#failures = failures
  }

  /** Registers a tool; throws a registration error naming the bad field. Schemas compile here, once. */
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
    const outputSchema = definition.outputSchema
    if (outputSchema !== undefined) plainObject(outputSchema, `${where} outputSchema`, InvalidDefinitionError)
    const canAccess = accessCheck(definition.canAccess, where)
    const paramHeaders = ParamHeaders.compile(inputSchema, where)
    const validateInput = this.#compiler.compile(inputSchema, `${where} inputSchema`)
    let validateOutput
    try {
      validateOutput = outputSchema === undefined ? undefined : this.#compiler.compile(outputSchema, `${where} outputSchema`)
    } catch (error) {
      this.#compiler.release(inputSchema)
      throw error
    }
    this.put(name, {
      listed: listedForm({ ...definition, inputSchema }),
      canAccess,
      handler: handler as ToolHandler,
      label: `tool ${name}`,
      inputSchema,
      outputSchema,
      validateInput,
      validateOutput,
      paramHeaders,
    })
  }

  /** Removes a tool and releases its compiled schemas. */
  delete (name: string): boolean {
    const tool = this.remove(name)
    if (tool === undefined) return false
    this.#compiler.release(tool.inputSchema)
    if (tool.outputSchema !== undefined) this.#compiler.release(tool.outputSchema)
    return true
  }

  /** Runs `tools/call` through the replay engine. */
  async call (ctx: McpContext): Promise<CallToolResult | InputRequiredResult> {
    const name = ctx.params.name as string
    let tool = this.find(name, ctx)
    if (tool instanceof Promise) tool = await tool
    if (tool === undefined) throw invalidParams(`Unknown tool: ${name}`)
    const args = (ctx.params.arguments ?? {}) as JsonObject
    // 2025-era clients never send these headers.
    if (tool.paramHeaders !== undefined && ctx.protocolVersion === PROTOCOL_VERSION) tool.paramHeaders.check(ctx.request.headers, args)
    if (!tool.validateInput(args)) return errorResult(`Invalid arguments: ${describeErrors('arguments', tool.validateInput.errors)}`)
    const handler = tool.handler
    let outcome
    try {
      outcome = await this.#engine.run(ctx, tool.label, () => handler(args, ctx))
    } catch (error) {
      if (error instanceof McpError) throw error
      return errorResult(this.#failures.handlerFailed(ctx, tool.label, error))
    }
    return 'complete' in outcome ? this.#result(tool, outcome.complete) : outcome
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
