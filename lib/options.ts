import type { FastifyRequest } from 'fastify'
import type { NotificationBus } from './features/subscriptions.js'
import { DEFAULT_MAX_TOKEN_LENGTH } from './mrtr/codec.js'
import { resolveProtectedResource, type ProtectedResourceOptions } from './transport/oauth.js'

/** `ttlMs` and `cacheScope` stamped on a cacheable result. */
export interface CacheHint {
  /** How long a client may reuse the result, in ms. */
  ttlMs?: number
  /** `public` when every caller sees the same result, `private` when it varies by the caller's authorization. */
  cacheScope?: 'public' | 'private'
}

/** Options of the mocapi plugin. Every field is optional. */
export interface MocapiOptions {
  /** The MCP endpoint. Default `'/mcp'`. */
  path?: string
  /** Name and version reported in `_meta["io.modelcontextprotocol/serverInfo"]` of every result. Default `{ name: 'mocapi', version }`. */
  serverInfo?: { name: string, version: string, title?: string }
  /** Free text for clients, returned by `server/discover`. */
  instructions?: string
  requestState?: {
    /**
     * 32-byte keys, base64 or base64url. The first encrypts, all decrypt. When absent, the
     * `MOCAPI_REQUEST_STATE_KEYS` environment variable (comma-separated) is read; when that is
     * unset too, an ephemeral key is made and one warning is logged.
     */
    keys?: string[]
    /** How long a requestState token stays valid, in ms. Default 300 000 (5 minutes). */
    ttl?: number
    /** Most input-required rounds one call may take before it is refused. Default 16. */
    maxRounds?: number
    /** Longest token accepted, in characters; longer ones are refused before decryption. Default 65 536. */
    maxTokenLength?: number
  }
  /** The caller's identity, bound into every requestState. Default: `request.user` when a string, else `request.user.sub`, else `null`. */
  principal?: (request: FastifyRequest) => string | null
  /** Browser origins allowed to call the endpoint (exact `scheme://host[:port]`, or `'*'`). Default: localhost origins only. */
  allowedOrigins?: string[]
  /** Extra `Host` names accepted when the server listens on a loopback address (DNS rebinding protection). */
  allowedHosts?: string[]
  /** Items per page of `tools/list` and the other lists. Default 100. */
  pageSize?: number
  /** Largest request body, in bytes. Default 1 MiB. */
  bodyLimit?: number
  /**
   * RFC 9728 protected-resource metadata, served at `/.well-known/oauth-protected-resource` (and its
   * path-suffixed form); 401 replies from the app's auth then carry `WWW-Authenticate` with `resource_metadata`.
   */
  protectedResource?: ProtectedResourceOptions
  /** Carries list-change and resource-update events between nodes. Default: in-process only. */
  bus?: NotificationBus
  /** Caching hints of `server/discover` (default 1 hour, public) and of the lists (default 5 minutes, public). */
  cache?: {
    discover?: CacheHint
    lists?: CacheHint
    resources?: CacheHint
  }
}

export interface ResolvedOptions {
  path: string
  serverInfo: { name: string, version: string, title?: string }
  instructions: string | undefined
  keys: string[] | undefined
  ttl: number
  maxRounds: number
  maxTokenLength: number
  principal: (request: FastifyRequest) => string | null
  allowedOrigins: string[] | undefined
  allowedHosts: Set<string>
  pageSize: number
  bodyLimit: number
  cache: { discover: Required<CacheHint>, lists: Required<CacheHint>, resources: Required<CacheHint> }
  bus: NotificationBus | undefined
  protectedResource: ProtectedResourceOptions | undefined
}

export const DEFAULT_TTL = 300_000
export const DEFAULT_MAX_ROUNDS = 16
export const DEFAULT_PAGE_SIZE = 100
export const DEFAULT_BODY_LIMIT = 1024 * 1024
export const MOCAPI_VERSION = '0.1.0'

const KNOWN = new Set(['path', 'serverInfo', 'instructions', 'requestState', 'principal', 'allowedOrigins',
  'allowedHosts', 'pageSize', 'bodyLimit', 'cache', 'bus', 'protectedResource'])
const KNOWN_REQUEST_STATE = new Set(['keys', 'ttl', 'maxRounds', 'maxTokenLength'])
const KNOWN_CACHE = new Set(['discover', 'lists', 'resources'])

function fail (message: string): never {
  throw new TypeError(`mocapi: ${message}`)
}

function describe (value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value)
  if (value === null || typeof value !== 'object') return String(value)
  return Array.isArray(value) ? 'an array' : 'an object'
}

