import { createClient } from 'redis'
import { fail, optionalString } from '../check.js'
import { InvalidOptionError } from '../errors.js'

/** Without an offline queue, so that while Redis is unreachable a command fails at once rather than wait in memory. */
export function redisConnection<C> (
  options: { url?: unknown, client?: { duplicate (overrides?: { disableOfflineQueue?: boolean }): C } },
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
