import type { FastifyRequest } from 'fastify'
import {
  MAX_TIMER_MS, boundedInteger, cacheHint, describe, knownFields, nonEmptyString, oneOf, optionalBoolean,
  optionalFunction, optionalString, plainObject, positiveInteger, stringList, type CacheHint,
} from './check.js'
import { InvalidOptionError } from './errors.js'
import type { TokenVersion } from './seal/seal.js'
import type { TaskStore } from './tasks/store.js'
import type { ReceiptStore } from './receipts/store.js'
import type { NotificationBus } from './bus/bus.js'
import type { EventLog } from './events/log.js'
import type { EventSettings } from './events/assemble.js'
import { DEFAULT_MAX_TOKEN_LENGTH } from './modern/codec.js'
import { MAKE_KEY } from './seal/keys.js'
import { LEGACY_VERSIONS, PROTOCOL_VERSION, type Implementation } from './protocol/wire.js'
import { resolveProtectedResource, type ProtectedResourceOptions } from './transport/oauth.js'
import { MOCAPI_VERSION } from './version.js'

export type { CacheHint } from './check.js'

/** Options of the mocapi plugin. Every field is optional. */
export interface MocapiOptions {
  /** The MCP endpoint. Default `'/mcp'`. */
  path?: string | undefined
  /** Name and version in every result's `_meta["io.modelcontextprotocol/serverInfo"]`. Default mocapi's own. */
  serverInfo?: { name: string, version: string, title?: string | undefined } | undefined
  /** Free text for clients, returned by `server/discover`. */
  instructions?: string | undefined
  requestState?: {
    /** 32-byte keys (base64[url] or hex), the first sealing. Absent: `MOCAPI_REQUEST_STATE_KEYS`, else ephemeral. */
    keys?: string[] | undefined
    /** How long a requestState token stays valid, in ms. Default 300 000 (5 minutes). */
    ttl?: number | undefined
    /** Most input-required rounds one call may take before it is refused. Default 16. */
    maxRounds?: number | undefined
    /** Longest token accepted, in characters (refused before decryption). Default 65 536, at most 1 MiB. */
    maxTokenLength?: number | undefined
    /**
     * The layout tokens and 2025-era session ids are sealed in (both open either): 2, a key per sealing epoch, or 1 for
     * the first step of an upgrade from a build before 2 (docs/deploy.md#key-lifetime). Default 2.
     */
    tokenVersion?: 1 | 2 | undefined
    /**
     * Each round's token is good for one retry, claimed fleet-wide through the `bus` (with `claim`): a second retry is
     * -32602, a claim that fails or takes over 2 s 503. Default false. A client whose reply was lost starts over.
     */
    singleUse?: boolean | undefined
  } | undefined
  /** Replies kept so a duplicate (a retried round, a keyed `tools/call`) gets one, not a run. `false`: none. */
  receipts?: false | {
    /** Where receipts live: `RedisReceiptStore` across a fleet. Default: in this process's memory (64 MiB). */
    store?: ReceiptStore | undefined
    /** ms a keyed call's receipt is kept. Default 86 400 000 (a day); a round's lives as long as its token. */
    ttl?: number | undefined
    /** UTF-8 bytes of a reply kept at most; a larger one's duplicate gets -32600 `reply-not-kept`. Default 1 MiB. */
    maxBytes?: number | undefined
  } | undefined
  /** What `ctx.once` may record. */
  once?: {
    /** UTF-8 bytes one recorded value's JSON may take. Default 4096. */
    maxBytes?: number | undefined
  } | undefined
  /**
   * The caller bound into each token. Default: `request.user` if a string, else `request.user.sub`; a signed-in user
   * with neither takes no interactive rounds. A function answering `null` or `undefined` makes the caller anonymous.
   */
  principal?: ((request: FastifyRequest) => string | null | undefined) | undefined
  /** The OAuth scopes a request's token grants. Default: `request.user.scope` (space-separated) or `.scp`. */
  scopes?: ((request: FastifyRequest) => readonly string[] | undefined) | undefined
  /** Browser origins allowed to call the endpoint (`scheme://host[:port]`, or `'*'`). Default: localhost only. */
  allowedOrigins?: string[] | undefined
  /** Extra `Host` names accepted when the server listens on a loopback address (DNS rebinding protection). */
  allowedHosts?: string[] | undefined
  /** Items per page of `tools/list` and the other lists. Default 100. */
  pageSize?: number | undefined
  /** Largest request body, in bytes. Default 1 MiB. */
  bodyLimit?: number | undefined
  /** RFC 9728 metadata, served at `/.well-known/oauth-protected-resource[/path]`; 401 replies then point to it. */
  protectedResource?: ProtectedResourceOptions | undefined
  /** Carries list-change and resource-update events between nodes. Default: in-process only. */
  bus?: NotificationBus | undefined
  /** Caching hints of `server/discover` (default 1 hour), the lists (5 minutes) and reads (1 minute), all public. */
  cache?: {
    discover?: CacheHint | undefined
    lists?: CacheHint | undefined
    resources?: CacheHint | undefined
  } | undefined
  /** Bounds on what a client can make the server hold or work through. */
  limits?: {
    /** Longest resource URI read, registered or subscribed to, in characters. Default 8192. */
    uriLength?: number | undefined
    /** Bytes an event stream may hold unsent (a client that does not read) before it is ended. Default 1 MiB. */
    streamBufferBytes?: number | undefined
    /** Change streams (`subscriptions/listen`, 2025-era GET streams) open in this process. Default 512. */
    streams?: number | undefined
    /** Change streams open for one caller: a principal, or a client address when anonymous. Default 16. */
    streamsPerCaller?: number | undefined
    /** URIs one stream may subscribe to. Default 256. */
    subscriptionUris?: number | undefined
    /** Messages one POSTed batch may hold (2025-03-26 sessions, the one revision with batches). Default 32. */
    batchSize?: number | undefined
    /** 2025-era calls waiting in this process for their client's answer (elicit, sample, roots). Default 10 000. */
    waitingCalls?: number | undefined
    /** 2025-era calls waiting for one caller's answers: a principal, or a client address when anonymous. Default 256 */
    waitingCallsPerCaller?: number | undefined
    /** Tasks one caller holds until they expire: a principal, or an address (IPv6 by its /64). Default 64. */
    tasksPerCaller?: number | undefined
    /** Characters of sealed state one caller's tasks hold together; past it a task is refused 429. Default 16 MiB. */
    taskBytesPerCaller?: number | undefined
  } | undefined
  /** ms handlers still running at close get before their requests are ended. Default 10 000, at most 2^31 − 1. */
  shutdownGrace?: number | undefined
  /**
   * ms a held stream may go without a byte before it sends an SSE comment, and a reply before it becomes a stream
   * (for a client that takes one): no proxy cuts it for idleness. Default 15 000, at least 100; `false`: off.
   */
  heartbeat?: number | false | undefined
  /** What a client hears of a handler's throw that is no `McpError`: its message (default), or a generic text. */
  errors?: 'expose' | 'generic' | undefined
  /** Clients of the 2025 revisions (`initialize`): served on the same endpoint (default), or refused 400 -32022. */
  legacy?: 'serve' | 'reject' | undefined
  /**
   * OpenTelemetry for each call by the MCP semantic conventions (a `SERVER` span under the trace context in `_meta`,
   * the `mcp.server.operation.duration` histogram), when `@opentelemetry/api` is installed. Default `true`.
   */
  tracing?: boolean | undefined
  /** Tasks (the `io.modelcontextprotocol/tasks` extension), for tools that declare `task`. */
  tasks?: {
    /** Where tasks live: `RedisTaskStore` across a fleet. Default: this process's memory (one node, lost on exit). */
    store?: TaskStore | undefined
    /** ms a running pass holds its task (renewed each third): then its node is taken for gone. Default 30 000. */
    lease?: number | undefined
  } | undefined
  /** Elicitation as the operator allows it. */
  elicitation?: {
    /**
     * Clients taken to lack elicitation whatever they declare: `true` for all, or a function of `clientInfo` for hosts
     * that declare it and do not ask (their `ctx.elicit()` fails -32021, or is `unavailable`). Default: off.
     */
    disable?: boolean | ((client: Implementation | undefined) => boolean) | undefined
  } | undefined
  /** Events (the `io.modelcontextprotocol/events` extension, Beta): poll, push and signed webhooks. */
  events?: {
    /** Where occurrences, webhook subscriptions and deliveries live: `RedisEventLog` across a fleet. Default: memory */
    log?: EventLog | undefined
    /** ms between an `events/stream`'s heartbeat notifications, which carry its cursor. Default 30 000, the most. */
    heartbeat?: number | undefined
    /** ms a poll's `nextPollMs` asks the client to wait (and a stream of a `check` type re-reads). Default 5000. */
    pollInterval?: number | undefined
    /** Occurrences a poll returns when the client names no `maxEvents`. Default 100; a client may ask up to 1000. */
    maxEvents?: number | undefined
    /** UTF-8 bytes of JSON one occurrence's data may take; `emit` rejects more. Default 262 144 (256 KiB). */
    maxPayloadBytes?: number | undefined
    /** Live webhook subscriptions one principal may hold; past it `events/subscribe` is -32025. Default 64. */
    subscriptionsPerPrincipal?: number | undefined
    webhooks?: {
      /** Callback origins let past the SSRF guard (`http://127.0.0.1:*` in tests): `scheme://host[:port or *]`. */
      allow?: string[] | undefined
      /** ms before each retry of a failed delivery (1 to 10 delays of at least 10 ms). Default 30 s, 2 min, 10 min. */
      retryDelays?: number[] | undefined
      /** ms one POST may take. Default 10 000. */
      timeout?: number | undefined
      /** Verification challenges one node sends a host a minute; past it `events/subscribe` is -32025. Default 60. */
      verificationsPerMinute?: number | undefined
    } | undefined
  } | undefined
  /** 2025-era sessions, which mocapi seals into their `Mcp-Session-Id` and stores nowhere. */
  session?: {
    /** ms a session id stays valid; the client then starts a new session. Default a day, at most 2^31 − 1. */
    ttl?: number | undefined
    /** ms a 2025-era call waits for its client's answer (elicit, sample, roots). Default 300 000, at most 2^31 − 1. */
    answerTimeout?: number | undefined
  } | undefined
}

