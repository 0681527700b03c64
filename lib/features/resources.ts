import { cacheHint, nonEmptyString, plainObject, type CacheHint } from '../check.js'
import type { McpContext } from '../context.js'
import { InvalidDefinitionError, ResourceNotFoundError, invalidParams } from '../errors.js'
import { isViewUri } from '../protocol/extensions.js'
import { isPlainObject, type InputRequiredResult, type JsonObject } from '../protocol/wire.js'
import { toCompleter, type Completer, type CompletionSource } from './completions.js'
import { Catalog, accessCheck, allowed, listedForm, type AccessCheck, type Entry } from './catalog.js'
import { replyOf, type Handlers } from './handlers.js'
import { scopeList, type Scopes } from './scopes.js'
import { UriTemplate } from './uri-template.js'

/** A resource's definition, as `resources/list` shows it. */
export interface ResourceDefinition {
  uri: string
  name: string
  title?: string | undefined
  description?: string | undefined
  mimeType?: string | undefined
  size?: number | undefined
  annotations?: JsonObject | undefined
  icons?: JsonObject[] | undefined
  _meta?: JsonObject | undefined
  /** Caching hints of its `resources/read` result; default the `cache.resources` option. Not listed. */
  cache?: CacheHint | undefined
  /** Whether the caller may see and read it; hidden, it answers as an absent one ({@link AccessCheck}). Not listed. */
  canAccess?: AccessCheck | undefined
  /** OAuth scopes the caller's token must grant: else 403 with an `insufficient_scope` challenge. Not listed. */
  scopes?: string[] | undefined
}

/** A resource template's definition (RFC 6570 level 1: `{name}` expressions only). */
export interface ResourceTemplateDefinition {
  uriTemplate: string
  name: string
  title?: string | undefined
  description?: string | undefined
  mimeType?: string | undefined
  annotations?: JsonObject | undefined
  icons?: JsonObject[] | undefined
  _meta?: JsonObject | undefined
  /** Values for `completion/complete`, per template variable. Not listed. */
  complete?: Record<string, CompletionSource> | undefined
  /** Caching hints of its `resources/read` results. Not listed. */
  cache?: CacheHint | undefined
  /** Whether the caller may see and read through the template; in time, as {@link AccessCheck} says. Not listed. */
  canAccess?: AccessCheck | undefined
  /** OAuth scopes the caller's token must grant: else 403 with an `insufficient_scope` challenge. Not listed. */
  scopes?: string[] | undefined
}

/** One item of `contents`: text or base64 `blob`. */
export type ResourceContents =
  | { uri: string, mimeType?: string, text: string, _meta?: JsonObject }
  | { uri: string, mimeType?: string, blob: string, _meta?: JsonObject }

/**
 * What a resource handler returns: a string (text), bytes (a blob), one contents item, an array
 * of them, or `{ contents }`. `uri` and `mimeType` default to the resource's own.
 */
export type ResourceReturn =
  | string
  | Uint8Array
  | Partial<ResourceContents>
  | Array<Partial<ResourceContents>>
  | { contents: Array<Partial<ResourceContents>> }

/** Reads a resource: `(uri, ctx)`. It re-runs on every input-required round. */
export type ResourceHandler = (uri: string, ctx: McpContext) => ResourceReturn | Promise<ResourceReturn>

/** Reads a templated resource: `(uri, variables, ctx)`; `undefined` means not found. */
export type ResourceTemplateHandler = (uri: string, variables: Record<string, string>, ctx: McpContext) =>
  ResourceReturn | undefined | Promise<ResourceReturn | undefined>

interface Readable { mimeType?: string, cache: Required<CacheHint>, scopes?: readonly string[] }
interface Resource extends Readable, Entry<ResourceDefinition> { handler: ResourceHandler }
interface Template extends Readable, Entry<ResourceTemplateDefinition> {
  handler: ResourceTemplateHandler
  template: UriTemplate
  completers: Map<string, Completer>
}

const RESOURCE_FIELDS = new Set(['uri', 'name', 'title', 'description', 'mimeType', 'size', 'annotations', 'icons', '_meta', 'cache', 'canAccess', 'scopes'])
const TEMPLATE_FIELDS = new Set(['uriTemplate', 'name', 'title', 'description', 'mimeType', 'annotations', 'icons', '_meta', 'complete', 'cache', 'canAccess', 'scopes'])

interface ResourceSettings {
  cache: Required<CacheHint>
  maxUriLength: number
}

/** -32602 past `limits.uriLength`, so what a client names is bounded before it is matched or kept. */
export function checkUriLength (uri: string, max: number): void {
  if (uri.length > max) throw invalidParams(`params.uri is longer than ${max} characters`)
}

