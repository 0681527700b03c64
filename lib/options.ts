import type { FastifyRequest } from 'fastify'
import {
  MAX_TIMER_MS, boundedInteger, cacheHint, describe, knownFields, nonEmptyString, oneOf, optionalBoolean,
  optionalFunction, optionalString, plainObject, positiveInteger, stringList, type CacheHint,
} from './check.js'
import { InvalidOptionError } from './errors.js'
import type { TokenVersion } from './seal/seal.js'
import type { TaskStore } from './tasks/store.js'
import type { NotificationBus } from './bus/bus.js'
import { DEFAULT_MAX_TOKEN_LENGTH } from './modern/codec.js'
import { MAKE_KEY } from './seal/keys.js'
import { LEGACY_VERSIONS, PROTOCOL_VERSION, isPlainObject, type Implementation } from './protocol/wire.js'
import { resolveProtectedResource, type ProtectedResourceOptions } from './transport/oauth.js'
import { MOCAPI_VERSION } from './version.js'

export type { CacheHint } from './check.js'

/** Options of the mocapi plugin. Every field is optional. */
export interface MocapiOptions {
  /** The MCP endpoint. Default `'/mcp'`. */
  path?: string | undefined
  /**
   * Name and version reported in `_meta["io.modelcontextprotocol/serverInfo"]` of every result.
   * Default `{ name: 'mocapi', version }`.
   */
  serverInfo?: { name: string, version: string, title?: string | undefined } | undefined
  /** Free text for clients, returned by `server/discover`. */
  instructions?: string | undefined
  requestState?: {
    /**
     * 32-byte keys, base64, base64url or 64 hex digits. The first encrypts, all decrypt. When
     * absent, the `MOCAPI_REQUEST_STATE_KEYS` environment variable (comma-separated) is read; when
     * that is unset too, an ephemeral key is made and one warning is logged.
     */
    keys?: string[] | undefined
    /** How long a requestState token stays valid, in ms. Default 300 000 (5 minutes). */
    ttl?: number | undefined
    /** Most input-required rounds one call may take before it is refused. Default 16. */
    maxRounds?: number | undefined
    /**
     * Longest token accepted, in characters; longer ones are refused before decryption. Default
     * 65 536, at most 1 MiB (1 048 576).
     */
    maxTokenLength?: number | undefined
    /**
     * The layout new tokens and 2025-era session ids are sealed in; both open either. Default 2,
     * which seals under a key derived per sealing epoch (a random salt per 2^24 tokens). Set 1 for the first step of
     * a rolling upgrade from a build before 2 existed, whose nodes open only 1 (docs/deploy.md#key-lifetime).
     */
    tokenVersion?: 1 | 2 | undefined
    /**
     * Each round's token is good for one retry, fleet-wide: the retry claims it through the `bus` before the handler
     * runs, and a second retry with the same token is refused (-32602). Default false. A client whose reply was lost
     * cannot retry that round: it starts the call over. Needs a bus with `claim` (both of mocapi's have it); a claim
     * that fails or takes over 2 s is answered 503.
     */
    singleUse?: boolean | undefined
  } | undefined
  /** What `ctx.once` may record. */
  once?: {
    /** UTF-8 bytes one recorded value's JSON may take. Default 4096. */
    maxBytes?: number | undefined
  } | undefined
  /**
   * The caller's identity, bound into every requestState. Default: `request.user` when a string, else
   * `request.user.sub` (a string, or a number made a string). An authenticated request (`request.user` set) without
   * either may not take interactive rounds. A function that returns `null` or `undefined` makes the caller anonymous.
   */
  principal?: ((request: FastifyRequest) => string | null | undefined) | undefined
  /**
   * The OAuth scopes a request's verified token grants, for tools, prompts and resources that declare `scopes`.
   * Default: `request.user.scope` (space-separated) or `request.user.scp` (an array, or space-separated).
   */
  scopes?: ((request: FastifyRequest) => readonly string[] | undefined) | undefined
  /** Browser origins allowed to call the endpoint (exact `scheme://host[:port]`, or `'*'`). Default: localhost origins only. */
  allowedOrigins?: string[] | undefined
  /** Extra `Host` names accepted when the server listens on a loopback address (DNS rebinding protection). */
  allowedHosts?: string[] | undefined
  /** Items per page of `tools/list` and the other lists. Default 100. */
  pageSize?: number | undefined
  /** Largest request body, in bytes. Default 1 MiB. */
  bodyLimit?: number | undefined
  /**
   * RFC 9728 protected-resource metadata, served at `/.well-known/oauth-protected-resource` (and its
   * path-suffixed form); 401 replies from the app's auth then carry `WWW-Authenticate` with `resource_metadata`.
   */
  protectedResource?: ProtectedResourceOptions | undefined
  /** Carries list-change and resource-update events between nodes. Default: in-process only. */
  bus?: NotificationBus | undefined
  /**
   * Caching hints of `server/discover` (default 1 hour, public), the lists (5 minutes, public) and
   * resource reads (1 minute, public).
   */
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
    /**
     * 2025-era calls waiting in this process for their client's answer (elicitation, sampling, roots). Default 10 000.
     */
    waitingCalls?: number | undefined
    /** 2025-era calls waiting for one caller's answers: a principal, or a client address when anonymous. Default 256 */
    waitingCallsPerCaller?: number | undefined
    /**
     * Tasks one caller holds until they expire: a principal, or a client address when anonymous (an IPv6 address by
     * its /64). Default 64.
     */
    tasksPerCaller?: number | undefined
    /**
     * Characters of sealed task state one caller's tasks hold together (arguments, questions, answers, results); a
     * task that would pass it is refused 429, and one task holds at most this. Default 16 MiB.
     */
    taskBytesPerCaller?: number | undefined
  } | undefined
  /**
   * How long handlers still running when the server closes get to finish, in ms, before their
   * requests are ended. Default 10 000, at most 2 147 483 647 (about 24.8 days).
   */
  shutdownGrace?: number | undefined
  /**
   * Keeps held connections talking, so no proxy or load balancer cuts one for idleness: every event stream mocapi holds
   * sends an SSE comment whenever this many ms pass without a byte on it, and a request whose reply is not ready by
   * then, from a client that accepts `text/event-stream`, is answered on an event stream (comments while it waits,
   * its response last). Default 15 000; at least 100; `false` turns it off (docs/deploy.md#idle-limits).
   */
  heartbeat?: number | false | undefined
  /**
   * What clients are told when a handler throws something that is not an `McpError`: its message
   * (`'expose'`, the default), or a generic text (`'generic'`). The detail is logged either way.
   */
  errors?: 'expose' | 'generic' | undefined
  /**
   * Clients of the 2025 revisions (2025-11-25, 2025-06-18, 2025-03-26), which open with
   * `initialize`: served on the same endpoint (`'serve'`, the default), or refused with HTTP 400
   * and -32022 naming the versions served (`'reject'`).
   */
  legacy?: 'serve' | 'reject' | undefined
  /**
   * OpenTelemetry for each call, by the MCP semantic conventions: a `SERVER` span (`tools/call <name>`, …) whose
   * parent is the trace context the client sent in `params._meta`, and the `mcp.server.operation.duration` histogram.
   * On when the app has `@opentelemetry/api` installed; it records once an OpenTelemetry SDK is registered before
   * mocapi, and costs nothing measurable until then. `false` turns it off. Default `true`.
   */
  tracing?: boolean | undefined
  /** Tasks (the `io.modelcontextprotocol/tasks` extension), for tools that declare `task`. */
  tasks?: {
    /**
     * Where tasks live: a store every node of a deployment shares (`RedisTaskStore` from `mocapi/redis`), or any
     * `TaskStore`. Default: in this process's memory, which serves one node and loses its tasks on restart (a
     * warning at startup says so once a task-capable tool is registered). mocapi closes it when the server closes.
     */
    store?: TaskStore | undefined
    /**
     * How long a running pass holds its task, in ms, renewed every third of it: once it lapses, the node running
     * it is taken for gone. Default 30 000, at most 2 147 483 647.
     */
    lease?: number | undefined
  } | undefined
  /** Elicitation as the operator allows it. */
  elicitation?: {
    /**
     * Treat clients as lacking the elicitation capability, whatever they declare: `true` for every client, or a
     * function of the client's `clientInfo` (undefined when it sent none) for hosts known to declare it and not ask.
     * Their `ctx.elicit()` then fails with -32021, or resolves `{ action: 'unavailable' }` with
     * `{ unavailable: 'return' }`; the log says so once per client. Default: off.
     */
    disable?: boolean | ((client: Implementation | undefined) => boolean) | undefined
  } | undefined
  /** 2025-era sessions, which mocapi seals into their `Mcp-Session-Id` and stores nowhere. */
  session?: {
    /**
     * How long a session id stays valid, in ms; the client then starts a new session. Default
     * 86 400 000 (a day), at most 2 147 483 647 (about 24.8 days).
     */
    ttl?: number | undefined
    /**
     * How long a 2025-era call waits for the client's answer to an elicitation, sampling or roots
     * request, in ms. Default 300 000, at most 2 147 483 647 (about 24.8 days).
     */
    answerTimeout?: number | undefined
  } | undefined
}

