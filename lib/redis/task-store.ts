import { Commands, redisConnection, type RedisCommandConnection } from './connection.js'
import { noop, nonEmptyString, optionalFunction, positiveInteger } from '../check.js'
import { jsonObject } from '../protocol/wire.js'
import type { StoredTask, TaskQuota, TaskStatus, TaskStore, TaskWrite } from '../tasks/store.js'

/** The part of a node-redis (v5 or v6) client that the task store uses. */
export type RedisTaskConnection = RedisCommandConnection

/** Options of {@link RedisTaskStore}. */
export interface RedisTaskStoreOptions {
  /** `redis[s]://…` URL of the server; node-redis's default (localhost:6379) when neither this nor `client` is given. */
  url?: string | undefined
  /** A redis client whose settings the store copies into a connection of its own (`duplicate()`); never closed. */
  client?: { duplicate (overrides?: { disableOfflineQueue?: boolean }): RedisTaskConnection } | undefined
  /** What every key of the store starts with. Default `'mocapi:task:'`. */
  prefix?: string | undefined
  /** Told of connection errors (node-redis keeps reconnecting, each attempt an error). Default: ignored. */
  onError?: ((error: unknown) => void) | undefined
  /** The most tasks the store holds, over every node; a create past it is refused. Default 100 000. */
  maxTasks?: number | undefined
  /**
   * The most characters of sealed task state the store holds, over every node; a create or growing update past it is
   * refused. Default 1 GiB. Redis needs `maxmemory` above about 1.3 times this (docs/deploy.md#task-store-memory).
   */
  maxBytes?: number | undefined
}

// A task is a hash: `v` its version (what update compares), `d` the stored task as JSON, `s` its sealed state's length.
// Each owner has a sorted set of its task ids scored by their expiry, which a create trims to count what the owner
// holds; `sizes` (id to length), `all` (ids by expiry) and `bytes` (their sum) bound the whole store. A task key is
// its id, 22 base64url characters, so no id names one of these.
const HELPERS = `
local function trim (now)
  local expired = redis.call('ZRANGEBYSCORE', KEYS[4], '-inf', now, 'LIMIT', 0, 1024)
  if #expired == 0 then return end
  local freed = 0
  for _, size in ipairs(redis.call('HMGET', KEYS[3], unpack(expired))) do
    if size then freed = freed + tonumber(size) end
  end
  redis.call('HDEL', KEYS[3], unpack(expired))
  redis.call('ZREM', KEYS[4], unpack(expired))
  redis.call('DECRBY', KEYS[5], freed)
end
local function ownerBytes (now)
  redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now)
  local ids = redis.call('ZRANGE', KEYS[2], 0, -1)
  local total = 0
  if #ids == 0 then return 0 end
  for _, size in ipairs(redis.call('HMGET', KEYS[3], unpack(ids))) do
    if size then total = total + tonumber(size) end
  end
  return total
end
local function stored () return tonumber(redis.call('GET', KEYS[5]) or '0') end`

// ARGV: version, json, expiresAt, now, size, quota tasks, quota bytes, max tasks, max bytes, id.
const CREATE = `${HELPERS}
if redis.call('EXISTS', KEYS[1]) == 1 then return -1 end
local size = tonumber(ARGV[5])
trim(ARGV[4])
if redis.call('ZCARD', KEYS[4]) >= tonumber(ARGV[8]) or stored() + size > tonumber(ARGV[9]) then return 0 end
local owned = ownerBytes(ARGV[4])
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[6]) or owned + size > tonumber(ARGV[7]) then return 0 end
redis.call('HSET', KEYS[1], 'v', ARGV[1], 'd', ARGV[2], 's', ARGV[5])
redis.call('PEXPIREAT', KEYS[1], ARGV[3])
redis.call('ZADD', KEYS[2], ARGV[3], ARGV[10])
local last = redis.call('ZRANGE', KEYS[2], -1, -1, 'WITHSCORES')
redis.call('PEXPIREAT', KEYS[2], last[2])
redis.call('HSET', KEYS[3], ARGV[10], ARGV[5])
redis.call('ZADD', KEYS[4], ARGV[3], ARGV[10])
redis.call('INCRBY', KEYS[5], size)
return 1`

