import { createClient } from 'redis'
import type { ChangeEvent, NotificationBus } from '../features/subscriptions.js'

/** The part of a node-redis (v5 or v6) client that the Redis bus uses. */
export interface RedisConnection {
  readonly isReady: boolean
  connect (): Promise<unknown>
  publish (channel: string, message: string): Promise<unknown>
  subscribe (channel: string, listener: (message: string) => void): Promise<unknown>
  unsubscribe (channel: string): Promise<unknown>
  close (): Promise<unknown>
  destroy (): void
  on (event: 'error', listener: (error: Error) => void): unknown
  duplicate (): RedisConnection
}

/** Options of {@link RedisBus}. */
export interface RedisBusOptions {
  /** `redis[s]://…` URL of the server; node-redis's default (localhost:6379) when neither this nor `client` is given. */
  url?: string
  /** The pub/sub channel shared by every node of the deployment. Default `'mocapi:changes'`. */
  channel?: string
  /**
   * A redis client to take the connection settings from. The bus never uses it: it opens its
   * own two connections with `client.duplicate()`, and closing the bus leaves `client` alone.
   */
  client?: { duplicate (): RedisConnection }
  /**
   * Told of connection errors (node-redis keeps reconnecting after them) and of errors thrown
   * by a listener. Default: ignored, so a Redis outage never crashes the process.
   */
  onError?: (error: unknown) => void
}

const LIST_KINDS = new Set(['tools', 'prompts', 'resources'])

/** The change event a message carries, or `undefined` when the message is not one. */
function parseEvent (message: string): ChangeEvent | undefined {
  let value: unknown
  try {
    value = JSON.parse(message)
  } catch {
    return undefined
  }
  if (typeof value !== 'object' || value === null) return undefined
  const { kind, uri } = value as { kind?: unknown, uri?: unknown }
  if (LIST_KINDS.has(kind as string)) return { kind: kind as 'tools' | 'prompts' | 'resources' }
  if (kind === 'resource' && typeof uri === 'string') return { kind, uri }
  return undefined
}

function ignore (): void {}

/**
 * A {@link NotificationBus} over Redis pub/sub: a change announced on one node reaches the
 * `subscriptions/listen` streams of every node publishing on the same channel, the announcing
 * node included (its own changes come back through Redis, once).
 *
 * It owns two connections, a publisher and a subscriber, opened on first use. With node-redis's
 * default reconnect strategy a server that is down delays that first use until it is back; the
 * errors meanwhile go to `onError`. A client whose reconnect strategy gives up makes the bus fail
 * for good: every later `publish()`/`subscribe()` rejects with that error.
 *
 * ```ts
 * import { RedisBus } from 'mocapi/redis'
 * await app.register(mocapi, { bus: new RedisBus({ url: process.env.REDIS_URL }) })
 * ```
 */
export class RedisBus implements NotificationBus {
  readonly #channel: string
  readonly #onError: (error: unknown) => void
  readonly #publisher: RedisConnection
  readonly #subscriber: RedisConnection
  readonly #listeners = new Set<(event: ChangeEvent) => void>()
  #connecting: Promise<void> | undefined
  #closed = false
  #malformed = 0

  constructor (options: RedisBusOptions = {}) {
    const { url, channel = 'mocapi:changes', client, onError = ignore } = options
    if (url !== undefined && typeof url !== 'string') throw new TypeError(`mocapi: RedisBus url must be a string, got ${typeof url}`)
    if (typeof channel !== 'string' || channel === '') throw new TypeError(`mocapi: RedisBus channel must be a non-empty string, got ${JSON.stringify(channel)}`)
    if (typeof onError !== 'function') throw new TypeError(`mocapi: RedisBus onError must be a function, got ${typeof onError}`)
    if (client !== undefined && typeof client?.duplicate !== 'function') throw new TypeError('mocapi: RedisBus client must be a redis client (it has no duplicate())')
    if (client !== undefined && url !== undefined) throw new TypeError('mocapi: RedisBus takes url or client, not both')
    this.#channel = channel
    this.#onError = onError
    this.#publisher = client?.duplicate() ?? createClient({ url })
    this.#subscriber = this.#publisher.duplicate()
    // A node-redis client with no 'error' listener crashes the process on the first outage.
    for (const connection of [this.#publisher, this.#subscriber]) connection.on('error', (error) => this.#onError(error))
  }

  /** How many messages on the channel were not change events, and were ignored. */
  get malformed (): number {
    return this.#malformed
  }

  /** Publishes the change on the channel; every subscribed node, this one included, delivers it. */
  async publish (event: ChangeEvent): Promise<void> {
    await this.#connect()
    await this.#publisher.publish(this.#channel, JSON.stringify(event))
  }

  /** Delivers every change published on the channel to `listener`; returns the unsubscribe function. */
  async subscribe (listener: (event: ChangeEvent) => void): Promise<() => void> {
    await this.#connect()
    this.#listeners.add(listener)
    return () => { this.#listeners.delete(listener) }
  }

  /** Unsubscribes and closes the bus's two connections (waiting for publishes in flight when Redis is up). */
  async close (): Promise<void> {
    this.#closed = true
    this.#listeners.clear()
    if (this.#subscriber.isReady) await this.#subscriber.unsubscribe(this.#channel)
    await Promise.all([this.#subscriber, this.#publisher].map((connection) => connection.isReady ? connection.close() : connection.destroy()))
  }

  #connect (): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('mocapi: the RedisBus is closed'))
    this.#connecting ??= (async () => {
      await Promise.all([this.#publisher.connect(), this.#subscriber.connect()])
      await this.#subscriber.subscribe(this.#channel, (message) => this.#receive(message))
    })()
    return this.#connecting
  }

  #receive (message: string): void {
    const event = parseEvent(message)
    if (event === undefined) {
      this.#malformed++
      return
    }
    for (const listener of this.#listeners) {
      try {
        listener(event)
      } catch (error) {
        this.#onError(error)
      }
    }
  }
}