interface ResolvedOptions {
  path: string
  serverInfo: { name: string, version: string, title?: string }
  instructions: string | undefined
  supportedVersions: readonly string[]
  keys: string[] | undefined
  ttl: number
  maxRounds: number
  maxTokenLength: number
  tokenVersion: TokenVersion
  singleUse: boolean
  onceBytes: number
  principal: ((request: FastifyRequest) => string | null | undefined) | undefined
  allowedOrigins: string[] | undefined
  allowedHosts: Set<string>
  pageSize: number
  bodyLimit: number
  cache: { discover: Required<CacheHint>, lists: Required<CacheHint>, resources: Required<CacheHint> }
  limits: {
    uriLength: number,
    streamBufferBytes: number,
    streams: number,
    streamsPerCaller: number,
    subscriptionUris: number,
    batchSize: number,
    waitingCalls: number,
    waitingCallsPerCaller: number,
    tasksPerCaller: number,
    taskBytesPerCaller: number
  }
  shutdownGrace: number
  /** ms, or undefined when off. */
  heartbeat: number | undefined
  exposeErrors: boolean
  legacy: boolean
  tracing: boolean
  sessionTtl: number
  answerTimeout: number
  bus: NotificationBus | undefined
  taskStore: TaskStore | undefined
  lease: number
  protectedResource: ProtectedResourceOptions | undefined
  elicitationDisable: boolean | ((client: Implementation | undefined) => boolean)
  scopes: ((request: FastifyRequest) => readonly string[] | undefined) | undefined
}

