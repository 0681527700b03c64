// Reads a folder of Agent Skills once, at registration: each folder holding a SKILL.md is a skill, its frontmatter
// parsed and checked, every file digested and kept. Nothing here is a client's input: the limits keep a mistaken
// folder (a checkout with its .git, a symlink to /) from being served.
import { createHash } from 'node:crypto'
import { lstat, readdir, readFile } from 'node:fs/promises'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import { CST, Parser, isScalar, parseDocument, visit, type Document } from 'yaml'
import { InvalidDefinitionError } from '../errors.js'
import { isPlainObject, type JsonObject } from '../protocol/wire.js'
import { notJson } from '../protocol/json.js'

export const SKILL_FILE = 'SKILL.md'
/** The extension's limits per skill (SEP-2640): files, and bytes summed over them. */
const MAX_FILES = 512
const MAX_BYTES = 16 * 1024 * 1024
/** How deep skills may sit below the folder, and files below their skill. */
const MAX_DEPTH = 16
/** The Agent Skills naming rules: 1 to 64 lowercase letters, digits and hyphens, no hyphen first, last or twice. */
export const SKILL_NAME = /^(?!.*--)[a-z0-9](?:[a-z0-9-]{0,62}[a-z0-9])?$/
const MAX_DESCRIPTION = 1024
/**
 * Bytes a SKILL.md's frontmatter may take, as written and as the JSON every skills/list and skills/get reply carries:
 * aliases would otherwise repeat one large value in each reply.
 */
const MAX_FRONTMATTER = 64 * 1024
/** How deep a frontmatter's collections may nest, as deep as mocapi takes any JSON value. */
const MAX_NESTING = 64
/** Aliases a frontmatter may hold: the `yaml` package resolves each by scanning the document's anchors. */
const MAX_ALIASES = 100
const FRONTMATTER = /^---\r?\n([\s\S]*?)\r?\n---[ \t]*(?:\r?\n|$)/

export interface SkillFile {
  /** Below the skill's folder, `/`-separated. */
  readonly path: string
  readonly bytes: Buffer
  /** `sha256:<64 lowercase hex>` of the bytes. */
  readonly digest: string
}

export interface SkillSource {
  /** The skill's folders below the registered one, the last its name. */
  readonly segments: readonly string[]
  readonly frontmatter: JsonObject
  /** SKILL.md first, then the rest folder by folder, each in name order. */
  readonly files: readonly SkillFile[]
  /** Every folder of the skill, `''` its own, as `/`-separated paths. */
  readonly folders: readonly string[]
}

function refuse (message: string): never {
  throw new InvalidDefinitionError(`skills: ${message}`)
}

/** The folder a string path or file URL names. */
export function folderOf (dir: unknown): string {
  if (dir instanceof URL) {
    if (dir.protocol !== 'file:') refuse(`the folder must be a path or a file: URL, got ${dir.href}`)
    return fileURLToPath(dir)
  }
  if (typeof dir !== 'string' || dir === '') refuse(`the folder must be a path or a file: URL, got ${typeof dir === 'string' ? '""' : typeof dir}`)
  return path.resolve(dir)
}

/** Every skill below `root`, read whole; throws naming the file or skill that breaks a rule. */
export async function readSkills (root: string): Promise<SkillSource[]> {
  const stat = await lstat(root).catch(() => refuse(`${root} is not a folder that can be read`))
  if (!stat.isDirectory()) refuse(`${root} is not a folder${stat.isSymbolicLink() ? ' (a symlink)' : ''}`)
  const skills: SkillSource[] = []
  await search(root, [], skills)
  return skills
}

/** Entries of a folder, sorted, dot files left out (a checkout's .git, an editor's leftovers). */
async function entries (folder: string): Promise<Array<{ name: string, full: string }>> {
  const names = (await readdir(folder)).filter((name) => !name.startsWith('.')).sort()
  return names.map((name) => ({ name, full: path.join(folder, name) }))
}

