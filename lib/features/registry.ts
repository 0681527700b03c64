import type { ToolDefinition, ToolHandler, Tools } from './tools.js'

/**
 * `app.mcp`: registers what the server offers. Tools, prompts and resources may be added
 * and removed at any time; lists reflect the change on the next request.
 */
export class McpRegistry {
  readonly #tools: Tools

  /** @internal */
  constructor (tools: Tools) {
    this.#tools = tools
  }

  /**
   * Registers a tool. The handler runs from the top on every input-required round, so code
   * before its last `ctx.elicit()` must be idempotent (see `ctx.elicit`).
   */
  tool<Args = Record<string, any>> (definition: ToolDefinition, handler: ToolHandler<Args>): this {
    this.#tools.add(definition, handler as ToolHandler)
    return this
  }

  /** Removes a tool; true when it was registered. */
  removeTool (name: string): boolean {
    return this.#tools.remove(name)
  }

  /** The registered tools' definitions, in `tools/list` order. */
  listTools (): ToolDefinition[] {
    return [...this.#tools.list()]
  }
}
