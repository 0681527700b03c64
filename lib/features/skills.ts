import { cacheHint, describe, knownFields, plainObject, type CacheHint } from '../check.js'
import type { McpContext } from '../context.js'
import { InvalidDefinitionError, invalidParams } from '../errors.js'
import type { JsonObject } from '../protocol/wire.js'
import { Catalog, accessCheck, type AccessCheck, type Entry } from './catalog.js'
import { paginate } from './pagination.js'
import { checkUriLength, type Resources } from './resources.js'
import { scopeList, type Scopes } from './scopes.js'
import { SKILL_FILE, SKILL_NAME, folderOf, readSkills, type SkillFile, type SkillSource } from './skill-files.js'

/** Options of `app.mcp.skills`. */
export interface SkillsOptions {
  /** A first path segment for every skill's URI (`skill://<prefix>/<name>/SKILL.md`), such as the publisher's name. */
  prefix?: string | undefined
  /** OAuth scopes a caller's token must grant to read these skills (403 with a challenge otherwise); still listed. */
  scopes?: string[] | undefined
  /** Whether the caller may see and read these skills; hidden, they answer as absent ones. */
  canAccess?: AccessCheck | undefined
  /** Caching hints of `skills/get` and of reads of the files; default the `cache.resources` option. */
  cache?: CacheHint | undefined
}

/** A skill as `skills/list` and `skills/get` show it: its SKILL.md's URI, frontmatter, each file's digest and size. */
export interface SkillEntry {
  uri: string
  frontmatter: JsonObject
  resources: Array<{ uri: string, digest: string, size: number }>
}

/** One child of a skill's folder, as `resources/directory/read` lists it. */
interface Child { uri: string, name: string, mimeType: string, size?: number }

interface Skill extends Entry<SkillEntry> {
  cache: Required<CacheHint>
  /** A folder's URI (no trailing `/`) to its direct children. */
  folders: Map<string, Child[]>
}

interface SkillSettings {
  /** The `cache.resources` option. */
  cache: Required<CacheHint>
  maxUriLength: number
  pageSize: number
}

const OPTIONS = new Set(['prefix', 'scopes', 'canAccess', 'cache'])
const DIRECTORY_MIME_TYPE = 'inode/directory'

const TYPES: Record<string, string> = {
  md: 'text/markdown',
  markdown: 'text/markdown',
  txt: 'text/plain',
  json: 'application/json',
  yaml: 'application/yaml',
  yml: 'application/yaml',
  csv: 'text/csv',
  html: 'text/html',
  xml: 'application/xml',
  py: 'text/x-python',
  sh: 'text/x-shellscript',
  js: 'text/javascript',
  mjs: 'text/javascript',
  ts: 'text/x-typescript',
  png: 'image/png',
  jpg: 'image/jpeg',
  jpeg: 'image/jpeg',
  gif: 'image/gif',
  svg: 'image/svg+xml',
  pdf: 'application/pdf',
}
const TEXT_TYPES = new Set(['application/json', 'application/yaml', 'application/xml', 'image/svg+xml'])
// A BOM stays in the text: the text's bytes are the file's, as its digest and size say.
const UTF8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true })

function mimeTypeOf (file: string): string {
  const dot = file.lastIndexOf('.')
  return (dot > file.lastIndexOf('/') ? TYPES[file.slice(dot + 1).toLowerCase()] : undefined) ?? 'application/octet-stream'
}

/** Text when its type is text and its bytes are UTF-8; a blob otherwise. */
function textOf (file: SkillFile, mimeType: string): string | undefined {
  if (!mimeType.startsWith('text/') && !TEXT_TYPES.has(mimeType)) return undefined
  try {
    return UTF8.decode(file.bytes)
  } catch {
    return undefined
  }
}

const encodePath = (at: string): string => at.split('/').map(encodeURIComponent).join('/')

/** The folders above a `skill://` URI, nearest first. */
function * ancestors (uri: string): Generator<string> {
  for (let end = uri.lastIndexOf('/'); end >= 'skill://'.length; end = uri.lastIndexOf('/', end - 1)) yield uri.slice(0, end)
}

