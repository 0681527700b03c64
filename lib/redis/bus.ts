import { noop, nonEmptyString, optionalFunction, positiveInteger } from '../check.js'
import type { NotificationBus } from '../bus/bus.js'
import { parseEvent, type BusEvent } from '../bus/events.js'
import { redisConnection } from './connection.js'

/** The part of a node-redis (v5 or v6) client that the Redis bus uses. */
export interface RedisConnection {
  readonly isReady: boolean
  connect (): Promise<unknown>
  publish (channel: string, message: string): Promise<unknown>
  sendCommand (args: string[]): Promise<unknown>
  subscribe (channel: string, listener: (message: string) => void): Promise<unknown>
  unsubscribe (channel?: string): Promise<unknown>
  close (): Promise<unknown>
  destroy (): void
  on (event: 'error', listener: (error: Error) => void): unknown
  on (event: 'ready' | 'end', listener: () => void): unknown
  duplicate (overrides?: { disableOfflineQueue?: boolean }): RedisConnection
}

/** Options of {@link RedisBus}. */
export interface RedisBusOptions {
  /** `redis[s]://…` URL of the server; node-redis's default (localhost:6379) when neither this nor `client` is given. */
  url?: string | undefined
  /** The pub/sub channel shared by every node of the deployment. Default `'mocapi:changes'`. */
  channel?: string | undefined
  /** A redis client whose settings the bus copies into two connections of its own (`duplicate()`); never closed. */
  client?: { duplicate (overrides?: { disableOfflineQueue?: boolean }): RedisConnection } | undefined
  /**
   * Told of connection errors (node-redis keeps reconnecting, each attempt an error) and of listeners' errors.
   * Default: ignored, so an outage never crashes the process; mocapi logs the outage (see `watch`) and lost events.
   */
  onError?: ((error: unknown) => void) | undefined
  /** Events that may wait for a down Redis; past it, publish rejects and `dropped` counts the event. Default 1000. */
  maxPending?: number | undefined
}

/**
 * A {@link NotificationBus} over Redis pub/sub: an event reaches the listeners of every node on the same channel,
 * its own node's included (once, through Redis). A message for one node goes on `<channel>:node:<node>`, and
 * Redis's receiver count tells at once when that node is gone.
 *
 * Its publisher and subscriber connections open on first use, which a down server delays until it is back (with
 * node-redis's default reconnect strategy), errors going to `onError` and at most `maxPending` events waiting.
 * Once connected, a publish while Redis is unreachable fails at once instead of queueing, and the bus is down from
 * either connection's first error or end until both are ready (and resubscribed) again; `watch` tells of each change.
 * A reconnect strategy that gives up fails the bus for good: every later call rejects with its error.
 *
 * ```ts
 * import { RedisBus } from 'mocapi/redis'
 * await app.register(mocapi, { bus: new RedisBus({ url: process.env.REDIS_URL }) })
 * ```
 */
export class RedisBus implements NotificationBus {
  readonly #channel: string
  readonly #onError: (error: unknown) => void
  readonly #maxPending: number
  readonly #publisher: RedisConnection
  readonly #subscriber: RedisConnection
  readonly #listeners = new Set<(event: BusEvent) => void>()
  #connecting: Promise<void> | undefined
  #closed = false
  #malformed = 0
  #pending = 0
  #dropped = 0
  readonly #watchers = new Set<(state: 'down' | 'up', cause?: unknown) => void>()
  /** Whether both connections are ready: undefined until the bus first connected. */
  #delivering: boolean | undefined