type Section<K extends keyof MocapiOptions> = NonNullable<MocapiOptions[K]>

const TIMER_BOUND = 'about 24.8 days, the longest timer Node keeps: a longer one fires at once'
const TOKEN_BOUND = '1 MiB of characters: every retry carries its token, and a request body is at most 1 MiB by default (bodyLimit)'
const MIN_HEARTBEAT = 100

// Each section declared once: its defaults, whose keys are the names it knows; `satisfies` holds them to the interface.
export const LIMITS = {
  uriLength: 8192,
  streamBufferBytes: 1024 * 1024,
  streams: 512,
  streamsPerCaller: 16,
  subscriptionUris: 256,
  batchSize: 32,
  waitingCalls: 10_000,
  waitingCallsPerCaller: 256,
  tasksPerCaller: 64,
  taskBytesPerCaller: 16 * 1024 * 1024,
} satisfies Record<keyof Section<'limits'>, number>

const CACHE = {
  discover: { ttlMs: 3_600_000, cacheScope: 'public' },
  lists: { ttlMs: 300_000, cacheScope: 'public' },
  resources: { ttlMs: 60_000, cacheScope: 'public' },
} as const satisfies Record<keyof Section<'cache'>, Required<CacheHint>>

const REQUEST_STATE = { ttl: 300_000, maxRounds: 16, maxTokenLength: DEFAULT_MAX_TOKEN_LENGTH, tokenVersion: 2 }
const SESSION = { ttl: 86_400_000, answerTimeout: 300_000 } satisfies Record<keyof Section<'session'>, number>
const DEFAULTS = { path: '/mcp', pageSize: 100, shutdownGrace: 10_000, heartbeat: 15_000, lease: 30_000, once: 4096 }

