import { noop, nonEmptyString, optionalFunction, positiveInteger } from '../check.js'
import type { DeliveryJob, EventLog, LogRead, Position, StoredOccurrence, StoredSubscription } from '../events/log.js'
import { Commands, redisConnection, type RedisCommandConnection } from './connection.js'

/** Options of {@link RedisEventLog}. */
export interface RedisEventLogOptions {
  /** `redis[s]://…` URL of the server; node-redis's default (localhost:6379) when neither this nor `client` is given. */
  url?: string | undefined
  /** A redis client whose settings the log copies into a connection of its own (`duplicate()`); never closed. */
  client?: { duplicate (overrides?: { disableOfflineQueue?: boolean }): RedisCommandConnection } | undefined
  /** The hash tag every key of the log carries, `{<prefix>}`. Default `'mocapi:events'`. */
  prefix?: string | undefined
  /** ms an occurrence is kept. Default 86 400 000 (a day). */
  maxAge?: number | undefined
  /** Bytes of payload JSON (UTF-8) kept across all types; the oldest go first. Default 64 Mi. */
  maxBytes?: number | undefined
  /** Told of connection errors (node-redis keeps reconnecting, each attempt an error). Default: ignored. */
  onError?: ((error: unknown) => void) | undefined
}

const DEFAULT_MAX_AGE = 86_400_000
const DEFAULT_MAX_BYTES = 64 * 1024 * 1024
/** Entries one append or read drops at most (by age and bytes together): a script never runs long. */
const DROPS_PER_CALL = 100

// Keys, all under the tag P = `{<prefix>}`: P:s:<type> a stream of occurrences (fields e, t, d), P:i:<type> eventId →
// position, P:h:<type> head and floor, P:bytes and P:types (type → ms of its oldest entry) for the bytes bound;
// P:sub id → record, P:sx, P:st:<type> and P:so:<owner> its ids scored by expiry; P:due (score dueAt), P:body,
// P:tries, P:f:<job> finished markers, P:k:<key> marks. Scripts name their first key for a cluster's routing and
// reach the others through the shared tag, which keeps them in the same slot.

// ARGV[1] is P in every script that drops occurrences.
const DROP = `local P = ARGV[1]
local function drop (name, entries)
  local ids, freed = P .. ':i:' .. name, 0
  for _, entry in ipairs(entries) do
    local f = entry[2]
    if redis.call('HGET', ids, f[2]) == entry[1] then redis.call('HDEL', ids, f[2]) end
    freed = freed + string.len(f[6])
  end
  local last = entries[#entries][1]
  local ms, seq = string.match(last, '^(%d+)-(%d+)$')
  local stream = P .. ':s:' .. name
  redis.call('XTRIM', stream, 'MINID', ms .. '-' .. string.format('%.0f', tonumber(seq) + 1))
  redis.call('HSET', P .. ':h:' .. name, 'floor', last)
  redis.call('DECRBY', P .. ':bytes', freed)
  local first = redis.call('XRANGE', stream, '-', '+', 'COUNT', 1)[1]
  if first then redis.call('ZADD', P .. ':types', string.match(first[1], '^%d+'), name)
  else redis.call('ZREM', P .. ':types', name) end
  return #entries
end
`

