import { noop, nonEmptyString, optionalFunction } from '../check.js'
import { HOLDER_END, decodeReceipt, encodeReceipt, type ReceiptStore, type ReceiptWrite, type StoredReceipt } from '../receipts/store.js'
import { Commands, redisConnection, type RedisCommandConnection } from './connection.js'

/** Options of {@link RedisReceiptStore}. */
export interface RedisReceiptStoreOptions {
  /** `redis[s]://…` URL of the server; node-redis's default (localhost:6379) when neither this nor `client` is given. */
  url?: string | undefined
  /** A redis client whose settings the store copies into a connection of its own (`duplicate()`); never closed. */
  client?: { duplicate (overrides?: { disableOfflineQueue?: boolean }): RedisCommandConnection } | undefined
  /** What every key of the store starts with. Default `'mocapi:receipt:'`. */
  prefix?: string | undefined
  /** Told of connection errors (node-redis keeps reconnecting, each attempt an error). Default: ignored. */
  onError?: ((error: unknown) => void) | undefined
}

// A receipt is one key, `<r|d><holder><until>|<sealed>`, expiring at its lease or TTL: a Cluster serves it as Redis.

const CLAIM = `if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return false end
return redis.call('GET', KEYS[1])`

// ARGV: the running prefix (state and holder), the new value, its PX.
const REPLACE = `local v = redis.call('GET', KEYS[1])
if not v or string.sub(v, 1, ${HOLDER_END}) ~= ARGV[1] then return 0 end
redis.call('SET', KEYS[1], ARGV[2], 'PX', ARGV[3])
return 1`

const RELEASE = `local v = redis.call('GET', KEYS[1])
if v and string.sub(v, 1, ${HOLDER_END}) == ARGV[1] then redis.call('DEL', KEYS[1]) end
return 0`

/**
 * A {@link ReceiptStore} on Redis, shared by every node: a key per receipt, claimed with one `SET NX PX`, bounded by
 * the server's `maxmemory` (every key expires: docs/deploy.md#receipts).
 *
 * ```ts
 * import { RedisReceiptStore } from 'mocapi/redis'
 * await app.register(mocapi, { receipts: { store: new RedisReceiptStore({ url: process.env.REDIS_URL }) } })
 * ```
 */
export class RedisReceiptStore implements ReceiptStore {
  readonly #commands: Commands
  readonly #prefix: string

  /** Throws an `FST_MOCAPI_INVALID_OPTION` TypeError naming a bad option's value, as the plugin does. */
  constructor (options: RedisReceiptStoreOptions = {}) {
    const connection = redisConnection<RedisCommandConnection>(options, 'RedisReceiptStore')
    this.#prefix = options.prefix === undefined ? 'mocapi:receipt:' : nonEmptyString(options.prefix, 'RedisReceiptStore prefix')
    const onError = optionalFunction<(error: unknown) => void>(options.onError, 'RedisReceiptStore onError') ?? noop
    this.#commands = new Commands(connection, 'receipt store', onError)
  }

  async claim (name: string, holder: string, sealed: string, leaseMs: number): Promise<'claimed' | 'full' | StoredReceipt> {
    const lease = Math.max(1, Math.ceil(leaseMs))
    const value = encodeReceipt('r', holder, Date.now() + lease, sealed)
    const held = await this.#commands.send(['EVAL', CLAIM, '1', this.#prefix + name, value, String(lease)])
    if (held === null) return 'claimed'
    return decodeReceipt(held) ?? { state: 'done', holder: '', until: Date.now(), sealed: '' }
  }

  async renew (name: string, holder: string, leaseMs: number): Promise<boolean> {
    const lease = Math.max(1, Math.ceil(leaseMs))
    const current = await this.read(name)
    if (current?.state !== 'running' || current.holder !== holder) return false
    return await this.#replace(name, holder, encodeReceipt('r', holder, Date.now() + lease, current.sealed), lease)
  }

  async complete (name: string, holder: string, sealed: string, ttlMs: number): Promise<ReceiptWrite> {
    const ttl = Math.max(1, Math.ceil(ttlMs))
    return await this.#replace(name, holder, encodeReceipt('d', holder, Date.now() + ttl, sealed), ttl) ? 'written' : 'lost'
  }

  async release (name: string, holder: string): Promise<void> {
    await this.#commands.send(['EVAL', RELEASE, '1', this.#prefix + name, `r${holder}`])
  }

  async read (name: string): Promise<StoredReceipt | undefined> {
    return decodeReceipt(await this.#commands.send(['GET', this.#prefix + name]))
  }

  async close (): Promise<void> {
    await this.#commands.close()
  }

  async #replace (name: string, holder: string, value: string, px: number): Promise<boolean> {
    return await this.#commands.send(['EVAL', REPLACE, '1', this.#prefix + name, `r${holder}`, value, String(px)]) === 1
  }
}
