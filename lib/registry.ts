import { InvalidDefinitionError } from './errors.js'
import type { PromptDefinition, PromptHandler, Prompts } from './features/prompts.js'
import type { ResourceDefinition, ResourceHandler, ResourceTemplateDefinition, ResourceTemplateHandler, Resources } from './features/resources.js'
import type { ChangeEvent } from './bus/events.js'
import type { EmitOptions, Events } from './events/events.js'
import type { EventDefinition, EventTypes, TypedEventDefinition } from './events/types.js'
import type { Skills, SkillsOptions } from './features/skills.js'
import type { ViewDefinition, Views } from './features/views.js'
import type { ToolArguments, ToolDefinition, ToolHandler, ToolStructuredContent, Tools, TypedBySchema } from './features/tools.js'

/** `tool`'s `Args` when it is neither given nor taken from the handler's annotation. */
interface Unannotated { readonly '~mocapi.unannotated': true }

/** What a literal or TypeBox inputSchema types; else `Args`, given or annotated; else `Record<string, any>`. */
type HandlerArguments<Definition, Args> = [Args] extends [Unannotated]
  ? ToolArguments<Definition>
  : TypedBySchema<Definition> extends true ? ToolArguments<Definition> : Args

/** Fields a tool definition does not have, refused as a plain `ToolDefinition` annotation would refuse them. */
type UnknownFields<Definition> = { [Key in Exclude<keyof Definition, keyof ToolDefinition>]: never }

type Announce = (event: ChangeEvent) => void

/** `app.mcp`: add and remove tools, prompts and resources at any time; `subscriptions/listen` hears of each change. */
export class McpRegistry {
  readonly #tools: Tools
  readonly #prompts: Prompts
  readonly #resources: Resources
  readonly #views: Views
  readonly #skills: Skills
  readonly #announce: (event: ChangeEvent) => void
  readonly #eventTypes: EventTypes
  readonly #events: Events

  /** @internal */
  constructor (parts: {
    tools: Tools,
    prompts: Prompts,
    resources: Resources,
    views: Views,
    skills: Skills,
    announce: Announce,
    eventTypes: EventTypes,
    events: Events
  }) {
    this.#eventTypes = parts.eventTypes
    this.#events = parts.events
    this.#tools = parts.tools
    this.#prompts = parts.prompts
    this.#resources = parts.resources
    this.#views = parts.views
    this.#skills = parts.skills
    this.#announce = parts.announce
  }

  /**
   * Registers a tool. The handler runs from the top on every input-required round, so code before its last
   * `ctx.elicit()` must be idempotent (see `ctx.elicit`).
   *
   * Arguments are typed from a literal or TypeBox `inputSchema` (see `ToolArguments`) and the return from a literal
   * or TypeBox `outputSchema` (see `ToolReturn`), as Fastify's type providers type `request.body`; a handler
   * annotation must accept what the schema lets through. `tool<Args>(…)` types the arguments instead, as does an
   * annotation when TypeScript cannot read the inputSchema (one built at run time).
   */
  tool<Args = Unannotated, const Definition extends ToolDefinition = ToolDefinition> (
    definition: Definition & UnknownFields<Definition>,
    handler: ToolHandler<HandlerArguments<NoInfer<Definition>, Args>, ToolStructuredContent<NoInfer<Definition>>>
  ): this {
    this.#tools.add(definition, handler as ToolHandler)
    this.#announce({ kind: 'tools' })
    return this
  }

  /** Removes a tool; true when it was registered. */
  removeTool (name: string): boolean {
    return this.#changed('tools', this.#tools.delete(name))
  }