// The names each section knows; each list compiles only while it names every field of its part of the interface.
const OPTIONS = ['path', 'serverInfo', 'instructions', 'requestState', 'receipts', 'once', 'principal', 'scopes', 'allowedOrigins',
  'allowedHosts', 'pageSize', 'bodyLimit', 'protectedResource', 'bus', 'cache', 'limits', 'shutdownGrace', 'heartbeat',
  'errors', 'legacy', 'tracing', 'tasks', 'elicitation', 'session', 'events'] as const
const REQUEST_STATE_OPTIONS = ['keys', 'ttl', 'maxRounds', 'maxTokenLength', 'tokenVersion', 'singleUse'] as const
const TASKS_OPTIONS = ['store', 'lease'] as const
const RECEIPTS = { store: undefined, ttl: 86_400_000, maxBytes: 1024 * 1024 } satisfies Record<keyof Section<'receipts'>, unknown>
const EVENTS = {
  log: undefined,
  heartbeat: 30_000,
  pollInterval: 5000,
  maxEvents: 100,
  maxPayloadBytes: 256 * 1024,
  subscriptionsPerPrincipal: 64,
  webhooks: undefined,
} satisfies Record<keyof Section<'events'>, unknown>
const WEBHOOKS = { allow: [] as string[], retryDelays: [30_000, 120_000, 600_000], timeout: 10_000, verificationsPerMinute: 60 } satisfies Record<keyof NonNullable<Section<'events'>['webhooks']>, unknown>
const MAX_POLL_EVENTS = 1000
type Missing<Names extends readonly string[], Part> = Exclude<keyof Part, Names[number]>
type Complete<N extends readonly string[], Part> = [Missing<N, Part>] extends [never] ? true : Missing<N, Part>
type Assert<T extends true[]> = T
/** Compiles only while each list names every field of its part of MocapiOptions: a new option cannot be left out. */
export type OptionListsComplete = Assert<[Complete<typeof OPTIONS, MocapiOptions>,
  Complete<typeof REQUEST_STATE_OPTIONS, Section<'requestState'>>, Complete<typeof TASKS_OPTIONS, Section<'tasks'>>]>