async function search (folder: string, segments: string[], into: SkillSource[]): Promise<void> {
  if (segments.length > MAX_DEPTH) refuse(`${folder} lies more than ${MAX_DEPTH} folders deep`)
  const found = await entries(folder)
  const skillFile = found.find((entry) => entry.name === SKILL_FILE)
  if (skillFile !== undefined && segments.length > 0) {
    into.push(await readSkill(folder, segments))
    return
  }
  if (skillFile !== undefined) refuse(`${skillFile.full}: the registered folder holds skills in folders of their own, named as the skill`)
  for (const entry of found) {
    const stat = await lstat(entry.full)
    if (stat.isSymbolicLink()) refuse(`${entry.full} is a symlink: skills are served from regular files inside the folder only`)
    if (stat.isDirectory()) await search(entry.full, [...segments, entry.name], into)
  }
}

async function readSkill (folder: string, segments: string[]): Promise<SkillSource> {
  const label = `the skill in ${folder}`
  for (const segment of segments) {
    if (!SKILL_NAME.test(segment)) {
      refuse(`${label}: the folder name "${segment}" breaks the Agent Skills naming rules (1 to 64 lowercase letters, digits and hyphens, no hyphen first, last or twice)`)
    }
  }
  const files: SkillFile[] = []
  const folders: string[] = ['']
  const budget = { bytes: 0 }
  await collect(folder, '', files, folders, budget, label)
  // Found in folder order; SKILL.md goes first, as the skill's own entry.
  const own = files.findIndex((file) => file.path === SKILL_FILE)
  if (own > 0) files.unshift(...files.splice(own, 1))
  if (files[0]?.path !== SKILL_FILE) refuse(`${folder}${path.sep}${SKILL_FILE} is not a regular file`)
  const frontmatter = frontmatterOf(files[0].bytes.toString('utf8'), `${folder}${path.sep}${SKILL_FILE}`)
  const name = segments[segments.length - 1]
  if (frontmatter.name !== name) {
    refuse(`${folder}${path.sep}${SKILL_FILE}: its name ${JSON.stringify(frontmatter.name)} must be the name of its folder, "${name}"`)
  }
  return { segments, frontmatter, files, folders }
}

async function collect (folder: string, relative: string, files: SkillFile[], folders: string[],
  budget: { bytes: number }, label: string): Promise<void> {
  if (relative.split('/').length > MAX_DEPTH) refuse(`${label}: ${folder} lies more than ${MAX_DEPTH} folders deep`)
  for (const entry of await entries(folder)) {
    const at = relative === '' ? entry.name : `${relative}/${entry.name}`
    const stat = await lstat(entry.full)
    if (stat.isSymbolicLink()) refuse(`${entry.full} is a symlink: a skill serves regular files inside its folder only`)
    if (stat.isDirectory()) {
      folders.push(at)
      await collect(entry.full, at, files, folders, budget, label)
      continue
    }
    if (!stat.isFile()) refuse(`${entry.full} is not a regular file`)
    if (files.length === MAX_FILES) refuse(`${label} has more than ${MAX_FILES} files, the extension's limit per skill`)
    budget.bytes += stat.size
    if (budget.bytes > MAX_BYTES) refuse(`${label} holds more than ${MAX_BYTES} bytes (16 MiB), the extension's limit per skill`)
    const bytes = await readFile(entry.full)
    files.push({ path: at, bytes, digest: `sha256:${createHash('sha256').update(bytes).digest('hex')}` })
  }
}