const DEFAULT_TTL = 300_000
const DEFAULT_MAX_ROUNDS = 16
const DEFAULT_PAGE_SIZE = 100
const DEFAULT_BODY_LIMIT = 1024 * 1024
export const DEFAULT_URI_LENGTH = 8192
export const DEFAULT_STREAM_BUFFER_BYTES = 1024 * 1024
const DEFAULT_STREAMS = 512
const DEFAULT_STREAMS_PER_CALLER = 16
const DEFAULT_SUBSCRIPTION_URIS = 256
const DEFAULT_BATCH_SIZE = 32
const DEFAULT_WAITING_CALLS = 10_000
const DEFAULT_WAITING_CALLS_PER_CALLER = 256
const DEFAULT_SHUTDOWN_GRACE = 10_000
const DEFAULT_SESSION_TTL = 86_400_000
const DEFAULT_ANSWER_TIMEOUT = 300_000
const DEFAULT_TASKS_PER_CALLER = 64
const DEFAULT_TASK_BYTES_PER_CALLER = 16 * 1024 * 1024
const DEFAULT_LEASE = 30_000
const DEFAULT_ONCE_BYTES = 4096

const TIMER_BOUND = 'about 24.8 days, the longest timer Node keeps: a longer one fires at once'
const MAX_TOKEN_LENGTH = 1024 * 1024
const TOKEN_BOUND = '1 MiB of characters: every retry carries its token, and a request body is at most 1 MiB by default (bodyLimit)'

