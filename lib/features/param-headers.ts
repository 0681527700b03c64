// SEP-2243 `x-mcp-header` parameters: any difference between a header and the body is refused (400, -32020).
import type { IncomingHttpHeaders } from 'node:http'
import { describe } from '../check.js'
import { InvalidDefinitionError, headerMismatch } from '../errors.js'
import { decodeHeaderValue, header } from '../protocol/envelope.js'
import { isPlainObject, type JsonObject } from '../protocol/wire.js'

const ANNOTATION = 'x-mcp-header'
// RFC 9110 field-name: 1*tchar.
const TOKEN = /^[!#$%&'*+\-.^_`|~0-9A-Za-z]+$/
const TYPES = new Set(['string', 'integer', 'boolean'])
// Keywords whose object maps names to subschemas: their keys are names, never keywords.
const SCHEMA_MAPS = new Set(['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas', 'dependencies'])
// Keywords that hold instance data or names, never a subschema.
const DATA = new Set(['const', 'enum', 'default', 'examples', 'required', 'dependentRequired'])
// Registration reads the whole schema; these keep a hostile one (deep, huge, or cyclic) from hanging it.
const MAX_DEPTH = 64
const MAX_NODES = 100_000
// Decimal, leading zeros and a zero fraction allowed (`042`, `42.0`): integers compare numerically.
const INTEGER = /^(-?)0*([0-9]{1,16})(?:\.0+)?$/

type ParamType = 'string' | 'integer' | 'boolean'

interface Param {
  path: string[]
  /** As Node names it: `mcp-param-region`. */
  header: string
  /** As errors name it: `Mcp-Param-Region`. */
  label: string
  /** As errors name it: `arguments.region`. */
  argument: string
  type: ParamType
}

interface Found {
  at: string
  chain: string[] | undefined
  schema: Record<string, unknown>
}

function step (name: string): string {
  return /^[A-Za-z0-9_$-]+$/.test(name) ? `.${name}` : `[${JSON.stringify(name)}]`
}

class Walk {
  readonly found: Found[] = []
  #nodes = 0
  readonly #where: string

  constructor (where: string) {
    this.#where = where
  }

  visit (node: unknown, at: string, chain: string[] | undefined, depth: number): void {
    if (++this.#nodes > MAX_NODES) throw new InvalidDefinitionError(`${this.#where} inputSchema has more than ${MAX_NODES} values, too many to check for ${ANNOTATION}`)
    if (depth > MAX_DEPTH) throw new InvalidDefinitionError(`${this.#where} inputSchema is nested deeper than ${MAX_DEPTH} levels, too deep to check for ${ANNOTATION}`)
    if (Array.isArray(node)) {
      for (let i = 0; i < node.length; i++) this.visit(node[i], `${at}[${i}]`, undefined, depth + 1)
      return
    }
    if (!isPlainObject(node)) return
    for (const key of Object.keys(node)) {
      const value = node[key]
      if (key === ANNOTATION) this.found.push({ at, chain, schema: node })
      else if (DATA.has(key)) continue
      else if (SCHEMA_MAPS.has(key) && isPlainObject(value)) {
        for (const name of Object.keys(value)) {
          const next = key === 'properties' && chain !== undefined ? [...chain, name] : undefined
          this.visit(value[name], `${at}.${key}${step(name)}`, next, depth + 1)
        }
      } else this.visit(value, `${at}.${key}`, undefined, depth + 1)
    }
  }
}

function argumentAt (args: JsonObject, path: string[]): unknown {
  let value: unknown = args
  for (const name of path) {
    if (!isPlainObject(value) || !Object.hasOwn(value, name)) return undefined
    value = value[name]
  }
  return value
}

function fits (value: unknown, type: ParamType): boolean {
  if (type === 'integer') return Number.isInteger(value)
  return type === 'string' ? typeof value === 'string' : typeof value === 'boolean'
}

function difference (text: string, value: string | number | boolean, param: Param): string | undefined {
  if (param.type === 'integer') {
    const match = INTEGER.exec(text)
    const number = match === null ? NaN : Number(match[1] + match[2])
    if (!Number.isSafeInteger(number)) return `the ${param.label} header must be a decimal integer within ±${Number.MAX_SAFE_INTEGER}`
    return number === value ? undefined : `the ${param.label} header does not match ${param.argument}`
  }
  if (param.type === 'boolean' && text !== 'true' && text !== 'false') return `the ${param.label} header must be true or false`
  return text === String(value) ? undefined : `the ${param.label} header does not match ${param.argument}`
}

export class ParamHeaders {
  readonly #params: Param[]

  private constructor (params: Param[]) {
    this.#params = params
  }

  /** Undefined without annotations; any annotation the spec does not allow throws an InvalidDefinitionError. */
  static compile (inputSchema: JsonObject, where: string): ParamHeaders | undefined {
    const walk = new Walk(where)
    walk.visit(inputSchema, 'inputSchema', [], 0)
    if (walk.found.length === 0) return undefined
    const taken = new Map<string, string>()
    const params: Param[] = []
    for (const { at, chain, schema } of walk.found) {
      const name = schema[ANNOTATION]
      if (chain === undefined || chain.length === 0) {
        throw new InvalidDefinitionError(`${where} ${at}: ${ANNOTATION} is allowed only on a property reached from the root through "properties" alone`)
      }
      if (typeof name !== 'string' || name === '') {
        throw new InvalidDefinitionError(`${where} ${at}: ${ANNOTATION} must be a non-empty string, got ${describe(name)}`)
      }
      if (!TOKEN.test(name)) {
        throw new InvalidDefinitionError(`${where} ${at}: ${ANNOTATION} ${JSON.stringify(name)} must be an HTTP token (letters, digits and !#$%&'*+-.^_\`|~)`)
      }
      const type = schema.type
      if (typeof type !== 'string' || !TYPES.has(type)) {
        throw new InvalidDefinitionError(`${where} ${at}: ${ANNOTATION} needs type "string", "integer" or "boolean", got ${describe(type)}`)
      }
      const header = `mcp-param-${name.toLowerCase()}`
      const first = taken.get(header)
      if (first !== undefined) {
        throw new InvalidDefinitionError(`${where} ${at}: ${ANNOTATION} ${JSON.stringify(name)} repeats the one of ${first} (header names are case-insensitive)`)
      }
      taken.set(header, at)
      params.push({ path: chain, header, label: `Mcp-Param-${name}`, argument: `arguments${chain.map(step).join('')}`, type: type as ParamType })
    }
    return new ParamHeaders(params)
  }

  /** A present argument needs its header, decoded equal to it; an absent or null one needs the header absent. */
  check (headers: IncomingHttpHeaders, args: JsonObject): void {
    for (const param of this.#params) {
      const value = argumentAt(args, param.path)
      const raw = header(headers, param.header)
      if (value === undefined || value === null) {
        if (raw !== undefined) throw headerMismatch(`Header mismatch: the ${param.label} header is sent but ${param.argument} has no value`)
        continue
      }
      // The input schema refuses a wrong type next, and names it.
      if (!fits(value, param.type)) continue
      if (raw === undefined) throw headerMismatch(`Header mismatch: the ${param.label} header is required, since ${param.argument} has a value`)
      const text = decodeHeaderValue(raw)
      if (text === undefined) throw headerMismatch(`Header mismatch: the ${param.label} header is malformed (not printable ASCII, nor valid =?base64?…?=)`)
      const why = difference(text, value as string | number | boolean, param)
      if (why !== undefined) throw headerMismatch(`Header mismatch: ${why}`)
    }
  }
}