// ARGV: version before, version, json, expiresAt, now, size, quota bytes (or empty), max bytes, id.
const UPDATE = `${HELPERS}
if redis.call('HGET', KEYS[1], 'v') ~= ARGV[1] then return 0 end
local size = tonumber(ARGV[6])
local growth = size - tonumber(redis.call('HGET', KEYS[1], 's') or '0')
if ARGV[7] ~= '' and growth > 0 then
  trim(ARGV[5])
  if ownerBytes(ARGV[5]) + growth > tonumber(ARGV[7]) or stored() + growth > tonumber(ARGV[8]) then return 2 end
end
redis.call('HSET', KEYS[1], 'v', ARGV[2], 'd', ARGV[3], 's', ARGV[6])
redis.call('HSET', KEYS[3], ARGV[9], ARGV[6])
redis.call('ZADD', KEYS[4], ARGV[4], ARGV[9])
redis.call('INCRBY', KEYS[5], growth)
return 1`

const STATUSES: ReadonlySet<unknown> = new Set<TaskStatus>(['working', 'input_required', 'completed', 'failed', 'cancelled'])

function parseTask (json: string): StoredTask | undefined {
  const value = jsonObject(json)
  if (value === undefined) return undefined
  const { id, version, status, createdAt, updatedAt, expiresAt, leaseUntil, owner, sealed } = value
  if (typeof id !== 'string' || typeof owner !== 'string' || typeof sealed !== 'string' || !STATUSES.has(status)) return undefined
  if (![version, createdAt, updatedAt, expiresAt].every(Number.isSafeInteger)) return undefined
  if (leaseUntil !== undefined && !Number.isSafeInteger(leaseUntil)) return undefined
  return value as unknown as StoredTask
}

/**
 * A {@link TaskStore} on Redis, shared by every node of a deployment: one hash per task, which Redis expires at
 * the task's own deadline; a create and a compare-and-set update are each one script, so they are atomic. Its
 * connection opens on first use; while Redis is unreachable, commands fail at once rather than wait in memory, and
 * task calls are answered with an error saying so. One Redis server (or a primary with replicas) serves it.
 *
 * ```ts
 * import { RedisTaskStore } from 'mocapi/redis'
 * await app.register(mocapi, { tasks: { store: new RedisTaskStore({ url: process.env.REDIS_URL }) } })
 * ```
 */
export class RedisTaskStore implements TaskStore {
  readonly #commands: Commands
  readonly #prefix: string
  readonly #maxTasks: number
  readonly #maxBytes: number

  /** Throws an `FST_MOCAPI_INVALID_OPTION` TypeError naming a bad option's value, as the plugin does. */
  constructor (options: RedisTaskStoreOptions = {}) {
    const connection = redisConnection<RedisTaskConnection>(options, 'RedisTaskStore')
    this.#prefix = options.prefix === undefined ? 'mocapi:task:' : nonEmptyString(options.prefix, 'RedisTaskStore prefix')
    const onError = optionalFunction<(error: unknown) => void>(options.onError, 'RedisTaskStore onError') ?? noop
    this.#maxTasks = positiveInteger(options.maxTasks, 'RedisTaskStore maxTasks', 100_000)
    this.#maxBytes = positiveInteger(options.maxBytes, 'RedisTaskStore maxBytes', 1024 ** 3)
    this.#commands = new Commands(connection, 'task store', onError)
  }

  async create (task: StoredTask, quota: TaskQuota): Promise<TaskWrite> {
    const created = await this.#command(['EVAL', CREATE, '5', ...this.#keys(task), String(task.version), JSON.stringify(task),
      String(task.expiresAt), String(Date.now()), String(task.sealed.length), String(quota.tasks), String(quota.bytes),
      String(this.#maxTasks), String(this.#maxBytes), task.id])
    if (created === -1) throw new Error(`mocapi: a task ${task.id} exists already`)
    return created === 1 ? 'written' : 'full'
  }

  async get (id: string): Promise<StoredTask | undefined> {
    const json = await this.#command(['HGET', this.#prefix + id, 'd'])
    return typeof json === 'string' ? parseTask(json) : undefined
  }

  async update (task: StoredTask, quota?: TaskQuota): Promise<TaskWrite> {
    const updated = await this.#command(['EVAL', UPDATE, '5', ...this.#keys(task), String(task.version - 1),
      String(task.version), JSON.stringify(task), String(task.expiresAt), String(Date.now()),
      String(task.sealed.length), quota === undefined ? '' : String(quota.bytes), String(this.#maxBytes), task.id])
    return updated === 1 ? 'written' : updated === 2 ? 'full' : 'stale'
  }

  #keys (task: StoredTask): string[] {
    const prefix = this.#prefix
    return [prefix + task.id, `${prefix}owner:${task.owner}`, `${prefix}sizes`, `${prefix}all`, `${prefix}bytes`]
  }

  async close (): Promise<void> {
    await this.#commands.close()
  }

  #command (args: string[]): Promise<unknown> {
    return this.#commands.send(args)
  }
}