const DEFAULT_HEARTBEAT = 15_000
const MIN_HEARTBEAT = 100

function heartbeatOf (value: unknown): number | undefined {
  if (value === undefined) return DEFAULT_HEARTBEAT
  if (value === false) return undefined
  if (!Number.isInteger(value) || (value as number) < MIN_HEARTBEAT || (value as number) > MAX_TIMER_MS) {
    throw new InvalidOptionError(`heartbeat must be false or an integer of ms from ${MIN_HEARTBEAT} (a shorter one writes ` +
      `more than it keeps) to ${MAX_TIMER_MS} (${TIMER_BOUND}), got ${describe(value)}`)
  }
  return value as number
}

function timerMs (value: unknown, name: string, fallback: number): number {
  return boundedInteger(value, name, fallback, MAX_TIMER_MS, TIMER_BOUND)
}

const KNOWN = new Set(['path', 'serverInfo', 'instructions', 'requestState', 'principal', 'allowedOrigins',
  'allowedHosts', 'pageSize', 'bodyLimit', 'cache', 'bus', 'protectedResource', 'limits', 'shutdownGrace', 'heartbeat', 'errors', 'legacy', 'tracing', 'session', 'tasks', 'elicitation', 'scopes', 'once'])
const KNOWN_REQUEST_STATE = new Set(['keys', 'ttl', 'maxRounds', 'maxTokenLength', 'tokenVersion', 'singleUse'])
const KNOWN_CACHE = new Set(['discover', 'lists', 'resources'])
const KNOWN_LIMITS = new Set(['uriLength', 'streamBufferBytes', 'streams', 'streamsPerCaller', 'subscriptionUris', 'batchSize', 'waitingCalls', 'waitingCallsPerCaller', 'tasksPerCaller', 'taskBytesPerCaller'])
const KNOWN_SERVER_INFO = new Set(['name', 'version', 'title'])
const KNOWN_SESSION = new Set(['ttl', 'answerTimeout'])
const KNOWN_TASKS = new Set(['store', 'lease'])
const KNOWN_ELICITATION = new Set(['disable'])
const KNOWN_ONCE = new Set(['maxBytes'])

/** A `TaskStore` given in `tasks.store`: an object with `create`, `get` and `update` functions. */
function taskStoreOf (value: unknown): TaskStore | undefined {
  if (value === undefined) return undefined
  const store = value as Record<string, unknown> | null
  if (typeof store !== 'object' || store === null || ['create', 'get', 'update'].some((name) => typeof store[name] !== 'function')) {
    throw new InvalidOptionError(`tasks.store must be a TaskStore (an object with create, get and update functions), got ${describe(value)}`)
  }
  return value as TaskStore
}

function serverInfoOf (value: unknown): ResolvedOptions['serverInfo'] {
  if (value === undefined) return { name: 'mocapi', version: MOCAPI_VERSION }
  const info = plainObject(value, 'serverInfo')
  knownFields(info, KNOWN_SERVER_INFO, 'serverInfo.')
  const name = nonEmptyString(info.name, 'serverInfo.name')
  const version = nonEmptyString(info.version, 'serverInfo.version')
  const title = optionalString(info.title, 'serverInfo.title')
  return title === undefined ? { name, version } : { name, version, title }
}