/** A section's object (absent: `{}`), refusing names it does not know (`known`: a list, or a table's keys). */
function section (value: unknown, name: string, known: readonly string[] | object, prefix = `${name}.`): Record<string, unknown> {
  const given = plainObject(value ?? {}, name)
  knownFields(given, new Set(Array.isArray(known) ? known : Object.keys(known)), prefix)
  return given
}

function timerMs (value: unknown, name: string, fallback: number): number {
  return boundedInteger(value, name, fallback, MAX_TIMER_MS, TIMER_BOUND)
}

function requestStateOf (value: unknown) {
  const rs = section(value, 'requestState', REQUEST_STATE_OPTIONS)
  if (rs.keys !== undefined && (!Array.isArray(rs.keys) || rs.keys.length === 0)) {
    throw new InvalidOptionError(`requestState.keys must be a non-empty array of keys, got ${Array.isArray(rs.keys) ? 'an empty array' : describe(rs.keys)}: ` +
      `${MAKE_KEY}, or leave requestState.keys out for an ephemeral key (one process, lost on restart; mocapi warns)`)
  }
  if (rs.tokenVersion !== undefined && rs.tokenVersion !== 1 && rs.tokenVersion !== 2) {
    throw new InvalidOptionError(`requestState.tokenVersion must be 1 or 2, got ${describe(rs.tokenVersion)}`)
  }
  return {
    keys: rs.keys as string[] | undefined,
    ttl: positiveInteger(rs.ttl, 'requestState.ttl', REQUEST_STATE.ttl),
    maxRounds: positiveInteger(rs.maxRounds, 'requestState.maxRounds', REQUEST_STATE.maxRounds),
    maxTokenLength: boundedInteger(rs.maxTokenLength, 'requestState.maxTokenLength', REQUEST_STATE.maxTokenLength, 1024 * 1024, TOKEN_BOUND),
    tokenVersion: (rs.tokenVersion ?? REQUEST_STATE.tokenVersion) as TokenVersion,
    singleUse: optionalBoolean(rs.singleUse, 'requestState.singleUse', false),
  }
}

function limitsOf (value: unknown): Record<keyof typeof LIMITS, number> {
  const given = section(value, 'limits', LIMITS)
  const limits = { ...LIMITS }
  for (const key of Object.keys(LIMITS) as Array<keyof typeof LIMITS>) {
    limits[key] = positiveInteger(given[key], `limits.${key}`, LIMITS[key])
  }
  return limits
}

function cacheOf (value: unknown): Record<keyof typeof CACHE, Required<CacheHint>> {
  const given = section(value, 'cache', CACHE)
  const hints: Record<string, Required<CacheHint>> = {}
  for (const [key, fallback] of Object.entries(CACHE)) hints[key] = cacheHint(given[key], `cache.${key}`, fallback)
  return hints as Record<keyof typeof CACHE, Required<CacheHint>>
}

function heartbeatOf (value: unknown): number | undefined {
  if (value === undefined) return DEFAULTS.heartbeat
  if (value === false) return undefined
  if (!Number.isInteger(value) || (value as number) < MIN_HEARTBEAT || (value as number) > MAX_TIMER_MS) {
    throw new InvalidOptionError(`heartbeat must be false or an integer of ms from ${MIN_HEARTBEAT} (a shorter one writes ` +
      `more than it keeps) to ${MAX_TIMER_MS} (${TIMER_BOUND}), got ${describe(value)}`)
  }
  return value as number
}