  /** The registered tools' definitions, in `tools/list` order. */
  listTools (): ToolDefinition[] {
    return [...this.#tools.list()]
  }

  /** Registers a prompt. Its handler follows the same replay rules as a tool's. */
  prompt<Args = Record<string, string>> (definition: PromptDefinition, handler: PromptHandler<Args>): this {
    this.#prompts.add(definition, handler as PromptHandler)
    this.#announce({ kind: 'prompts' })
    return this
  }

  /** Removes a prompt; true when it was registered. */
  removePrompt (name: string): boolean {
    return this.#changed('prompts', this.#prompts.delete(name))
  }

  /** The registered prompts' definitions, in `prompts/list` order. */
  listPrompts (): PromptDefinition[] {
    return [...this.#prompts.list()]
  }

  /** Registers a resource at a fixed URI. */
  resource (definition: ResourceDefinition, handler: ResourceHandler): this {
    this.#resources.add(definition, handler)
    this.#announce({ kind: 'resources' })
    return this
  }

  /**
   * Registers a view (the MCP Apps extension, `io.modelcontextprotocol/ui`): a `ui://` resource of HTML that hosts
   * which show views render in a sandboxed iframe, for the tools that link it with their `ui` option. Served as
   * `text/html;profile=mcp-app` with `_meta.ui` built from `csp`, `permissions`, `domain` and `prefersBorder`.
   * The HTML is untrusted in the host's sandbox: it reaches only the origins `csp` declares, and calls this server's
   * tools only through the host, as the user, checked as any call is.
   */
  uiResource (definition: ViewDefinition): this {
    this.#views.add(definition)
    this.#announce({ kind: 'resources' })
    return this
  }

  /**
   * Serves agent skills (SEP-2640, `io.modelcontextprotocol/skills`): every folder below `dir` (a path or a file URL)
   * that holds a `SKILL.md` is a skill, named as its folder, read once, now: its frontmatter checked, every file
   * digested and kept. Files are `skill://[<prefix>/]<folders>/<name>/<file>` resources; `skills/list`, `skills/get`
   * and `resources/directory/read` serve the catalog. Rejects naming the file or skill that breaks a rule, serving
   * none of them. Resolves the SKILL.md URIs it serves.
   */
  async skills (dir: string | URL, options?: SkillsOptions): Promise<string[]> {
    const added = await this.#skills.add(dir, options)
    if (added.length > 0) this.#announce({ kind: 'resources' })
    return added
  }

  /** Removes a resource or a view; true when it was registered. A view some tool links, or a skill's file, stays. */
  removeResource (uri: string): boolean {
    if (this.#skills.serves(uri)) throw new InvalidDefinitionError(`${uri} is a file of a skill: its manifest lists it, so it stays served`)
    this.#views.remove(uri)
    return this.#changed('resources', this.#resources.remove(uri))
  }

  /** The registered resources, in `resources/list` order. */
  listResources (): ResourceDefinition[] {
    return [...this.#resources.list()]
  }

  /** Registers a resource template (RFC 6570 level 1, such as `users://{id}/profile`). */
  resourceTemplate (definition: ResourceTemplateDefinition, handler: ResourceTemplateHandler): this {
    this.#resources.addTemplate(definition, handler)
    this.#announce({ kind: 'resources' })
    return this
  }

  /** Removes a resource template; true when it was registered. */
  removeResourceTemplate (uriTemplate: string): boolean {
    return this.#changed('resources', this.#resources.removeTemplate(uriTemplate))
  }

  /** The registered resource templates, in `resources/templates/list` order. */
  listResourceTemplates (): ResourceTemplateDefinition[] {
    return [...this.#resources.listTemplates()]
  }

  /**
   * Registers an event type (SEP-3415, `io.modelcontextprotocol/events`, Beta): clients poll it, hold a stream for it
   * or subscribe a webhook to it. `match` (typed from `inputSchema` and `payloadSchema`) decides which subscriptions an
   * occurrence reaches; or `check` reads occurrences from an upstream that keeps the position (poll and push only).
   */
  event<const Input extends object | undefined = undefined, const Payload extends object | undefined = undefined> (
    definition: TypedEventDefinition<Input, Payload>
  ): this {
    this.#eventTypes.add(definition as EventDefinition)
    return this
  }

  /** Removes an event type; true when it was registered. Its streams and webhook subscriptions hear of nothing more. */
  removeEvent (name: string): boolean {
    return this.#eventTypes.delete(name)
  }

  /** The registered event types as `events/list` shows them. */
  listEvents (): object[] {
    return [...this.#eventTypes.list()]
  }

  /**
   * Emits an occurrence from anywhere: checks `data` against the type's `payloadSchema` (rejecting, naming the field),
   * its size (`events.maxPayloadBytes`), appends it to the event log and wakes every node; resolves with its `eventId`
   * (random unless given; the same `eventId` emitted twice is kept once). In a tool handler, which runs again on each
   * input-required round, emit inside `ctx.once` so a replay does not emit twice.
   */
  emit (name: string, data: Record<string, unknown>, options?: EmitOptions): Promise<string> {
    return this.#events.emit(name, data, options)
  }

  /** Tells listeners that a list changed for a reason mocapi cannot see (say, a per-user catalogue). */
  notifyListChanged (kind: 'tools' | 'prompts' | 'resources'): void {
    this.#announce({ kind })
  }

  /** Tells listeners subscribed to `uri` that the resource changed. */
  notifyResourceUpdated (uri: string): void {
    this.#announce({ kind: 'resource', uri })
  }

  #changed (kind: 'tools' | 'prompts' | 'resources', removed: boolean): boolean {
    if (removed) this.#announce({ kind })
    return removed
  }
}