/** Skills served from folders (SEP-2640): an entry per skill, its files as `skill://` resources, its folders readable. */
export class Skills {
  readonly #skills = new Catalog<SkillEntry, Skill>()
  /** Every folder URI of every skill, to its skill's SKILL.md URI. */
  readonly #folders = new Map<string, string>()
  readonly #resources: Resources
  readonly #scopes: Scopes
  readonly #settings: SkillSettings

  constructor (resources: Resources, scopes: Scopes, settings: SkillSettings) {
    this.#resources = resources
    this.#scopes = scopes
    this.#settings = settings
  }

  get size (): number {
    return this.#skills.size
  }

  get varies (): boolean {
    return this.#skills.varies
  }

  /** Reads every skill below `dir` and serves them; nothing is served when any is refused. */
  async add (dir: unknown, options: unknown = {}): Promise<string[]> {
    const folder = folderOf(dir)
    const settings = plainObject(options, 'skills options', InvalidDefinitionError)
    knownFields(settings, OPTIONS, 'skills options', InvalidDefinitionError)
    const prefix = settings.prefix
    if (prefix !== undefined && (typeof prefix !== 'string' || !SKILL_NAME.test(prefix))) {
      throw new InvalidDefinitionError(`skills prefix must be a name of lowercase letters, digits and hyphens (as a skill's), got ${describe(prefix)}`)
    }
    const canAccess = accessCheck(settings.canAccess, 'skills')
    const scopes = scopeList(settings.scopes, 'skills')
    const hint = cacheHint(settings.cache, 'skills cache', this.#settings.cache, InvalidDefinitionError)
    const cache = canAccess !== undefined || scopes !== undefined ? { ttlMs: hint.ttlMs, cacheScope: 'private' as const } : hint
    const sources = await readSkills(folder)
    const base = (source: SkillSource): string => `skill://${[...(prefix === undefined ? [] : [prefix]), ...source.segments].join('/')}`
    for (const source of sources) {
      const uri = `${base(source)}/${SKILL_FILE}`
      if (this.#skills.entry(uri) !== undefined || this.#resources.has(uri)) {
        throw new InvalidDefinitionError(`skills: ${uri} is already registered`)
      }
    }
    const nested = this.#nesting(new Map(sources.map((source) => [base(source), `${base(source)}/${SKILL_FILE}`])))
    if (nested !== undefined) {
      throw new InvalidDefinitionError(`skills: ${nested[0]} and ${nested[1]} nest, one inside the other's folder: each skill needs a folder of its own`)
    }
    const added: string[] = []
    const files: string[] = []
    try {
      for (const source of sources) added.push(this.#serve(base(source), source, { canAccess, scopes, cache }, files))
    } catch (error) {
      // A file whose URI the resources refuse (too long, or taken) leaves nothing of this call served.
      for (const uri of files) this.#resources.remove(uri)
      for (const uri of added) this.#forget(uri)
      throw error
    }
    return added
  }

  /**
   * A new skill's SKILL.md URI and a served one's whose folders nest, one inside the other. One call's skills never
   * nest (a SKILL.md ends the search below it); another call's prefix can make them.
   */
  #nesting (bases: Map<string, string>): [string, string] | undefined {
    for (const [base, uri] of bases) {
      for (const above of ancestors(base)) {
        const owner = this.#folders.get(above)
        if (owner !== undefined) return [uri, owner]
      }
    }
    for (const [folder, owner] of this.#folders) {
      for (const above of ancestors(folder)) {
        const uri = bases.get(above)
        if (uri !== undefined) return [uri, owner]
      }
    }
    return undefined
  }

  #forget (uri: string): void {
    this.#skills.remove(uri)
    for (const [folder, owner] of this.#folders) if (owner === uri) this.#folders.delete(folder)
  }

  #serve (base: string, source: SkillSource,
    access: Pick<Skill, 'canAccess' | 'scopes' | 'cache'>, served: string[]): string {
    const uri = `${base}/${SKILL_FILE}`
    const folders = new Map<string, Child[]>(source.folders.map((at) => [at === '' ? base : `${base}/${encodePath(at)}`, []]))
    const { name, description } = source.frontmatter as { name: string, description: string }
    const resources: SkillEntry['resources'] = []
    for (const file of source.files) {
      const fileUri = `${base}/${encodePath(file.path)}`
      resources.push({ uri: fileUri, digest: file.digest, size: file.bytes.length })
      const mimeType = mimeTypeOf(file.path)
      const text = textOf(file, mimeType)
      const leaf = file.path.slice(file.path.lastIndexOf('/') + 1)
      this.#resources.addServed({
        uri: fileUri,
        name: file.path === SKILL_FILE ? name : `${name}/${file.path}`,
        ...(file.path === SKILL_FILE ? { description } : {}),
        mimeType,
        size: file.bytes.length,
        canAccess: access.canAccess,
        scopes: access.scopes as string[] | undefined,
        cache: access.cache,
      }, () => text ?? file.bytes, false)
      served.push(fileUri)
      const parent = fileUri.slice(0, fileUri.lastIndexOf('/'))
      folders.get(parent)!.push({ uri: fileUri, name: leaf, mimeType, size: file.bytes.length })
    }
    for (const at of source.folders) {
      if (at === '') continue
      const folderUri = `${base}/${encodePath(at)}`
      folders.get(folderUri.slice(0, folderUri.lastIndexOf('/')))!.push({
        uri: `${folderUri}/`, name: at.slice(at.lastIndexOf('/') + 1), mimeType: DIRECTORY_MIME_TYPE,
      })
    }
    const listed: SkillEntry = { uri, frontmatter: source.frontmatter, resources }
    this.#skills.put(uri, { listed, canAccess: access.canAccess, scopes: access.scopes, cache: access.cache, folders })
    for (const folderUri of folders.keys()) this.#folders.set(folderUri, uri)
    return uri
  }

  /** Whether `uri` is a file some skill serves: such a resource goes with its skill. */
  serves (uri: string): boolean {
    const folder = this.#folders.get(uri.slice(0, uri.lastIndexOf('/')))
    return folder !== undefined && this.#skills.entry(folder)!.listed.resources.some((file) => file.uri === uri)
  }

  visible (ctx: McpContext): Promise<SkillEntry[]> {
    return this.#skills.visible(ctx)
  }

  /** `skills/get`: the entry of the skill whose SKILL.md is `uri`; -32602 for any other, hidden ones included. */
  async get (ctx: McpContext): Promise<JsonObject> {
    const uri = ctx.params.uri as string
    checkUriLength(uri, this.#settings.maxUriLength)
    const skill = await this.#skills.find(uri, ctx)
    if (skill === undefined) throw invalidParams(`Unknown skill: ${uri}`)
    this.#scopes.check(skill.scopes, ctx, 'The skill', uri)
    const { ttlMs, cacheScope } = skill.cache
    return { skill: skill.listed as unknown as JsonObject, ttlMs, cacheScope }
  }

  /** `resources/directory/read`: a skill folder's direct children, its subfolders as `inode/directory`. */
  async directory (ctx: McpContext): Promise<JsonObject> {
    const uri = ctx.params.uri as string
    checkUriLength(uri, this.#settings.maxUriLength)
    const folder = uri.endsWith('/') ? uri.slice(0, -1) : uri
    const owner = this.#folders.get(folder)
    const skill = owner === undefined ? await this.#skills.absent(ctx) : await this.#skills.find(owner, ctx)
    if (skill === undefined) throw invalidParams(`Not a directory this server serves: ${uri}`)
    this.#scopes.check(skill.scopes, ctx, 'The skill', owner!)
    const { page, nextCursor } = paginate(skill.folders.get(folder)!, ctx.params.cursor, this.#settings.pageSize)
    const { ttlMs, cacheScope } = skill.cache
    const result: JsonObject = { resources: page as unknown as JsonObject[], ttlMs, cacheScope }
    if (nextCursor !== undefined) result.nextCursor = nextCursor
    return result
  }
}