// ARGV: P, type, now, cutoff (now - maxAge, or 0), maxBytes, eventId, timestamp, data. Returns {position, stored}.
const APPEND = `${DROP}
local name, now, cutoff, maxBytes = ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), tonumber(ARGV[5])
local stream, ids, meta = P .. ':s:' .. name, P .. ':i:' .. name, P .. ':h:' .. name
local budget = ${DROPS_PER_CALL}
if cutoff > 0 then
  local old = redis.call('XRANGE', stream, '-', '(' .. ARGV[4] .. '-0', 'COUNT', budget)
  if #old > 0 then budget = budget - drop(name, old) end
end
local known = redis.call('HGET', ids, ARGV[6])
if known and tonumber(string.match(known, '^%d+')) >= cutoff then return {known, 0} end
local head = redis.call('HGET', meta, 'head')
local ms = now
if head then ms = math.max(ms, tonumber(string.match(head, '^%d+'))) end
ms = string.format('%.0f', ms)
local position = redis.call('XADD', stream, ms .. '-*', 'e', ARGV[6], 't', ARGV[7], 'd', ARGV[8])
redis.call('HSET', ids, ARGV[6], position)
redis.call('HSET', meta, 'head', position)
if not redis.call('HGET', meta, 'floor') then redis.call('HSET', meta, 'floor', '0-0') end
redis.call('ZADD', P .. ':types', 'NX', ms, name)
local bytes = redis.call('INCRBY', P .. ':bytes', string.len(ARGV[8]))
while bytes > maxBytes and budget > 0 do
  local oldest = redis.call('ZRANGE', P .. ':types', 0, 0)[1]
  if not oldest then redis.call('SET', P .. ':bytes', 0) break end
  budget = budget - drop(oldest, redis.call('XRANGE', P .. ':s:' .. oldest, '-', '+', 'COUNT', 1))
  bytes = tonumber(redis.call('GET', P .. ':bytes'))
end
if redis.call('ZCOUNT', P .. ':st:' .. name, '(' .. ARGV[3], '+inf') > 0 then
  local job = 'fanout|' .. name .. '|' .. position
  redis.call('ZADD', P .. ':due', ARGV[3], job)
  redis.call('HSET', P .. ':body', job, '')
  redis.call('HSET', P .. ':tries', job, 0)
end
return {position, 1}`

// KEYS: the stream, its head and floor. ARGV: cutoff, after, limit. Entries older than the cutoff that no append has
// dropped yet are skipped, the last of them reported as the floor.
const READ = `local meta = redis.call('HMGET', KEYS[2], 'head', 'floor')
if not meta[1] then return {'0-0', '0-0', {}} end
local floor, start, cutoff = meta[2], '(' .. ARGV[2], tonumber(ARGV[1])
if cutoff > 0 then
  local hidden = redis.call('XREVRANGE', KEYS[1], '(' .. ARGV[1] .. '-0', '-', 'COUNT', 1)[1]
  if hidden then floor = hidden[1] end
  if tonumber(string.match(ARGV[2], '^%d+')) < cutoff then start = ARGV[1] .. '-0' end
end
return {meta[1], floor, redis.call('XRANGE', KEYS[1], start, '+', 'COUNT', ARGV[3])}`

// ARGV[1] is P and ARGV[2] now: drops up to 100 expired subscriptions, wherever they are indexed.
const SWEEP = `local P, now = ARGV[1], ARGV[2]
local function unindex (id)
  local record = redis.call('HGET', P .. ':sub', id)
  if record then
    local s = cjson.decode(record)
    redis.call('ZREM', P .. ':st:' .. s.name, id)
    redis.call('ZREM', P .. ':so:' .. s.owner, id)
    redis.call('HDEL', P .. ':sub', id)
  end
  redis.call('ZREM', P .. ':sx', id)
  return record
end
for _, id in ipairs(redis.call('ZRANGEBYSCORE', P .. ':sx', '-inf', now, 'LIMIT', 0, 100)) do unindex(id) end
`

// ARGV: P, now, id, name, owner, record, expiresAt, maxPerOwner. Returns 1 stored, 0 full.
const PUT_SUBSCRIPTION = `${SWEEP}
local held = redis.call('ZCOUNT', P .. ':so:' .. ARGV[5], '(' .. now, '+inf')
local mine = redis.call('ZSCORE', P .. ':so:' .. ARGV[5], ARGV[3])
if mine and tonumber(mine) > tonumber(now) then held = held - 1 end
if held >= tonumber(ARGV[8]) then return 0 end
unindex(ARGV[3])
redis.call('HSET', P .. ':sub', ARGV[3], ARGV[6])
redis.call('ZADD', P .. ':sx', ARGV[7], ARGV[3])
redis.call('ZADD', P .. ':st:' .. ARGV[4], ARGV[7], ARGV[3])
redis.call('ZADD', P .. ':so:' .. ARGV[5], ARGV[7], ARGV[3])
return 1`

// ARGV: P, now, id. Returns 1 when a live subscription was removed.
const DELETE_SUBSCRIPTION = `${SWEEP}
local record = unindex(ARGV[3])
if record and cjson.decode(record).expiresAt > tonumber(now) then return 1 end
return 0`

