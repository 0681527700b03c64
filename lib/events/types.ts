import { knownFields, optionalFunction, plainObject } from '../check.js'
import type { McpContext } from '../context.js'
import { DuplicateDefinitionError, InvalidDefinitionError } from '../errors.js'
import { Catalog, accessCheck, type AccessCheck, type Entry } from '../features/catalog.js'
import { scopeList } from '../features/scopes.js'
import type { SchemaCompiler, Validator } from '../json-schema.js'
import { isPlainObject, type JsonObject } from '../protocol/wire.js'
import type { FromSchema } from '../types/json-schema.js'

/** How a client may receive a type's occurrences. */
export type DeliveryMode = 'poll' | 'push' | 'webhook'

/** What an upstream-kept type's `check` answers: the occurrences after `cursor`, and the cursor after them. */
export interface CheckedEvents<Data = JsonObject> {
  events: Array<{ data: Data, eventId?: string | undefined, timestamp?: Date | number | string | undefined }>
  cursor: string
}

/**
 * An event type. Its occurrences are emitted with `app.mcp.emit(name, data)` into the event log, and reach each
 * subscription whose arguments `match` them; or, with `check`, the upstream keeps the position and mocapi stores
 * nothing (poll and push only).
 */
export interface EventDefinition<Args = any, Data = any> {
  /** 1–128 characters, unique in the server. */
  name: string
  description?: string | undefined
  /** JSON Schema (2020-12) of a subscription's arguments, `type: 'object'` at the root. Default: any object. */
  inputSchema?: object | undefined
  /** JSON Schema of each occurrence's `data`, `type: 'object'` at the root; `emit` checks it. Default: any object. */
  payloadSchema?: object | undefined
  /** Which subscriptions an occurrence reaches. Default: all. Keep it quick and free of side effects. */
  match?: ((args: Args, data: Data) => boolean) | undefined
  /** Instead of the log: the occurrences after `cursor` (`null`: start now, return none), read from the upstream. */
  check?: ((args: Args, cursor: string | null, ctx: McpContext) => CheckedEvents<Data> | Promise<CheckedEvents<Data>>) |
    undefined
  /** Modes served. Default all three, or poll and push with `check`. */
  delivery?: DeliveryMode[] | undefined
  /** OAuth scopes a subscriber's token must grant: else 403 with an `insufficient_scope` challenge. Not listed. */
  scopes?: string[] | undefined
  /** Whether the caller may see and subscribe to it; hidden, it answers as an absent one. Not listed. */
  canAccess?: AccessCheck | undefined
  _meta?: JsonObject | undefined
}

type SchemaType<Definition, Key extends 'inputSchema' | 'payloadSchema'> = Key extends keyof Definition
  ? unknown extends FromSchema<Exclude<Definition[Key], undefined>>
    ? Record<string, any>
    : FromSchema<Exclude<Definition[Key], undefined>>
  : Record<string, any>

/** A schema's type (literal or TypeBox), else any object. */
export type SchemaValue<Schema> = [Schema] extends [undefined]
  ? Record<string, any>
  : unknown extends FromSchema<Exclude<Schema, undefined>>
    ? Record<string, any>
    : FromSchema<Exclude<Schema, undefined>>

/**
 * What `app.mcp.event` takes: the schemas are inferred first, then `match` and `check` are typed from them, so their
 * parameters need no annotation.
 */
export interface TypedEventDefinition<Input, Payload>
  extends Omit<EventDefinition<SchemaValue<Input>, SchemaValue<Payload>>, 'inputSchema' | 'payloadSchema'> {
  inputSchema?: Input
  payloadSchema?: Payload
}

/** The arguments a type's `inputSchema` describes (literal or TypeBox), else any object. */
export type EventArguments<Definition> = SchemaType<Definition, 'inputSchema'>
/** The payload a type's `payloadSchema` describes (literal or TypeBox), else any object. */
export type EventPayload<Definition> = SchemaType<Definition, 'payloadSchema'>

export interface EventType extends Entry<JsonObject> {
  readonly name: string
  readonly delivery: ReadonlySet<DeliveryMode>
  readonly inputSchema: object
  readonly payloadSchema: object
  readonly validateArguments: Validator
  readonly validatePayload: Validator
  readonly match: ((args: JsonObject, data: JsonObject) => boolean) | undefined
  readonly check: EventDefinition<JsonObject, JsonObject>['check']
}

