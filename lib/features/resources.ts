import type { McpContext } from '../context.js'
import { invalidParams } from '../errors.js'
import type { InputRequiredResult, ReplayEngine } from '../mrtr/replay.js'
import type { CacheHint } from '../options.js'
import { isPlainObject, type JsonObject } from '../protocol/wire.js'
import { toCompleter, type Completer, type CompletionSource } from './completions.js'
import { Catalog, accessCheck, allowed, listedForm, type AccessCheck, type Entry } from './catalog.js'

/** A resource's definition, as `resources/list` shows it. */
export interface ResourceDefinition {
  uri: string
  name: string
  title?: string
  description?: string
  mimeType?: string
  size?: number
  annotations?: JsonObject
  icons?: JsonObject[]
  _meta?: JsonObject
  /** Caching hints of its `resources/read` result; default the `cache.resources` option. Not listed. */
  cache?: CacheHint
  /** Whether the caller may see and read the resource; hidden ones answer like absent ones. Not listed. */
  canAccess?: AccessCheck
}

/** A resource template's definition (RFC 6570 level 1: `{name}` expressions only). */
export interface ResourceTemplateDefinition {
  uriTemplate: string
  name: string
  title?: string
  description?: string
  mimeType?: string
  annotations?: JsonObject
  icons?: JsonObject[]
  _meta?: JsonObject
  /** Values for `completion/complete`, per template variable. Not listed. */
  complete?: Record<string, CompletionSource>
  /** Caching hints of its `resources/read` results. Not listed. */
  cache?: CacheHint
  /** Whether the caller may see and read through the template. Not listed. */
  canAccess?: AccessCheck
}

/** One item of `contents`: text or base64 `blob`. */
export type ResourceContents =
  | { uri: string, mimeType?: string, text: string, _meta?: JsonObject }
  | { uri: string, mimeType?: string, blob: string, _meta?: JsonObject }

/**
 * What a resource handler returns: a string (text), bytes (a blob), one contents item, an array
 * of them, or `{ contents }`. `uri` and `mimeType` default to the resource's own.
 */
export type ResourceReturn = string | Uint8Array | Partial<ResourceContents> | Array<Partial<ResourceContents>> | { contents: Array<Partial<ResourceContents>> }

/** Reads a resource: `(uri, ctx)`. It re-runs on every input-required round. */
export type ResourceHandler = (uri: string, ctx: McpContext) => ResourceReturn | Promise<ResourceReturn>

/** Reads a templated resource: `(uri, variables, ctx)`; `undefined` means not found. */
export type ResourceTemplateHandler = (uri: string, variables: Record<string, string>, ctx: McpContext) =>
  ResourceReturn | undefined | Promise<ResourceReturn | undefined>

interface Readable { mimeType?: string, cache: Required<CacheHint> | undefined }
interface Resource extends Readable, Entry<ResourceDefinition> { handler: ResourceHandler }
interface Template extends Readable, Entry<ResourceTemplateDefinition> {
  handler: ResourceTemplateHandler
  pattern: RegExp
  variables: string[]
  completers: Map<string, Completer>
}

const RESOURCE_FIELDS = new Set(['uri', 'name', 'title', 'description', 'mimeType', 'size', 'annotations', 'icons', '_meta', 'cache', 'canAccess'])
const TEMPLATE_FIELDS = new Set(['uriTemplate', 'name', 'title', 'description', 'mimeType', 'annotations', 'icons', '_meta', 'complete', 'cache', 'canAccess'])
const EXPRESSION = /\{([^}]*)\}/g
const VARNAME = /^[A-Za-z0-9_]+$/
// A level-1 expansion percent-encodes everything but unreserved characters.
const EXPANDED = '((?:[A-Za-z0-9\\-._~]|%[0-9A-Fa-f]{2})+)'