  /** Throws an `FST_MOCAPI_INVALID_OPTION` TypeError naming a bad option's value, as the plugin does. */
  constructor (options: RedisBusOptions = {}) {
    const publisher = redisConnection<RedisConnection>(options, 'RedisBus')
    this.#channel = options.channel === undefined ? 'mocapi:changes' : nonEmptyString(options.channel, 'RedisBus channel')
    this.#onError = optionalFunction<(error: unknown) => void>(options.onError, 'RedisBus onError') ?? noop
    this.#maxPending = positiveInteger(options.maxPending, 'RedisBus maxPending', 1000)
    this.#publisher = publisher
    this.#subscriber = this.#publisher.duplicate()
    for (const connection of [this.#publisher, this.#subscriber]) {
      // A node-redis client with no 'error' listener crashes the process on the first outage.
      connection.on('error', (error) => {
        this.#onError(error)
        this.#check(error)
      })
      connection.on('end', () => this.#check(undefined))
      connection.on('ready', () => this.#check(undefined))
    }
  }

  /** Tells `listener` when the bus goes down (with the error that said so) and when it is back, once per change. */
  watch (listener: (state: 'down' | 'up', cause?: unknown) => void): () => void {
    this.#watchers.add(listener)
    return () => { this.#watchers.delete(listener) }
  }

  #check (cause: unknown): void {
    if (this.#delivering === undefined || this.#closed) return
    const delivering = this.#publisher.isReady && this.#subscriber.isReady
    if (delivering === this.#delivering) return
    this.#delivering = delivering
    for (const watcher of this.#watchers) {
      try {
        watcher(delivering ? 'up' : 'down', cause)
      } catch (error) {
        this.#onError(error)
      }
    }
  }

  /** How many messages on the channel were not events, and were ignored. */
  get malformed (): number {
    return this.#malformed
  }

  /** How many events were dropped because `maxPending` were already waiting for Redis. */
  get dropped (): number {
    return this.#dropped
  }

  /** Publishes the event on the channel; every subscribed node, this one included, delivers it. */
  async publish (event: BusEvent): Promise<void> {
    await this.#command((publisher) => publisher.publish(this.#channel, JSON.stringify(event)))
  }

  /** Delivers every event published on the channel to `listener`; returns the unsubscribe function. */
  async subscribe (listener: (event: BusEvent) => void): Promise<() => void> {
    await this.#connect()
    this.#listeners.add(listener)
    return () => { this.#listeners.delete(listener) }
  }

  /** Sends a message to the node listening as `node`; resolves whether a node received it. */
  async send (node: string, message: object): Promise<boolean> {
    const received = await this.#command((publisher) => publisher.publish(`${this.#channel}:node:${node}`, JSON.stringify(message)))
    return typeof received === 'number' && received > 0
  }

  /**
   * Claims `id` for `ttlMs` ms with one atomic `SET <channel>:claim:<id> 1 NX PX <ttlMs>`: true for the first. Once
   * the bus has tried to connect, rejects at once while it is not connected rather than wait for Redis to come up.
   */
  async claim (id: string, ttlMs: number): Promise<boolean> {
    if (this.#connecting !== undefined && this.#delivering !== true) {
      throw new Error('mocapi: the RedisBus is not connected to Redis, so it cannot claim')
    }
    const key = `${this.#channel}:claim:${id}`
    const reply = await this.#command((publisher) => publisher.sendCommand(['SET', key, '1', 'NX', 'PX', String(Math.max(1, Math.ceil(ttlMs)))]))
    return reply === 'OK'
  }

  /** Receives the messages sent to `node`. */
  async receive (node: string, listener: (message: object) => void): Promise<() => void> {
    await this.#connect()
    const channel = `${this.#channel}:node:${node}`
    await this.#subscriber.subscribe(channel, (text) => {
      let message: unknown
      try {
        message = JSON.parse(text)
      } catch {}
      if (typeof message !== 'object' || message === null) {
        this.#malformed++
        return
      }
      listener(message)
    })
    return () => { this.#subscriber.unsubscribe(channel).catch(this.#onError) }
  }

  /** Unsubscribes and closes the bus's two connections (waiting for publishes in flight when Redis is up). */
  async close (): Promise<void> {
    this.#closed = true
    this.#listeners.clear()
    this.#watchers.clear()
    // A connection still marked ready may lose its socket under the goodbye (Redis went down a moment ago): it is
    // dropped then, so close never rejects and no client is left reconnecting to keep the process alive.
    const connections = [this.#subscriber, this.#publisher]
    await Promise.all(connections.map(async (connection) => {
      if (!connection.isReady) return connection.destroy()
      try {
        if (connection === this.#subscriber) await connection.unsubscribe()
        await connection.close()
      } catch {
        connection.destroy()
      }
    }))
  }

  async #command (run: (publisher: RedisConnection) => Promise<unknown>): Promise<unknown> {
    if (this.#pending >= this.#maxPending) {
      this.#dropped++
      throw new Error(`mocapi: the RedisBus dropped an event: ${this.#pending} are already waiting for Redis (maxPending)`)
    }
    this.#pending++
    try {
      await this.#connect()
      return await run(this.#publisher)
    } finally {
      this.#pending--
    }
  }

  #connect (): Promise<void> {
    if (this.#closed) return Promise.reject(new Error('mocapi: the RedisBus is closed'))
    this.#connecting ??= (async () => {
      await Promise.all([this.#publisher.connect(), this.#subscriber.connect()])
      await this.#subscriber.subscribe(this.#channel, (message) => this.#receive(message))
      this.#delivering = true
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