/** Fills in defaults; throws an `FST_MOCAPI_INVALID_OPTION` TypeError naming the bad value. */
export function resolveOptions (opts: unknown): ResolvedOptions {
  // Fastify hands a plugin `{}` when it is registered without options (or with null).
  const o = plainObject(opts, 'options')
  knownFields(o, KNOWN, '')

  const path = o.path ?? '/mcp'
  if (typeof path !== 'string' || !path.startsWith('/')) throw new InvalidOptionError(`path must be a string starting with '/', got ${describe(path)}`)

  const rs = plainObject(o.requestState ?? {}, 'requestState')
  knownFields(rs, KNOWN_REQUEST_STATE, 'requestState.')
  if (rs.keys !== undefined && (!Array.isArray(rs.keys) || rs.keys.length === 0)) {
    throw new InvalidOptionError(`requestState.keys must be a non-empty array of keys, got ${Array.isArray(rs.keys) ? 'an empty array' : describe(rs.keys)}: ` +
      `${MAKE_KEY}, or leave requestState.keys out for an ephemeral key (one process, lost on restart; mocapi warns)`)
  }
  if (rs.tokenVersion !== undefined && rs.tokenVersion !== 1 && rs.tokenVersion !== 2) {
    throw new InvalidOptionError(`requestState.tokenVersion must be 1 or 2, got ${describe(rs.tokenVersion)}`)
  }

  const cache = plainObject(o.cache ?? {}, 'cache')
  knownFields(cache, KNOWN_CACHE, 'cache.')
  const limits = plainObject(o.limits ?? {}, 'limits')
  knownFields(limits, KNOWN_LIMITS, 'limits.')
  const session = plainObject(o.session ?? {}, 'session')
  knownFields(session, KNOWN_SESSION, 'session.')
  const tasks = plainObject(o.tasks ?? {}, 'tasks')
  knownFields(tasks, KNOWN_TASKS, 'tasks.')
  const legacy = oneOf(o.legacy, ['serve', 'reject'], 'legacy', 'serve') === 'serve'
  const elicitation = plainObject(o.elicitation ?? {}, 'elicitation')
  knownFields(elicitation, KNOWN_ELICITATION, 'elicitation.')
  const disable = elicitation.disable ?? false
  if (typeof disable !== 'boolean' && typeof disable !== 'function') {
    throw new InvalidOptionError(`elicitation.disable must be true, false or a function of the client's info, got ${describe(disable)}`)
  }

  const once = plainObject(o.once ?? {}, 'once')
  knownFields(once, KNOWN_ONCE, 'once.')

  const bus = o.bus
  if (bus !== undefined && (!isPlainObject(bus) || typeof bus.publish !== 'function' || typeof bus.subscribe !== 'function')) {
    throw new InvalidOptionError(`bus must have publish() and subscribe() methods, got ${describe(bus)}`)
  }
  const singleUse = optionalBoolean(rs.singleUse, 'requestState.singleUse', false)
  if (singleUse && bus !== undefined && typeof (bus as { claim?: unknown }).claim !== 'function') {
    throw new InvalidOptionError('requestState.singleUse needs a bus with a claim(id, ttlMs) method to refuse a second retry fleet-wide; ' +
      'the bus given has none')
  }

  return {
    path,
    serverInfo: serverInfoOf(o.serverInfo),
    instructions: optionalString(o.instructions, 'instructions'),
    supportedVersions: legacy ? [PROTOCOL_VERSION, ...LEGACY_VERSIONS] : [PROTOCOL_VERSION],
    keys: rs.keys as string[] | undefined,
    ttl: positiveInteger(rs.ttl, 'requestState.ttl', DEFAULT_TTL),
    maxRounds: positiveInteger(rs.maxRounds, 'requestState.maxRounds', DEFAULT_MAX_ROUNDS),
    tokenVersion: (rs.tokenVersion ?? 2) as TokenVersion,
    singleUse,
    onceBytes: positiveInteger(once.maxBytes, 'once.maxBytes', DEFAULT_ONCE_BYTES),
    maxTokenLength: boundedInteger(rs.maxTokenLength, 'requestState.maxTokenLength', DEFAULT_MAX_TOKEN_LENGTH, MAX_TOKEN_LENGTH, TOKEN_BOUND),
    principal: optionalFunction(o.principal, 'principal'),
    allowedOrigins: stringList(o.allowedOrigins, 'allowedOrigins'),
    allowedHosts: new Set((stringList(o.allowedHosts, 'allowedHosts') ?? []).map((h) => h.toLowerCase())),
    pageSize: positiveInteger(o.pageSize, 'pageSize', DEFAULT_PAGE_SIZE),
    bodyLimit: positiveInteger(o.bodyLimit, 'bodyLimit', DEFAULT_BODY_LIMIT),
    cache: {
      discover: cacheHint(cache.discover, 'cache.discover', { ttlMs: 3_600_000, cacheScope: 'public' }),
      lists: cacheHint(cache.lists, 'cache.lists', { ttlMs: 300_000, cacheScope: 'public' }),
      resources: cacheHint(cache.resources, 'cache.resources', { ttlMs: 60_000, cacheScope: 'public' }),
    },
    limits: {
      uriLength: positiveInteger(limits.uriLength, 'limits.uriLength', DEFAULT_URI_LENGTH),
      streamBufferBytes: positiveInteger(limits.streamBufferBytes, 'limits.streamBufferBytes', DEFAULT_STREAM_BUFFER_BYTES),
      streams: positiveInteger(limits.streams, 'limits.streams', DEFAULT_STREAMS),
      streamsPerCaller: positiveInteger(limits.streamsPerCaller, 'limits.streamsPerCaller', DEFAULT_STREAMS_PER_CALLER),
      subscriptionUris: positiveInteger(limits.subscriptionUris, 'limits.subscriptionUris', DEFAULT_SUBSCRIPTION_URIS),
      batchSize: positiveInteger(limits.batchSize, 'limits.batchSize', DEFAULT_BATCH_SIZE),
      waitingCalls: positiveInteger(limits.waitingCalls, 'limits.waitingCalls', DEFAULT_WAITING_CALLS),
      waitingCallsPerCaller: positiveInteger(limits.waitingCallsPerCaller, 'limits.waitingCallsPerCaller', DEFAULT_WAITING_CALLS_PER_CALLER),
      tasksPerCaller: positiveInteger(limits.tasksPerCaller, 'limits.tasksPerCaller', DEFAULT_TASKS_PER_CALLER),
      taskBytesPerCaller: positiveInteger(limits.taskBytesPerCaller, 'limits.taskBytesPerCaller', DEFAULT_TASK_BYTES_PER_CALLER),
    },
    shutdownGrace: timerMs(o.shutdownGrace, 'shutdownGrace', DEFAULT_SHUTDOWN_GRACE),
    heartbeat: heartbeatOf(o.heartbeat),
    exposeErrors: oneOf(o.errors, ['expose', 'generic'], 'errors', 'expose') === 'expose',
    legacy,
    tracing: optionalBoolean(o.tracing, 'tracing', true),
    sessionTtl: timerMs(session.ttl, 'session.ttl', DEFAULT_SESSION_TTL),
    answerTimeout: timerMs(session.answerTimeout, 'session.answerTimeout', DEFAULT_ANSWER_TIMEOUT),
    bus: bus as NotificationBus | undefined,
    taskStore: taskStoreOf(tasks.store),
    lease: timerMs(tasks.lease, 'tasks.lease', DEFAULT_LEASE),
    protectedResource: resolveProtectedResource(o.protectedResource),
    elicitationDisable: disable as boolean | ((client: Implementation | undefined) => boolean),
    scopes: optionalFunction(o.scopes, 'scopes'),
  }
}
