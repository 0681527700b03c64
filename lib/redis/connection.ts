import { createClient } from 'redis'
import { fail, noop, optionalString } from '../check.js'
import { InvalidOptionError } from '../errors.js'

/** Without an offline queue, so that while Redis is unreachable a command fails at once rather than wait in memory. */
export function redisConnection<C> (
  options: { url?: unknown, client?: { duplicate (overrides?: { disableOfflineQueue?: boolean }): C } | undefined },
  what: string
): C {
  const url = optionalString(options.url, `${what} url`)
  const { client } = options
  if (client !== undefined && typeof client?.duplicate !== 'function') {
    fail(`${what} client`, 'a redis client (with duplicate())', client)
  }
  if (client !== undefined && url !== undefined) throw new InvalidOptionError(`${what} takes url or client, not both`)
  return client?.duplicate({ disableOfflineQueue: true }) ??
    createClient({ url, disableOfflineQueue: true }) as unknown as C
}

/** The part of a node-redis (v5 or v6) client that a store sends its commands through. */
export interface RedisCommandConnection {
  readonly isReady: boolean
  connect (): Promise<unknown>
  sendCommand (args: string[]): Promise<unknown>
  close (): Promise<unknown>
  destroy (): void
  on (event: 'error', listener: (error: Error) => void): unknown
}

const CONNECT_WAIT_MS = 2000

/** A store's one connection, opened on first use: a server down fails a command after a short wait, not never. */
export class Commands {
  readonly #connection: RedisCommandConnection
  readonly #what: string
  #connecting: Promise<unknown> | undefined
  #closed = false

  constructor (connection: RedisCommandConnection, what: string, onError: (error: unknown) => void) {
    this.#connection = connection
    this.#what = what
    // A node-redis client with no 'error' listener crashes the process on the first outage.
    connection.on('error', onError)
  }

  async send (args: string[]): Promise<unknown> {
    if (this.#closed) throw new Error(`mocapi: the ${this.#what} is closed`)
    const connection = this.#connection
    if (!connection.isReady) {
      this.#connecting ??= connection.connect()
      let timer: NodeJS.Timeout | undefined
      await Promise.race([this.#connecting, new Promise((resolve) => { timer = setTimeout(resolve, CONNECT_WAIT_MS) })])
      clearTimeout(timer)
      if (!connection.isReady) throw new Error(`mocapi: Redis (the ${this.#what}) is not reachable`)
    }
    return await connection.sendCommand(args)
  }

  async close (): Promise<void> {
    this.#closed = true
    if (this.#connecting === undefined) return
    // A connection still trying to reach the server is dropped; a live one ends its replies first.
    if (this.#connection.isReady) await this.#connection.close().catch(noop)
    else this.#connection.destroy()
  }
}
