import type { McpContext } from '../context.js'
import { invalidParams, methodNotFound } from '../errors.js'
import { isPlainObject, type JsonObject } from './wire.js'

type FieldType = 'string' | 'object'

/** How one MCP method is served. */
export interface MethodSpec {
  /** The params fields the method takes besides `_meta`; `?` marks the optional ones. */
  params: Record<string, `${FieldType}${'' | '?'}`>
  /** The params field the `Mcp-Name` header must match. */
  nameField?: 'name' | 'uri'
  /** Whether the method may answer `input_required` (it then takes `inputResponses` and `requestState`). */
  interactive?: boolean
  /** Whether the capability behind the method is advertised; when not, the method is -32601. */
  enabled?: () => boolean
  run (ctx: McpContext): Promise<object>
}

/** Methods earlier revisions had and 2026-07-28 removed: they are answered -32601, HTTP 404. */
const REMOVED = new Set(['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe'])

function typeOk (value: unknown, type: FieldType): boolean {
  return type === 'string' ? typeof value === 'string' : isPlainObject(value)
}

const DESCRIBED: Record<FieldType, string> = { string: 'a string', object: 'an object' }

const INTERACTIVE_FIELDS = { inputResponses: 'object?', requestState: 'string?' } as const

/** A method's params spec, taken apart once at definition. */
interface Compiled {
  types: Map<string, FieldType>
  required: string[]
}

/** The method table: finds a method's spec and checks its params. */
export class Dispatcher {
  readonly #methods = new Map<string, MethodSpec>()
  readonly #compiled = new WeakMap<MethodSpec, Compiled>()

  define (method: string, spec: MethodSpec): void {
    const full = spec.interactive === true ? { ...spec, params: { ...spec.params, ...INTERACTIVE_FIELDS } } : spec
    const entries = Object.entries(full.params)
    this.#compiled.set(full, {
      types: new Map(entries.map(([key, type]) => [key, type.replace('?', '') as FieldType])),
      required: entries.filter(([, type]) => !type.endsWith('?')).map(([key]) => key),
    })
    this.#methods.set(method, full)
  }

  /** The spec of a method that is served now; -32601 (HTTP 404) otherwise. */
  lookup (method: string): MethodSpec {
    const spec = REMOVED.has(method) ? undefined : this.#methods.get(method)
    if (spec === undefined || (spec.enabled !== undefined && !spec.enabled())) throw methodNotFound(method)
    return spec
  }

  /** Checks params against the spec: known fields only, each of its type, required ones present. */
  checkParams (method: string, spec: MethodSpec, params: JsonObject): void {
    const { types, required } = this.#compiled.get(spec) as Compiled
    for (const key in params) {
      if (key === '_meta') continue
      const type = types.get(key)
      if (type === undefined) throw invalidParams(`Unknown field params.${key} for ${method}`)
      if (!typeOk(params[key], type)) throw invalidParams(`params.${key} must be ${DESCRIBED[type]}`)
    }
    for (const key of required) {
      if (params[key] === undefined) throw invalidParams(`params.${key} is required for ${method}`)
    }
  }
}