export class Resources {
  readonly #resources = new Catalog<ResourceDefinition, Resource>()
  readonly #templates = new Catalog<ResourceTemplateDefinition, Template>()
  readonly #handlers: Handlers
  readonly #settings: ResourceSettings
  readonly #scopes: Scopes

  constructor (handlers: Handlers, settings: ResourceSettings, scopes: Scopes) {
    this.#handlers = handlers
    this.#settings = settings
    this.#scopes = scopes
  }

  get size (): number {
    return this.#resources.size + this.#templates.size
  }

  get templateCount (): number {
    return this.#templates.size
  }

  /** Private whenever who may read it depends on the caller: an access check or scopes. */
  #cacheOf (cache: unknown, where: string, guarded: boolean): Required<CacheHint> {
    const hint = cacheHint(cache, `${where} cache`, this.#settings.cache, InvalidDefinitionError)
    return guarded ? { ttlMs: hint.ttlMs, cacheScope: 'private' } : hint
  }

  add (definition: ResourceDefinition, handler: ResourceHandler): void {
    plainObject(definition, 'a resource definition', InvalidDefinitionError)
    if (typeof definition.uri === 'string' && isViewUri(definition.uri)) {
      throw new InvalidDefinitionError(`resource "${definition.uri}": ui:// resources are views, registered with app.mcp.uiResource`)
    }
    this.addServed(definition, handler, false)
  }