function isPlainObject (value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

function checkKnown (value: Record<string, unknown>, known: Set<string>, where: string): void {
  for (const key of Object.keys(value)) {
    if (!known.has(key)) fail(`unknown option ${where}${key}`)
  }
}

function positiveInteger (value: unknown, name: string, fallback: number): number {
  if (value === undefined) return fallback
  if (!Number.isSafeInteger(value) || (value as number) <= 0) fail(`${name} must be a positive integer, got ${describe(value)}`)
  return value as number
}

function stringList (value: unknown, name: string): string[] | undefined {
  if (value === undefined) return undefined
  if (!Array.isArray(value)) fail(`${name} must be an array of strings, got ${describe(value)}`)
  value.forEach((item, i) => {
    if (typeof item !== 'string' || item === '') fail(`${name}[${i}] must be a non-empty string, got ${describe(item)}`)
  })
  return value
}

function cacheHint (value: unknown, name: string, fallback: Required<CacheHint>): Required<CacheHint> {
  if (value === undefined) return fallback
  if (!isPlainObject(value)) fail(`${name} must be an object, got ${describe(value)}`)
  checkKnown(value, new Set(['ttlMs', 'cacheScope']), `${name}.`)
  const ttlMs = value.ttlMs ?? fallback.ttlMs
  if (!Number.isSafeInteger(ttlMs) || (ttlMs as number) < 0) fail(`${name}.ttlMs must be a non-negative integer, got ${describe(ttlMs)}`)
  const cacheScope = value.cacheScope ?? fallback.cacheScope
  if (cacheScope !== 'public' && cacheScope !== 'private') fail(`${name}.cacheScope must be 'public' or 'private', got ${describe(cacheScope)}`)
  return { ttlMs: ttlMs as number, cacheScope }
}

/** The default principal: `request.user` when it is a string, else its `sub`, else `null`. */
export function defaultPrincipal (request: FastifyRequest): string | null {
  const user = (request as FastifyRequest & { user?: unknown }).user
  if (typeof user === 'string') return user
  if (isPlainObject(user) && typeof user.sub === 'string') return user.sub
  return null
}

/** Validates the plugin options and fills in defaults. Throws a TypeError that names the bad value. */
export function resolveOptions (opts: unknown): ResolvedOptions {
  // Fastify hands a plugin `{}` when it is registered without options (or with null).
  if (!isPlainObject(opts)) fail(`options must be an object, got ${describe(opts)}`)
  checkKnown(opts, KNOWN, '')

  const path = opts.path ?? '/mcp'
  if (typeof path !== 'string' || !path.startsWith('/')) fail(`path must be a string starting with '/', got ${describe(path)}`)

  let serverInfo: ResolvedOptions['serverInfo'] = { name: 'mocapi', version: MOCAPI_VERSION }
  if (opts.serverInfo !== undefined) {
    const info = opts.serverInfo
    if (!isPlainObject(info)) fail(`serverInfo must be an object, got ${describe(info)}`)
    if (typeof info.name !== 'string' || info.name === '') fail(`serverInfo.name must be a non-empty string, got ${describe(info.name)}`)
    if (typeof info.version !== 'string' || info.version === '') fail(`serverInfo.version must be a non-empty string, got ${describe(info.version)}`)
    if (info.title !== undefined && typeof info.title !== 'string') fail(`serverInfo.title must be a string, got ${describe(info.title)}`)
    serverInfo = info.title === undefined
      ? { name: info.name, version: info.version }
      : { name: info.name, version: info.version, title: info.title }
  }

  if (opts.instructions !== undefined && typeof opts.instructions !== 'string') {
    fail(`instructions must be a string, got ${describe(opts.instructions)}`)
  }

  const rs = opts.requestState ?? {}
  if (!isPlainObject(rs)) fail(`requestState must be an object, got ${describe(rs)}`)
  checkKnown(rs, KNOWN_REQUEST_STATE, 'requestState.')
  if (rs.keys !== undefined && (!Array.isArray(rs.keys) || rs.keys.length === 0)) {
    fail(`requestState.keys must be a non-empty array of keys, got ${Array.isArray(rs.keys) ? 'an empty array' : describe(rs.keys)}`)
  }

  const principal = opts.principal ?? defaultPrincipal
  if (typeof principal !== 'function') fail(`principal must be a function, got ${describe(principal)}`)

  const cache = opts.cache ?? {}
  if (!isPlainObject(cache)) fail(`cache must be an object, got ${describe(cache)}`)
  checkKnown(cache, KNOWN_CACHE, 'cache.')

  const bus = opts.bus
  if (bus !== undefined && (!isPlainObject(bus) || typeof bus.publish !== 'function' || typeof bus.subscribe !== 'function')) {
    fail(`bus must have publish() and subscribe() methods, got ${describe(bus)}`)
  }

  return {
    path,
    serverInfo,
    instructions: opts.instructions as string | undefined,
    keys: rs.keys as string[] | undefined,
    ttl: positiveInteger(rs.ttl, 'requestState.ttl', DEFAULT_TTL),
    maxRounds: positiveInteger(rs.maxRounds, 'requestState.maxRounds', DEFAULT_MAX_ROUNDS),
    maxTokenLength: positiveInteger(rs.maxTokenLength, 'requestState.maxTokenLength', DEFAULT_MAX_TOKEN_LENGTH),
    principal: principal as ResolvedOptions['principal'],
    allowedOrigins: stringList(opts.allowedOrigins, 'allowedOrigins'),
    allowedHosts: new Set((stringList(opts.allowedHosts, 'allowedHosts') ?? []).map((h) => h.toLowerCase())),
    pageSize: positiveInteger(opts.pageSize, 'pageSize', DEFAULT_PAGE_SIZE),
    bodyLimit: positiveInteger(opts.bodyLimit, 'bodyLimit', DEFAULT_BODY_LIMIT),
    cache: {
      discover: cacheHint(cache.discover, 'cache.discover', { ttlMs: 3_600_000, cacheScope: 'public' }),
      lists: cacheHint(cache.lists, 'cache.lists', { ttlMs: 300_000, cacheScope: 'public' }),
      resources: cacheHint(cache.resources, 'cache.resources', { ttlMs: 60_000, cacheScope: 'public' }),
    },
    bus: bus as NotificationBus | undefined,
    protectedResource: resolveProtectedResource(opts.protectedResource),
  }
}