/** SKILL.md's YAML frontmatter, as JSON: `name` and `description` strings, nothing JSON cannot carry. */
function frontmatterOf (text: string, file: string): JsonObject {
  const block = FRONTMATTER.exec(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text)
  if (block === null) refuse(`${file} must begin with YAML frontmatter between --- lines`)
  const tooLarge = `${file}: its frontmatter is more than ${MAX_FRONTMATTER} bytes (64 KiB)`
  if (Buffer.byteLength(block[1]) > MAX_FRONTMATTER) refuse(`${tooLarge} as written`)
  const value = yamlOf(block[1], file)
  if (jsonBytes(value, MAX_FRONTMATTER) > MAX_FRONTMATTER) refuse(`${tooLarge} as JSON, its aliases expanded`)
  if (!isPlainObject(value)) refuse(`${file}: its frontmatter must be a mapping with name and description`)
  const reason = notJson(value)
  if (reason !== undefined) refuse(`${file}: its frontmatter holds ${reason}, which JSON cannot carry`)
  const { name, description } = value
  if (typeof name !== 'string' || !SKILL_NAME.test(name)) {
    refuse(`${file}: name must follow the Agent Skills naming rules (1 to 64 lowercase letters, digits and hyphens, no hyphen first, last or twice), got ${JSON.stringify(name) ?? 'nothing'}`)
  }
  if (typeof description !== 'string' || description.trim() === '' || description.length > MAX_DESCRIPTION) {
    refuse(`${file}: description must be a non-empty string of at most ${MAX_DESCRIPTION} characters`)
  }
  return value
}

/** The frontmatter's YAML as a value, read at a cost that grows with its text only. */
function yamlOf (source: string, file: string): unknown {
  const notYaml = (error: unknown): never => refuse(`${file}: its frontmatter is not YAML (${(error as Error).message.split('\n')[0]})`)
  if (nestsTooDeep(source)) refuse(`${file}: its frontmatter nests collections more than ${MAX_NESTING} deep`)
  // The core schema reads only what JSON holds (no dates, no binary).
  const document = parseDocument(source, { schema: 'core', uniqueKeys: false, prettyErrors: false })
  if (document.errors.length > 0) notYaml(document.errors[0])
  const { aliases, repeated } = survey(document)
  if (repeated !== undefined) refuse(`${file}: its frontmatter repeats the key "${repeated}" in one mapping`)
  if (aliases > MAX_ALIASES) refuse(`${file}: its frontmatter holds ${aliases} aliases, more than ${MAX_ALIASES}`)
  try {
    // An alias gives back its anchor's value itself, not a copy: the conversion stays as small as the text.
    return document.toJS({ maxAliasCount: MAX_ALIASES })
  } catch (error) {
    notYaml(error)
  }
}

/** Its aliases, and a key some mapping repeats: found here, as the `yaml` package checks each key against all. */
function survey (document: Document): { aliases: number, repeated?: string } {
  let aliases = 0
  let repeated: string | undefined
  visit(document, {
    Alias: () => { aliases++ },
    Map: (_at, map) => {
      const keys = new Set<unknown>()
      for (const { key } of map.items) {
        const value = isScalar(key) ? key.value : key
        if (keys.has(value)) {
          repeated = String(value)
          return visit.BREAK
        }
        keys.add(value)
      }
      return undefined
    },
  })
  return { aliases, repeated }
}

/**
 * Read from the syntax tree, which the `yaml` package builds without recursion, before its composer recurses: deep
 * enough, that recursion ends the stack, and V8 may end the process when it compiles a regular expression there.
 */
function nestsTooDeep (source: string): boolean {
  let deep = false
  const visitor: CST.Visitor = (_item, at) => {
    if (at.length <= MAX_NESTING) return undefined
    deep = true
    return CST.visit.BREAK
  }
  for (const token of new Parser().parse(source)) if (token.type === 'document') CST.visit(token, visitor)
  return deep
}

/** The UTF-8 bytes of `value`'s JSON, counted until past `limit`: a value its aliases repeat is never written out. */
function jsonBytes (value: unknown, limit: number): number {
  let bytes = 0
  const pending = [value]
  while (pending.length > 0 && bytes <= limit) {
    const next = pending.pop()
    if (typeof next !== 'object' || next === null) {
      bytes += Buffer.byteLength(JSON.stringify(next))
      continue
    }
    const keys = Array.isArray(next) ? undefined : Object.keys(next)
    const items = keys === undefined ? next as unknown[] : keys.map((key) => (next as Record<string, unknown>)[key])
    // Brackets and commas, then each key with its colon.
    bytes += 2 + Math.max(items.length - 1, 0)
    for (const key of keys ?? []) bytes += Buffer.byteLength(JSON.stringify(key)) + 1
    for (const item of items) pending.push(item)
  }
  return bytes
}