  /** Checked but for its scheme (a view's is ui://); `varies` makes its reads `private` unless its `cache` says. */
  addServed (definition: ResourceDefinition, handler: ResourceHandler, varies: boolean): void {
    const { uri, name } = definition
    if (typeof uri !== 'string' || !URL.canParse(uri) || uri.length > this.#settings.maxUriLength) {
      throw new InvalidDefinitionError(`resource uri must be an absolute URI of at most ${this.#settings.maxUriLength} characters, got ${JSON.stringify(uri)}`)
    }
    const where = `resource "${uri}"`
    nonEmptyString(name, `${where} name`, InvalidDefinitionError)
    this.#resources.checkNew(uri, where, definition as unknown as Record<string, unknown>, RESOURCE_FIELDS, handler)
    const canAccess = accessCheck(definition.canAccess, where)
    const scopes = scopeList(definition.scopes, where)
    const cache = varies && definition.cache === undefined
      ? { ttlMs: this.#settings.cache.ttlMs, cacheScope: 'private' as const }
      : this.#cacheOf(definition.cache, where, canAccess !== undefined || scopes !== undefined)
    this.#resources.put(uri, {
      listed: listedForm(definition),
      canAccess,
      scopes,
      handler,
      mimeType: definition.mimeType,
      cache,
    })
  }

  addTemplate (definition: ResourceTemplateDefinition, handler: ResourceTemplateHandler): void {
    plainObject(definition, 'a resource template definition', InvalidDefinitionError)
    const { uriTemplate, name } = definition
    nonEmptyString(uriTemplate, 'uriTemplate', InvalidDefinitionError)
    const where = `resource template "${uriTemplate}"`
    if (isViewUri(uriTemplate)) throw new InvalidDefinitionError(`${where}: ui:// resources are views, each registered with app.mcp.uiResource`)
    nonEmptyString(name, `${where} name`, InvalidDefinitionError)
    this.#templates.checkNew(uriTemplate, where, definition as unknown as Record<string, unknown>,
      TEMPLATE_FIELDS, handler)
    const template = new UriTemplate(uriTemplate, where)
    const completers = new Map<string, Completer>()
    const complete = plainObject(definition.complete ?? {}, `${where} complete`, InvalidDefinitionError)
    for (const [variable, source] of Object.entries(complete)) {
      if (!template.variables.includes(variable)) throw new InvalidDefinitionError(`${where} complete names "${variable}", which is not one of its variables`)
      completers.set(variable, toCompleter(source as CompletionSource, `${where} complete.${variable}`)!)
    }
    const canAccess = accessCheck(definition.canAccess, where)
    const scopes = scopeList(definition.scopes, where)
    this.#templates.put(uriTemplate, {
      listed: listedForm(definition),
      canAccess,
      scopes,
      handler,
      template,
      completers,
      mimeType: definition.mimeType,
      cache: this.#cacheOf(definition.cache, where, canAccess !== undefined || scopes !== undefined),
    })
  }

  scopesInto (into: Set<string>): void {
    this.#resources.scopesInto(into)
    this.#templates.scopesInto(into)
  }

  has (uri: string): boolean {
    return this.#resources.entry(uri) !== undefined
  }

  remove (uri: string): boolean {
    return this.#resources.remove(uri) !== undefined
  }

  removeTemplate (uriTemplate: string): boolean {
    return this.#templates.remove(uriTemplate) !== undefined
  }

  list (): ResourceDefinition[] {
    return this.#resources.list()
  }

  listTemplates (): ResourceTemplateDefinition[] {
    return this.#templates.list()
  }

  get varies (): boolean {
    return this.#resources.varies || this.#templates.varies
  }

  visible (ctx: McpContext): Promise<ResourceDefinition[]> {
    return this.#resources.visible(ctx)
  }

  visibleTemplates (ctx: McpContext): Promise<ResourceTemplateDefinition[]> {
    return this.#templates.visible(ctx)
  }

  async completer (uriTemplate: string, variable: string, ctx: McpContext): Promise<Completer | undefined> {
    const template = await this.#templates.find(uriTemplate, ctx)
    if (template === undefined) throw invalidParams(`Unknown resource template: ${uriTemplate}`)
    this.#scopes.check(template.scopes, ctx, 'The resource template', uriTemplate)
    return template.completers.get(variable)
  }

  /** Hidden ones pass as absent; with `evenly`, a kind that ran no check for `uri` runs one, as a hidden item would. */
  async resolve (
    uri: string,
    ctx: McpContext,
    evenly: boolean
  ): Promise<
    { entry: Readable, run: () => ResourceReturn | undefined | Promise<ResourceReturn | undefined> } | undefined
  > {
    const resource = await this.#resources.find(uri, ctx, evenly)
    if (resource !== undefined) return { entry: resource, run: () => resource.handler(uri, ctx) }
    let checked = false
    for (const template of this.#templates.values()) {
      const variables = template.template.match(uri)
      if (variables === undefined) continue
      if (template.canAccess !== undefined) checked = true
      if (!(await allowed(template, ctx))) continue
      return { entry: template, run: () => template.handler(uri, variables, ctx) }
    }
    if (evenly && !checked) await this.#templates.absent(ctx)
    return undefined
  }

  /** Exactly when a read would serve `uri`: a boolean unless an item checks access or the one serving it has scopes. */
  visibility = (uri: string): boolean | ((ctx: McpContext) => Promise<boolean>) => {
    if (this.varies) {
      return async (ctx) => {
        const found = await this.resolve(uri, ctx, false)
        return found !== undefined && this.#scopes.grants(found.entry.scopes, ctx.request)
      }
    }
    const entry = this.#resources.entry(uri) ?? this.#templateOf(uri)
    if (entry === undefined) return false
    const scopes = entry.scopes
    return scopes === undefined || (async (ctx) => this.#scopes.grants(scopes, ctx.request))
  }

  #templateOf (uri: string): Template | undefined {
    for (const template of this.#templates.values()) if (template.template.match(uri) !== undefined) return template
    return undefined
  }

  async read (ctx: McpContext): Promise<JsonObject | InputRequiredResult> {
    const uri = ctx.params.uri as string
    checkUriLength(uri, this.#settings.maxUriLength)
    const found = await this.resolve(uri, ctx, true)
    if (found === undefined) throw new ResourceNotFoundError(uri)
    this.#scopes.check(found.entry.scopes, ctx, 'The resource', uri)
    const { mimeType, cache } = found.entry
    return replyOf(await this.#handlers.replay(ctx, `resource ${uri}`, async () => {
      const value = await found.run()
      if (value === undefined || value === null) throw new ResourceNotFoundError(uri)
      return { contents: toContents(value, uri, mimeType), ttlMs: cache.ttlMs, cacheScope: cache.cacheScope }
    }))
  }
}

function toContents (value: ResourceReturn, uri: string, mimeType: string | undefined): ResourceContents[] {
  const items = typeof value === 'string' || value instanceof Uint8Array
    ? [value]
    : Array.isArray(value)
      ? value
      : Array.isArray((value as { contents?: unknown }).contents)
        ? (value as { contents: unknown[] }).contents
        : [value]
  return items.map((item) => {
    const base = mimeType === undefined ? { uri } : { uri, mimeType }
    if (typeof item === 'string') return { ...base, text: item }
    if (item instanceof Uint8Array) return { ...base, blob: Buffer.from(item).toString('base64') }
    if (isPlainObject(item) && (typeof item.text === 'string' || typeof item.blob === 'string')) return { ...base, ...item } as ResourceContents
    throw new TypeError(`the handler of resource ${uri} returned contents without text or blob`)
  })
}