function serverInfoOf (value: unknown): Implementation {
  if (value === undefined) return { name: 'mocapi', version: MOCAPI_VERSION }
  const info = plainObject(value, 'serverInfo')
  knownFields(info, new Set(['name', 'version', 'title']), 'serverInfo.')
  const name = nonEmptyString(info.name, 'serverInfo.name')
  const version = nonEmptyString(info.version, 'serverInfo.version')
  const title = optionalString(info.title, 'serverInfo.title')
  return title === undefined ? { name, version } : { name, version, title }
}

/** A store or bus given as an option: an object with these functions, else `needs` and the value given. */
function withMethods<T> (value: unknown, methods: readonly string[], needs: string): T | undefined {
  if (value === undefined) return undefined
  const given = value as Record<string, unknown> | null
  if (typeof given !== 'object' || given === null || Array.isArray(given) || methods.some((method) => typeof given[method] !== 'function')) {
    throw new InvalidOptionError(`${needs}, got ${describe(value)}`)
  }
  return value as T
}

function receiptsOf (value: unknown) {
  if (value === false) return undefined
  const given = section(value, 'receipts', RECEIPTS)
  return {
    store: withMethods<ReceiptStore>(given.store, ['claim', 'renew', 'complete', 'release', 'read'],
      'receipts.store must be a ReceiptStore (an object with claim, renew, complete, release and read functions)'),
    ttl: timerMs(given.ttl, 'receipts.ttl', RECEIPTS.ttl),
    maxBytes: positiveInteger(given.maxBytes, 'receipts.maxBytes', RECEIPTS.maxBytes),
  }
}

/** The bus, which `singleUse` needs to claim with. */
function busOf (value: unknown, singleUse: boolean): NotificationBus | undefined {
  const bus = withMethods<NotificationBus>(value, ['publish', 'subscribe'], 'bus must have publish() and subscribe() methods')
  if (singleUse && bus !== undefined && typeof bus.claim !== 'function') {
    throw new InvalidOptionError('requestState.singleUse needs a bus with a claim(id, ttlMs) method to refuse a second retry fleet-wide; ' +
      'the bus given has none')
  }
  return bus
}

function retryDelaysOf (value: unknown): number[] {
  if (value === undefined) return WEBHOOKS.retryDelays
  if (!Array.isArray(value) || value.length < 1 || value.length > 10 ||
    !value.every((delay) => Number.isInteger(delay) && delay >= 10 && delay <= MAX_TIMER_MS)) {
    throw new InvalidOptionError(`events.webhooks.retryDelays must be 1 to 10 integers of ms from 10 to ${MAX_TIMER_MS}, got ${describe(value)}`)
  }
  return value as number[]
}

function eventHeartbeatOf (value: unknown): number {
  const ms = boundedInteger(value, 'events.heartbeat', EVENTS.heartbeat, 30_000, 'the 30 s the events extension asks a heartbeat to come within')
  if (ms < MIN_HEARTBEAT) throw new InvalidOptionError(`events.heartbeat must be at least ${MIN_HEARTBEAT} ms, got ${ms}`)
  return ms
}

function eventsOf (value: unknown): EventSettings {
  const given = section(value, 'events', EVENTS)
  const webhooks = section(given.webhooks, 'events.webhooks', WEBHOOKS)
  const allow = webhooks.allow ?? WEBHOOKS.allow
  if (!Array.isArray(allow) || !allow.every((origin) => typeof origin === 'string')) {
    throw new InvalidOptionError(`events.webhooks.allow must be an array of origins, got ${describe(allow)}`)
  }
  return {
    log: withMethods<EventLog>(given.log, ['append', 'read', 'putSubscription', 'subscription', 'deleteSubscription', 'subscriptions',
      'marked', 'mark', 'enqueue', 'claim', 'retry', 'finish', 'nextDue'], 'events.log must be an EventLog (MemoryEventLog, RedisEventLog or one of its kind)'),
    heartbeat: eventHeartbeatOf(given.heartbeat),
    pollInterval: timerMs(given.pollInterval, 'events.pollInterval', EVENTS.pollInterval),
    maxEvents: boundedInteger(given.maxEvents, 'events.maxEvents', EVENTS.maxEvents, MAX_POLL_EVENTS, `${MAX_POLL_EVENTS}, the most a client may ask`),
    maxPollEvents: MAX_POLL_EVENTS,
    maxPayloadBytes: positiveInteger(given.maxPayloadBytes, 'events.maxPayloadBytes', EVENTS.maxPayloadBytes),
    subscriptionsPerPrincipal: positiveInteger(given.subscriptionsPerPrincipal, 'events.subscriptionsPerPrincipal', EVENTS.subscriptionsPerPrincipal),
    allow: allow as string[],
    retryDelays: retryDelaysOf(webhooks.retryDelays),
    timeout: timerMs(webhooks.timeout, 'events.webhooks.timeout', WEBHOOKS.timeout),
    verificationsPerMinute: positiveInteger(webhooks.verificationsPerMinute, 'events.webhooks.verificationsPerMinute',
      WEBHOOKS.verificationsPerMinute),
  }
}