function cacheOf (cache: unknown, where: string): Required<CacheHint> | undefined {
  if (cache === undefined) return undefined
  if (!isPlainObject(cache) || !Number.isSafeInteger(cache.ttlMs) || (cache.ttlMs as number) < 0 ||
    (cache.cacheScope !== 'public' && cache.cacheScope !== 'private')) {
    throw new TypeError(`mocapi: ${where} cache must be { ttlMs: non-negative integer, cacheScope: 'public' | 'private' }`)
  }
  return { ttlMs: cache.ttlMs as number, cacheScope: cache.cacheScope }
}

/** Compiles a level-1 URI template into a matcher; throws on anything beyond `{name}`. */
export function compileTemplate (template: string, where: string): { pattern: RegExp, variables: string[] } {
  if (/[{}]/.test(template.replace(EXPRESSION, ''))) throw new TypeError(`mocapi: ${where} has an unbalanced brace`)
  const variables: string[] = []
  let source = '^'
  let last = 0
  for (const match of template.matchAll(EXPRESSION)) {
    const name = match[1]
    if (!VARNAME.test(name)) throw new TypeError(`mocapi: ${where} uses "{${name}}": only RFC 6570 level-1 expressions like {id} are supported`)
    if (variables.includes(name)) throw new TypeError(`mocapi: ${where} repeats the variable "${name}"`)
    variables.push(name)
    source += escape(template.slice(last, match.index)) + EXPANDED
    last = match.index + match[0].length
  }
  return { pattern: new RegExp(source + escape(template.slice(last)) + '$'), variables }
}

function escape (text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}

/** The resources and resource templates of one server. */
export class Resources {
  readonly #resources = new Catalog<ResourceDefinition, Resource>()
  readonly #templates = new Catalog<ResourceTemplateDefinition, Template>()

  get size (): number {
    return this.#resources.size + this.#templates.size
  }

  get templateCount (): number {
    return this.#templates.size
  }