const KNOWN_FIELDS = new Set(['name', 'description', 'inputSchema', 'payloadSchema', 'match', 'check', 'delivery', 'scopes', 'canAccess', '_meta'])
const NAME = /^[^\s\p{Cc}]{1,128}$/u
const MODES: readonly DeliveryMode[] = ['poll', 'push', 'webhook']
const ANY_OBJECT = Object.freeze({ type: 'object' })

function objectSchema (value: unknown, where: string): object {
  if (value === undefined) return ANY_OBJECT
  if (!isPlainObject(value) || value.type !== 'object') throw new InvalidDefinitionError(`${where} must be an object schema with type: 'object'`)
  return value
}

function deliveryOf (value: unknown, upstream: boolean, where: string): Set<DeliveryMode> {
  if (value === undefined) return new Set(upstream ? ['poll', 'push'] : MODES)
  if (!Array.isArray(value) || value.length === 0 || !value.every((mode) => MODES.includes(mode))) {
    throw new InvalidDefinitionError(`${where} delivery must be a non-empty array of 'poll', 'push' and 'webhook', got ${JSON.stringify(value)}`)
  }
  if (upstream && value.includes('webhook')) {
    throw new InvalidDefinitionError(`${where} has check, so the upstream keeps its position: it serves poll and push, not webhook`)
  }
  return new Set(value as DeliveryMode[])
}

/** The registered event types, by name. */
export class EventTypes extends Catalog<JsonObject, EventType> {
  readonly #compiler: SchemaCompiler

  constructor (compiler: SchemaCompiler) {
    super()
    this.#compiler = compiler
  }

  add (definition: EventDefinition): void {
    plainObject(definition, 'an event definition', InvalidDefinitionError)
    const name = definition.name
    if (typeof name !== 'string' || !NAME.test(name)) {
      throw new InvalidDefinitionError(`event name must be 1-128 characters without spaces or control characters, got ${JSON.stringify(name)}`)
    }
    const where = `event "${name}"`
    if (this.entry(name) !== undefined) throw new DuplicateDefinitionError(where)
    knownFields(definition as unknown as Record<string, unknown>, KNOWN_FIELDS, where, InvalidDefinitionError)
    const inputSchema = objectSchema(definition.inputSchema, `${where} inputSchema`)
    const payloadSchema = objectSchema(definition.payloadSchema, `${where} payloadSchema`)
    const match = optionalFunction<EventType['match'] & object>(definition.match, `${where} match`, InvalidDefinitionError)
    const check = optionalFunction<NonNullable<EventType['check']>>(definition.check, `${where} check`, InvalidDefinitionError)
    if (check !== undefined && match !== undefined) throw new InvalidDefinitionError(`${where} takes match or check, not both: check reads only what matches`)
    const delivery = deliveryOf(definition.delivery, check !== undefined, where)
    if (definition.description !== undefined && typeof definition.description !== 'string') {
      throw new InvalidDefinitionError(`${where} description must be a string`)
    }
    const canAccess = accessCheck(definition.canAccess, where)
    const scopes = scopeList(definition.scopes, where)
    const validateArguments = this.#compiler.compile(inputSchema, `${where} inputSchema`)
    let validatePayload
    try {
      validatePayload = this.#compiler.compile(payloadSchema, `${where} payloadSchema`)
    } catch (error) {
      this.#compiler.release(inputSchema)
      throw error
    }
    const modes = MODES.filter((mode) => delivery.has(mode))
    const listed: JsonObject = { name, delivery: modes, inputSchema, payloadSchema } as JsonObject
    if (definition.description !== undefined) listed.description = definition.description
    if (definition._meta !== undefined) listed._meta = plainObject(definition._meta, `${where} _meta`, InvalidDefinitionError) as JsonObject
    const schemas = { inputSchema, payloadSchema, validateArguments, validatePayload }
    this.put(name, { listed, canAccess, scopes, name, delivery, ...schemas, match, check })
  }

  delete (name: string): boolean {
    const type = this.remove(name)
    if (type === undefined) return false
    this.#compiler.release(type.inputSchema)
    this.#compiler.release(type.payloadSchema)
    return true
  }
}