function disableOf (value: unknown): boolean | ((client: Implementation | undefined) => boolean) {
  const disable = section(value, 'elicitation', ['disable']).disable ?? false
  if (typeof disable !== 'boolean' && typeof disable !== 'function') {
    throw new InvalidOptionError(`elicitation.disable must be true, false or a function of the client's info, got ${describe(disable)}`)
  }
  return disable as boolean | ((client: Implementation | undefined) => boolean)
}

/** Fills in defaults; throws an `FST_MOCAPI_INVALID_OPTION` TypeError naming the bad value. */
export function resolveOptions (opts: unknown) {
  // Fastify hands a plugin `{}` when it is registered without options (or with null).
  const o = section(opts, 'options', OPTIONS, '')
  const path = o.path ?? DEFAULTS.path
  if (typeof path !== 'string' || !path.startsWith('/')) throw new InvalidOptionError(`path must be a string starting with '/', got ${describe(path)}`)
  const legacy = oneOf(o.legacy, ['serve', 'reject'], 'legacy', 'serve') === 'serve'
  const requestState = requestStateOf(o.requestState)
  const session = section(o.session, 'session', SESSION)
  const tasks = section(o.tasks, 'tasks', TASKS_OPTIONS)
  const once = section(o.once, 'once', ['maxBytes'])
  return {
    path,
    serverInfo: serverInfoOf(o.serverInfo),
    instructions: optionalString(o.instructions, 'instructions'),
    supportedVersions: legacy ? [PROTOCOL_VERSION, ...LEGACY_VERSIONS] : [PROTOCOL_VERSION],
    ...requestState,
    onceBytes: positiveInteger(once.maxBytes, 'once.maxBytes', DEFAULTS.once),
    receipts: receiptsOf(o.receipts),
    principal: optionalFunction<(request: FastifyRequest) => string | null | undefined>(o.principal, 'principal'),
    allowedOrigins: stringList(o.allowedOrigins, 'allowedOrigins'),
    allowedHosts: new Set((stringList(o.allowedHosts, 'allowedHosts') ?? []).map((h) => h.toLowerCase())),
    pageSize: positiveInteger(o.pageSize, 'pageSize', DEFAULTS.pageSize),
    bodyLimit: positiveInteger(o.bodyLimit, 'bodyLimit', 1024 * 1024),
    cache: cacheOf(o.cache),
    limits: limitsOf(o.limits),
    shutdownGrace: timerMs(o.shutdownGrace, 'shutdownGrace', DEFAULTS.shutdownGrace),
    /** ms, or undefined when off. */
    heartbeat: heartbeatOf(o.heartbeat),
    exposeErrors: oneOf(o.errors, ['expose', 'generic'], 'errors', 'expose') === 'expose',
    legacy,
    tracing: optionalBoolean(o.tracing, 'tracing', true),
    sessionTtl: timerMs(session.ttl, 'session.ttl', SESSION.ttl),
    answerTimeout: timerMs(session.answerTimeout, 'session.answerTimeout', SESSION.answerTimeout),
    bus: busOf(o.bus, requestState.singleUse),
    taskStore: withMethods<TaskStore>(tasks.store, ['create', 'get', 'update'],
      'tasks.store must be a TaskStore (an object with create, get and update functions)'),
    lease: timerMs(tasks.lease, 'tasks.lease', DEFAULTS.lease),
    protectedResource: resolveProtectedResource(o.protectedResource),
    elicitationDisable: disableOf(o.elicitation),
    scopes: optionalFunction<(request: FastifyRequest) => readonly string[] | undefined>(o.scopes, 'scopes'),
    events: eventsOf(o.events),
  }
}
