import { readFileSync } from 'node:fs'
import { describe, fail, knownFields, nonEmptyString, plainObject } from '../check.js'
import type { McpContext } from '../context.js'
import { InvalidDefinitionError } from '../errors.js'
import { VIEW_MIME_TYPE, isViewUri } from '../protocol/extensions.js'
import { isPlainObject, type JsonObject } from '../protocol/wire.js'
import type { ResourceDefinition, ResourceHandler, Resources } from './resources.js'

/** Origins a view may reach, each for a CSP directive the host builds. Left out: none (the host's strict default). */
export interface ViewCsp {
  /** fetch, XHR and WebSocket (`connect-src`). */
  connectDomains?: string[] | undefined
  /** Scripts, styles, images, fonts and media (`script-src`, `style-src`, `img-src`, `font-src`, `media-src`). */
  resourceDomains?: string[] | undefined
  /** Nested iframes (`frame-src`); without it, none. */
  frameDomains?: string[] | undefined
  /** `<base href>` (`base-uri`); without it, the view's own origin. */
  baseUriDomains?: string[] | undefined
}

/** Browser features a view asks the host for; the host may refuse, so a view detects them before use. */
export interface ViewPermissions {
  camera?: Record<string, never> | undefined
  microphone?: Record<string, never> | undefined
  geolocation?: Record<string, never> | undefined
  clipboardWrite?: Record<string, never> | undefined
}

/** The HTML of a view: a document, or a function of the request that returns one (it re-runs on every read). */
export type ViewHtml = string | ((ctx: McpContext) => string | Promise<string>)

/**
 * A view's definition for `app.mcp.uiResource`: a `ui://` resource served as `text/html;profile=mcp-app`, with the
 * extension's `_meta.ui` built from `csp`, `permissions`, `domain` and `prefersBorder`. Give `html` or `file`.
 */
export interface ViewDefinition extends Omit<ResourceDefinition, 'mimeType' | 'size'> {
  /** `ui://…`. */
  uri: string
  /** The HTML document, or a function of the request returning it (whose reads are `private` unless `cache` says). */
  html?: ViewHtml | undefined
  /** A path or file URL of the HTML document, read once, at registration. */
  file?: string | URL | undefined
  /** The origins the view may reach; none by default. */
  csp?: ViewCsp | undefined
  permissions?: ViewPermissions | undefined
  /** A dedicated sandbox origin, in the form the host documents (such as `<hash>.claudemcpcontent.com`). */
  domain?: string | undefined
  /** Whether the host should draw a border and background around the view; left out, the host decides. */
  prefersBorder?: boolean | undefined
}

/** Who may call a tool: `model` (the agent) and `app` (a view of this server). */
export type ToolVisibility = 'model' | 'app'

/** A tool's link to its view, listed as `_meta.ui`. */
export interface ToolUi {
  /** The `ui://` URI of a view registered with `app.mcp.uiResource`, which renders the tool's results. */
  resourceUri?: string | undefined
  /** Default both. `['app']`: only views call it, and it is left out of the list a host gives the model. */
  visibility?: ToolVisibility[] | undefined
}

const VIEW_FIELDS = new Set(['uri', 'name', 'title', 'description', 'annotations', 'icons', '_meta', 'cache',
  'canAccess', 'scopes', 'html', 'file', 'csp', 'permissions', 'domain', 'prefersBorder'])