// ARGV: P, now, type. The live records of the type.
const SUBSCRIPTIONS = `${SWEEP}
local records = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', P .. ':st:' .. ARGV[3], '(' .. now, '+inf')) do
  table.insert(records, redis.call('HGET', P .. ':sub', id))
end
return records`

// ARGV: P, dueAt, then id and body of each job.
const ENQUEUE = `local P = ARGV[1]
for i = 3, #ARGV, 2 do
  local id = ARGV[i]
  if not redis.call('ZSCORE', P .. ':due', id) and redis.call('EXISTS', P .. ':f:' .. id) == 0 then
    redis.call('ZADD', P .. ':due', ARGV[2], id)
    redis.call('HSET', P .. ':body', id, ARGV[i + 1])
    redis.call('HSET', P .. ':tries', id, 0)
  end
end
return 0`

// ARGV: P, now, max, leaseMs. Returns id, body, attempt of each job claimed.
const CLAIM = `local P, now = ARGV[1], tonumber(ARGV[2])
local claimed = {}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', P .. ':due', '-inf', now, 'LIMIT', 0, ARGV[3])) do
  redis.call('ZADD', P .. ':due', now + tonumber(ARGV[4]), id)
  local attempt = redis.call('HINCRBY', P .. ':tries', id, 1) - 1
  table.insert(claimed, id)
  table.insert(claimed, redis.call('HGET', P .. ':body', id) or '')
  table.insert(claimed, attempt)
end
return claimed`

// ARGV: P, id, keepMs.
const FINISH = `local P = ARGV[1]
redis.call('ZREM', P .. ':due', ARGV[2])
redis.call('HDEL', P .. ':body', ARGV[2])
redis.call('HDEL', P .. ':tries', ARGV[2])
redis.call('SET', P .. ':f:' .. ARGV[2], 1, 'PX', ARGV[3])
return 0`

// Inside a script the score is a string, whichever protocol (RESP2 or RESP3) the connection speaks.
const NEXT_DUE = "return redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')[2]"

type RawEntry = [string, string[]]

/**
 * An {@link EventLog} on Redis, shared by every node. Each type's occurrences are a Redis Stream: its entry ids are the
 * `<ms>-<seq>` positions the log hands out, `XRANGE` reads after one, and `MINID` trims by age. Each method is one
 * command or one script, so it is atomic. Times are the calling node's `Date.now()` (as for `MemoryEventLog`): a
 * position's ms, expiries and due times; a position never goes back when a node's clock does.
 *
 * Every key of a log carries the hash tag `{<prefix>}`, so a Redis Cluster serves the whole log from one slot, on one
 * shard; logs under several prefixes spread the load. `maxBytes` counts the payloads of all types; one append drops at
 * most 100 occurrences (by age and bytes together): the rest go on later appends, and reads skip what is past `maxAge`.
 *
 * ```ts
 * import { RedisEventLog } from 'mocapi/redis'
 * const log = new RedisEventLog({ url: process.env.REDIS_URL, maxAge: 86_400_000 })
 * ```
 */
export class RedisEventLog implements EventLog {
  readonly #commands: Commands
  readonly #tag: string
  readonly #maxAge: number
  readonly #maxBytes: number

  /** Throws an `FST_MOCAPI_INVALID_OPTION` TypeError naming a bad option's value, as the plugin does. */
  constructor (options: RedisEventLogOptions = {}) {
    const connection = redisConnection<RedisCommandConnection>(options, 'RedisEventLog')
    const prefix = options.prefix === undefined ? 'mocapi:events' : nonEmptyString(options.prefix, 'RedisEventLog prefix')
    this.#tag = `{${prefix}}`
    this.#maxAge = positiveInteger(options.maxAge, 'RedisEventLog maxAge', DEFAULT_MAX_AGE)
    this.#maxBytes = positiveInteger(options.maxBytes, 'RedisEventLog maxBytes', DEFAULT_MAX_BYTES)
    const onError = optionalFunction<(error: unknown) => void>(options.onError, 'RedisEventLog onError') ?? noop
    this.#commands = new Commands(connection, 'event log', onError)
  }