  /** Registers a resource at a fixed URI. */
  add (definition: ResourceDefinition, handler: ResourceHandler): void {
    if (!isPlainObject(definition)) throw new TypeError('mocapi: a resource definition must be an object')
    const { uri, name } = definition
    if (typeof uri !== 'string' || !URL.canParse(uri)) throw new TypeError(`mocapi: resource uri must be an absolute URI, got ${JSON.stringify(uri)}`)
    if (typeof name !== 'string' || name === '') throw new TypeError(`mocapi: resource "${uri}" needs a non-empty name`)
    this.#resources.checkNew(uri, `resource "${uri}"`, definition, RESOURCE_FIELDS, handler)
    this.#resources.put(uri, {
      listed: listedForm(definition),
      canAccess: accessCheck(definition.canAccess, `resource "${uri}"`),
      handler,
      mimeType: definition.mimeType,
      cache: cacheOf(definition.cache, `resource "${uri}"`),
    })
  }

  /** Registers a resource template. */
  addTemplate (definition: ResourceTemplateDefinition, handler: ResourceTemplateHandler): void {
    if (!isPlainObject(definition)) throw new TypeError('mocapi: a resource template definition must be an object')
    const { uriTemplate, name } = definition
    if (typeof uriTemplate !== 'string' || uriTemplate === '') throw new TypeError(`mocapi: uriTemplate must be a non-empty string, got ${JSON.stringify(uriTemplate)}`)
    const where = `resource template "${uriTemplate}"`
    if (typeof name !== 'string' || name === '') throw new TypeError(`mocapi: ${where} needs a non-empty name`)
    this.#templates.checkNew(uriTemplate, where, definition, TEMPLATE_FIELDS, handler)
    const { pattern, variables } = compileTemplate(uriTemplate, where)
    const completers = new Map<string, Completer>()
    const complete = definition.complete ?? {}
    if (!isPlainObject(complete)) throw new TypeError(`mocapi: ${where} complete must be an object keyed by variable`)
    for (const [variable, source] of Object.entries(complete)) {
      if (!variables.includes(variable)) throw new TypeError(`mocapi: ${where} complete names "${variable}", which is not one of its variables`)
      completers.set(variable, toCompleter(source, `${where} complete.${variable}`)!)
    }
    this.#templates.put(uriTemplate, {
      listed: listedForm(definition),
      canAccess: accessCheck(definition.canAccess, where),
      handler,
      pattern,
      variables,
      completers,
      mimeType: definition.mimeType,
      cache: cacheOf(definition.cache, where),
    })
  }

  remove (uri: string): boolean {
    return this.#resources.remove(uri)
  }

  removeTemplate (uriTemplate: string): boolean {
    return this.#templates.remove(uriTemplate)
  }

  list (): ResourceDefinition[] {
    return this.#resources.list()
  }

  listTemplates (): ResourceTemplateDefinition[] {
    return this.#templates.list()
  }

  /** True when some resource or template has an access check, so lists vary by caller. */
  get varies (): boolean {
    return this.#resources.varies || this.#templates.varies
  }

  visible (ctx: McpContext): Promise<ResourceDefinition[]> {
    return this.#resources.visible(ctx)
  }

  visibleTemplates (ctx: McpContext): Promise<ResourceTemplateDefinition[]> {
    return this.#templates.visible(ctx)
  }

  /** The completer of one template variable, when the caller may see the template; -32602 otherwise. */
  async completer (uriTemplate: string, variable: string, ctx: McpContext): Promise<Completer | undefined> {
    const template = await this.#templates.find(uriTemplate, ctx)
    if (template === undefined) throw invalidParams(`Unknown resource template: ${uriTemplate}`)
    return template.completers.get(variable)
  }

  /** Runs `resources/read`: a fixed resource first, then the first template that matches. */
  async read (ctx: McpContext, engine: ReplayEngine, fallback: Required<CacheHint>): Promise<JsonObject | InputRequiredResult> {
    const uri = ctx.params.uri as string
    const notFound = () => invalidParams('Resource not found', 200, { uri })
    let entry: Readable | undefined
    let run: (() => ResourceReturn | undefined | Promise<ResourceReturn | undefined>) | undefined
    const resource = await this.#resources.find(uri, ctx)
    if (resource !== undefined) {
      entry = resource
      run = () => resource.handler(uri, ctx)
    } else if (!this.#resources.has(uri)) {
      for (const template of this.#templates.values()) {
        const match = template.pattern.exec(uri)
        if (match === null || !(await allowed(template, ctx))) continue
        const variables: Record<string, string> = {}
        template.variables.forEach((name, i) => { variables[name] = decodeURIComponent(match[i + 1]) })
        entry = template
        run = () => template.handler(uri, variables, ctx)
        break
      }
    }
    if (entry === undefined || run === undefined) throw notFound()
    const outcome = await engine.run(ctx, `resource ${uri}`, run)
    if (!('complete' in outcome)) return outcome
    if (outcome.complete === undefined || outcome.complete === null) throw notFound()
    const contents = toContents(outcome.complete, uri, entry.mimeType)
    const cache = entry.cache ?? fallback
    return { contents, ttlMs: cache.ttlMs, cacheScope: cache.cacheScope }
  }
}

function toContents (value: ResourceReturn, uri: string, mimeType: string | undefined): ResourceContents[] {
  const items = typeof value === 'string' || value instanceof Uint8Array
    ? [value]
    : Array.isArray(value) ? value : Array.isArray((value as { contents?: unknown }).contents) ? (value as { contents: unknown[] }).contents : [value]
  return items.map((item) => {
    const base = mimeType === undefined ? { uri } : { uri, mimeType }
    if (typeof item === 'string') return { ...base, text: item }
    if (item instanceof Uint8Array) return { ...base, blob: Buffer.from(item).toString('base64') }
    if (isPlainObject(item) && (typeof item.text === 'string' || typeof item.blob === 'string')) return { ...base, ...item } as ResourceContents
    throw new TypeError(`the handler of resource ${uri} returned contents without text or blob`)
  })
}
