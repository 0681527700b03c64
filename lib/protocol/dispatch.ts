import { invalidParams, methodNotFound } from '../errors.js'
import { isPlainObject, type JsonObject } from './wire.js'

type FieldType = 'string' | 'object' | 'integer' | 'any'

interface Dispatched {
  readonly method: string
  readonly params: JsonObject
}

interface MethodSpec<C extends Dispatched> {
  /** The params fields the method takes besides `_meta`; `?` marks the optional ones. */
  params: Record<string, `${FieldType}${'' | '?'}`>
  /** Whether the method may answer `input_required` (it then takes `inputResponses` and `requestState`). */
  interactive?: boolean
  /** Whether the capability behind the method is advertised; when not, the method is -32601. */
  enabled?: () => boolean
  run (ctx: C): Promise<object>
}

const DESCRIBED: Record<FieldType, string> = { string: 'a string', object: 'an object', integer: 'an integer', any: 'anything' }

/** `any`: the method checks the field itself (a cursor that may be null, say). */
function fits (type: FieldType, value: unknown): boolean {
  if (type === 'string') return typeof value === 'string'
  if (type === 'object') return isPlainObject(value)
  if (type === 'integer') return Number.isSafeInteger(value)
  return true
}

const INTERACTIVE_FIELDS = { inputResponses: 'object?', requestState: 'string?' } as const

interface Method<C extends Dispatched> {
  spec: MethodSpec<C>
  types: Map<string, FieldType>
  required: string[]
}

/** A method table: `dispatch(ctx)` finds the context's method, checks its params and runs it. */
export class Dispatcher<C extends Dispatched> {
  readonly #methods = new Map<string, Method<C>>()

  define (method: string, spec: MethodSpec<C>): void {
    const params = spec.interactive === true ? { ...spec.params, ...INTERACTIVE_FIELDS } : spec.params
    const entries = Object.entries(params)
    this.#methods.set(method, {
      spec,
      types: new Map(entries.map(([key, type]) => [key, type.replace('?', '') as FieldType])),
      required: entries.filter(([, type]) => !type.endsWith('?')).map(([key]) => key),
    })
  }

  /** Runs the context's method: -32601 (HTTP 404) when it is not served, -32602 when its params are wrong. */
  dispatch (ctx: C): Promise<object> {
    const method = this.#methods.get(ctx.method)
    if (method === undefined ||
      (method.spec.enabled !== undefined && !method.spec.enabled())) throw methodNotFound(ctx.method)
    checkParams(ctx.method, method, ctx.params)
    return method.spec.run(ctx)
  }
}

function checkParams<C extends Dispatched> (name: string, method: Method<C>, params: JsonObject): void {
  for (const key in params) {
    if (key === '_meta') continue
    const type = method.types.get(key)
    if (type === undefined) throw invalidParams(`Unknown field params.${key} for ${name}`)
    const value = params[key]
    if (!fits(type, value)) throw invalidParams(`params.${key} must be ${DESCRIBED[type]}`)
  }
  for (const key of method.required) {
    if (params[key] === undefined) throw invalidParams(`params.${key} is required for ${name}`)
  }
}