  async append (name: string, occurrence: Omit<StoredOccurrence, 'position'>): Promise<{ position: Position, stored: boolean }> {
    const now = Date.now()
    const [position, stored] = await this.#script(APPEND, `:s:${name}`, [name, String(now), this.#cutoff(now),
      String(this.#maxBytes), occurrence.eventId, String(occurrence.timestamp), occurrence.data]) as [string, number]
    return { position, stored: stored === 1 }
  }

  async read (name: string, after: Position, limit: number): Promise<LogRead> {
    const stream = `${this.#tag}:s:${name}`
    const [head, floor, entries] = await this.#commands.send(['EVAL', READ, '2', stream, `${this.#tag}:h:${name}`,
      this.#cutoff(Date.now()), after, String(limit)]) as [string, string, RawEntry[]]
    const occurrences = entries.map(([position, fields]) => ({
      position, eventId: fields[1], timestamp: Number(fields[3]), data: fields[5],
    }))
    return { occurrences, head, floor }
  }

  async putSubscription (subscription: StoredSubscription, maxPerOwner: number): Promise<'stored' | 'full'> {
    const { id, name, owner, sealed, expiresAt } = subscription
    const record = JSON.stringify({ id, name, owner, sealed, expiresAt })
    const stored = await this.#script(PUT_SUBSCRIPTION, ':sub', [String(Date.now()), id, name, owner, record,
      String(expiresAt), String(maxPerOwner)])
    return stored === 1 ? 'stored' : 'full'
  }

  async subscription (id: string): Promise<StoredSubscription | undefined> {
    const record = await this.#commands.send(['HGET', `${this.#tag}:sub`, id]) as string | null
    const found = record === null ? undefined : JSON.parse(record) as StoredSubscription
    return found !== undefined && found.expiresAt > Date.now() ? found : undefined
  }

  async deleteSubscription (id: string): Promise<boolean> {
    return await this.#script(DELETE_SUBSCRIPTION, ':sub', [String(Date.now()), id]) === 1
  }

  async subscriptions (name: string): Promise<StoredSubscription[]> {
    const records = await this.#script(SUBSCRIPTIONS, ':sub', [String(Date.now()), name]) as string[]
    return records.map((record) => JSON.parse(record) as StoredSubscription)
  }

  async marked (key: string): Promise<boolean> {
    return await this.#commands.send(['EXISTS', `${this.#tag}:k:${key}`]) === 1
  }

  async mark (key: string, ttlMs: number): Promise<void> {
    await this.#commands.send(['SET', `${this.#tag}:k:${key}`, '1', 'PX', String(Math.max(1, Math.ceil(ttlMs)))])
  }

  async enqueue (jobs: ReadonlyArray<{ id: string, body: string }>, dueAt: number): Promise<void> {
    await this.#script(ENQUEUE, ':due', [String(dueAt), ...jobs.flatMap((job) => [job.id, job.body])])
  }

  async claim (max: number, leaseMs: number): Promise<DeliveryJob[]> {
    const flat = await this.#script(CLAIM, ':due', [String(Date.now()), String(max), String(Math.ceil(leaseMs))]) as Array<string | number>
    const claimed: DeliveryJob[] = []
    for (let i = 0; i < flat.length; i += 3) {
      claimed.push({ id: flat[i] as string, body: flat[i + 1] as string, attempt: flat[i + 2] as number })
    }
    return claimed
  }

  async retry (id: string, dueAt: number): Promise<void> {
    await this.#commands.send(['ZADD', `${this.#tag}:due`, 'XX', String(dueAt), id])
  }

  async finish (id: string, keepMs: number): Promise<void> {
    await this.#script(FINISH, ':due', [id, String(Math.max(1, Math.ceil(keepMs)))])
  }

  async nextDue (): Promise<number | undefined> {
    const score = await this.#script(NEXT_DUE, ':due', []) as string | null
    return score === null ? undefined : Number(score)
  }

  async close (): Promise<void> {
    await this.#commands.close()
  }

  /** The ms before which occurrences are too old, as a script takes it ('0': none is). */
  #cutoff (now: number): string {
    return String(Math.max(0, now - this.#maxAge))
  }

  async #script (script: string, key: string, args: string[]): Promise<unknown> {
    return await this.#commands.send(['EVAL', script, '1', this.#tag + key, this.#tag, ...args])
  }
}
