import type { ValidateFunction } from 'ajv'
import type { McpContext } from '../context.js'
import { McpError, invalidParams } from '../errors.js'
import type { ReplayEngine, InputRequiredResult } from '../mrtr/replay.js'
import { isPlainObject, type CallToolResult, type ContentBlock, type JsonObject } from '../protocol/wire.js'
import { Catalog, accessCheck, listedForm, type AccessCheck, type Entry } from './catalog.js'
import { compileSchema, describeErrors } from './schema-compiler.js'

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
 * What a tool handler may return: a string (one text block), a `CallToolResult`, or, for a
 * tool with an `outputSchema`, the structured value itself.
 */
export type ToolReturn = string | CallToolResult | ContentBlock[] | unknown

/** A tool handler: `(args, ctx)`. It re-runs from the top on every input-required round. */
export type ToolHandler<Args = Record<string, any>> = (args: Args, ctx: McpContext) => ToolReturn | Promise<ToolReturn>

interface Tool extends Entry<ToolDefinition> {
  handler: ToolHandler
  /** How logs and errors name it, made once: `tool <name>`. */
  label: string
  validateInput: ValidateFunction
  validateOutput: ValidateFunction | undefined
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
  /** Registers a tool; throws a TypeError naming the bad field. Schemas compile here, once. */
  add (definition: ToolDefinition, handler: ToolHandler): void {
    if (!isPlainObject(definition)) throw new TypeError('mocapi: a tool definition must be an object')
    const name = definition.name
    if (typeof name !== 'string' || !TOOL_NAME.test(name)) {
      throw new TypeError(`mocapi: tool name must be 1-128 characters without spaces or control characters, got ${JSON.stringify(name)}`)
    }
    this.checkNew(name, `tool "${name}"`, definition, KNOWN_FIELDS, handler)
    const inputSchema = definition.inputSchema ?? NO_ARGUMENTS
    if (!isPlainObject(inputSchema) || inputSchema.type !== 'object') {
      throw new TypeError(`mocapi: tool "${name}" inputSchema must be an object schema with type: 'object'`)
    }
    const outputSchema = definition.outputSchema
    if (outputSchema !== undefined && !isPlainObject(outputSchema)) {
      throw new TypeError(`mocapi: tool "${name}" outputSchema must be a JSON Schema object`)
    }
    this.put(name, {
      listed: listedForm({ ...definition, inputSchema }),
      canAccess: accessCheck(definition.canAccess, `tool "${name}"`),
      handler: handler as ToolHandler,
      label: `tool ${name}`,
      validateInput: compileSchema(inputSchema, `tool "${name}" inputSchema`),
      validateOutput: outputSchema === undefined ? undefined : compileSchema(outputSchema, `tool "${name}" outputSchema`),
    })
  }

  /** Runs `tools/call` through the replay engine. */
  async call (ctx: McpContext, engine: ReplayEngine): Promise<CallToolResult | InputRequiredResult> {
    const name = ctx.params.name as string
    let tool = this.find(name, ctx)
    if (tool instanceof Promise) tool = await tool
    if (tool === undefined) throw invalidParams(`Unknown tool: ${name}`)
    const args = (ctx.params.arguments ?? {}) as JsonObject
    if (!tool.validateInput(args)) return errorResult(`Invalid arguments: ${describeErrors('arguments', tool.validateInput.errors)}`)
    let outcome
    try {
      outcome = await engine.run(ctx, tool.label, () => tool.handler(args, ctx))
    } catch (error) {
      if (error instanceof McpError) throw error
      ctx.request.log.debug({ err: error }, 'mocapi tool handler threw')
      return errorResult(error instanceof Error ? error.message : String(error))
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