const CSP_FIELDS = ['connectDomains', 'resourceDomains', 'frameDomains', 'baseUriDomains'] as const
const PERMISSIONS = new Set(['camera', 'microphone', 'geolocation', 'clipboardWrite'])
const UI_FIELDS = new Set(['resourceUri', 'visibility'])
const VISIBILITIES: readonly string[] = ['model', 'app']
/** Where CSP source lists end up, only a scheme, a host (`*.` allowed first), a port: no path, quote or space. */
const ORIGIN = /^(?:https?|wss?):\/\/(?:\*\.)?(?:[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)*|\[[0-9a-f:.]{2,45}\])(?::(?:\d{1,5}|\*))?$/i
const DOMAIN = /^(?:https:\/\/)?[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?(?:\.[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?)+$/i

function origins (value: unknown, name: string): string[] {
  if (!Array.isArray(value)) fail(name, 'an array of origins', value, InvalidDefinitionError)
  value.forEach((item, i) => {
    const port = typeof item === 'string' ? /:(\d+)$/.exec(item)?.[1] : undefined
    if (typeof item !== 'string' || item.length > 300 || !ORIGIN.test(item) || (port !== undefined && !(Number(port) >= 1 && Number(port) <= 65535))) {
      fail(`${name}[${i}]`, 'an origin such as https://api.example.com or https://*.example.com (a scheme, a host, an optional port; no path)', item, InvalidDefinitionError)
    }
  })
  return [...value as string[]]
}

function viewMeta (definition: ViewDefinition, where: string): JsonObject {
  const ui: JsonObject = {}
  if (definition.csp !== undefined) {
    const csp = plainObject(definition.csp, `${where} csp`, InvalidDefinitionError)
    knownFields(csp, new Set(CSP_FIELDS), `${where} csp`, InvalidDefinitionError)
    const checked: JsonObject = {}
    for (const field of CSP_FIELDS) {
      if (csp[field] !== undefined) checked[field] = origins(csp[field], `${where} csp.${field}`)
    }
    ui.csp = checked
  }
  if (definition.permissions !== undefined) {
    const permissions = plainObject(definition.permissions, `${where} permissions`, InvalidDefinitionError)
    knownFields(permissions, PERMISSIONS, `${where} permissions`, InvalidDefinitionError)
    const checked: JsonObject = {}
    for (const [name, value] of Object.entries(permissions)) {
      if (value === undefined) continue
      if (!isPlainObject(value) || Object.keys(value).length > 0) fail(`${where} permissions.${name}`, '{}', value, InvalidDefinitionError)
      checked[name] = {}
    }
    ui.permissions = checked
  }
  if (definition.domain !== undefined) {
    if (typeof definition.domain !== 'string' || definition.domain.length > 261 || !DOMAIN.test(definition.domain)) {
      fail(`${where} domain`, 'a host name such as abc123.example-content.com (or an https:// origin), as the host documents it', definition.domain, InvalidDefinitionError)
    }
    ui.domain = definition.domain
  }
  if (definition.prefersBorder !== undefined) {
    if (typeof definition.prefersBorder !== 'boolean') fail(`${where} prefersBorder`, 'true or false', definition.prefersBorder, InvalidDefinitionError)
    ui.prefersBorder = definition.prefersBorder
  }
  return ui
}

interface ViewResource {
  definition: ResourceDefinition
  handler: ResourceHandler
  varies: boolean
}

function viewResource (definition: ViewDefinition): ViewResource {
  plainObject(definition, 'a view definition', InvalidDefinitionError)
  const { uri } = definition
  if (typeof uri !== 'string' || !isViewUri(uri) || uri.length <= 'ui://'.length || !URL.canParse(uri)) {
    fail('view uri', 'a ui:// URI such as ui://booking/card', uri, InvalidDefinitionError)
  }
  const where = `view "${uri}"`
  knownFields(definition as unknown as Record<string, unknown>, VIEW_FIELDS, where, InvalidDefinitionError)
  nonEmptyString(definition.name, `${where} name`, InvalidDefinitionError)
  if (definition._meta !== undefined && 'ui' in plainObject(definition._meta, `${where} _meta`, InvalidDefinitionError)) {
    throw new InvalidDefinitionError(`${where} _meta.ui is built by mocapi: set csp, permissions, domain and prefersBorder instead`)
  }
  const ui = viewMeta(definition, where)
  const meta: JsonObject | undefined = Object.keys(ui).length === 0 ? definition._meta : { ...definition._meta, ui }
  const { html, file, csp, permissions, domain, prefersBorder, ...rest } = definition
  const listed: ResourceDefinition = { ...rest, mimeType: VIEW_MIME_TYPE }
  if (meta !== undefined) listed._meta = meta
  const contents = (text: string) => meta === undefined ? { text } : { text, _meta: meta }

  if ((html === undefined) === (file === undefined)) {
    throw new InvalidDefinitionError(`${where} needs html (a string, or a function of the request) or file (a path), exactly one`)
  }
  if (typeof html === 'function') {
    const handler: ResourceHandler = async (_uri, ctx) => {
      const text = await html(ctx)
      if (typeof text !== 'string' || text === '') throw new TypeError(`the html function of ${where} returned ${describe(text)}, not an HTML document`)
      return contents(text)
    }
    return { definition: listed, handler, varies: true }
  }
  let text: unknown = html
  if (file !== undefined) {
    if (typeof file !== 'string' && !(file instanceof URL)) fail(`${where} file`, 'a path or a file: URL', file, InvalidDefinitionError)
    try {
      text = readFileSync(file, 'utf8')
    } catch (error) {
      throw new InvalidDefinitionError(`${where} file ${String(file)} could not be read: ${(error as Error).message}`)
    }
  }
  if (typeof text !== 'string' || text.trim() === '') {
    fail(`${where} ${file === undefined ? 'html' : `file ${String(file)}`}`, 'an HTML document (or, for html, a function returning one)', text, InvalidDefinitionError)
  }
  const served = contents(text)
  return { definition: listed, handler: () => served, varies: false }
}

/** Knows which tools link each view, so a linked view cannot be removed from under a tool. */
export class Views {
  readonly #resources: Resources
  readonly #links = new Map<string, Set<string>>()

  constructor (resources: Resources) {
    this.#resources = resources
  }

  get size (): number {
    return this.#links.size
  }

  add (definition: ViewDefinition): void {
    const view = viewResource(definition)
    this.#resources.addServed(view.definition, view.handler, view.varies)
    this.#links.set(view.definition.uri, new Set())
  }

  remove (uri: string): void {
    const tools = this.#links.get(uri)
    if (tools !== undefined && tools.size > 0) {
      throw new InvalidDefinitionError(`view "${uri}" is the view of ${[...tools].map((tool) => `tool "${tool}"`).join(', ')}: remove or re-register those first`)
    }
    this.#links.delete(uri)
  }

  /** The listed `_meta` has `ui` and the flat `ui/resourceUri` that hosts from before the extension's release read. */
  toolUi (
    value: unknown,
    meta: JsonObject | undefined,
    where: string
  ): { meta: JsonObject | undefined, resourceUri: string | undefined, appOnly: boolean } {
    if (meta !== undefined && !isPlainObject(meta)) fail(`${where} _meta`, 'an object', meta, InvalidDefinitionError)
    if (meta !== undefined && ('ui' in meta || 'ui/resourceUri' in meta)) {
      throw new InvalidDefinitionError(`${where} _meta.ui is built by mocapi: link a view with the tool's ui option`)
    }
    if (value === undefined) return { meta, resourceUri: undefined, appOnly: false }
    const ui = plainObject(value, `${where} ui`, InvalidDefinitionError)
    knownFields(ui, UI_FIELDS, `${where} ui`, InvalidDefinitionError)
    const { resourceUri, visibility } = ui
    if (resourceUri === undefined && visibility === undefined) {
      throw new InvalidDefinitionError(`${where} ui needs resourceUri (a view registered with app.mcp.uiResource) or visibility`)
    }
    if (resourceUri !== undefined && (typeof resourceUri !== 'string' || !this.#links.has(resourceUri))) {
      fail(`${where} ui.resourceUri`, 'the ui:// URI of a view registered with app.mcp.uiResource (register the view first)', resourceUri, InvalidDefinitionError)
    }
    if (visibility !== undefined && (!Array.isArray(visibility) || visibility.length === 0 || visibility.length > 2 ||
      !visibility.every((item) => VISIBILITIES.includes(item)) || new Set(visibility).size !== visibility.length)) {
      fail(`${where} ui.visibility`, "['model'], ['app'] or ['model', 'app']", visibility, InvalidDefinitionError)
    }
    const listed: JsonObject = {}
    if (resourceUri !== undefined) listed.resourceUri = resourceUri
    if (visibility !== undefined) listed.visibility = [...visibility]
    const withUi: JsonObject = { ...meta, ui: listed }
    if (resourceUri !== undefined) withUi['ui/resourceUri'] = resourceUri
    return {
      meta: withUi,
      resourceUri: resourceUri as string | undefined,
      appOnly: visibility !== undefined && !visibility.includes('model'),
    }
  }

  link (uri: string, tool: string): void {
    this.#links.get(uri)?.add(tool)
  }

  unlink (uri: string, tool: string): void {
    this.#links.get(uri)?.delete(tool)
  }
}
