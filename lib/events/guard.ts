// The SSRF guard for webhook callbacks: https only, every resolved address globally routable, unless allow-listed.
import dns from 'node:dns'
import { isIP } from 'node:net'
import ipaddr from 'ipaddr.js'
import { fail, within } from '../check.js'

/** A callback URL that passed the guard, and the address a delivery must connect to (never resolved again). */
export interface CheckedCallback {
  url: URL
  address: string
  family: 4 | 6
}

export type CallbackRefusalReason = 'invalid_url' | 'not_https' | 'blocked_address' | 'unresolvable'

export class CallbackRefused extends Error {
  override name = 'CallbackRefused'
  constructor (readonly reason: CallbackRefusalReason, message: string) {
    super(message)
  }
}

export interface CallbackGuardOptions {
  /** How long a host may take to resolve before the callback is refused, in ms. Default 5 000. */
  lookupTimeoutMs?: number
}

interface AllowedOrigin {
  protocol: string
  hostname: string
  /** '' for the scheme's default port, '*' for any. */
  port: string
}

const LOOKUP_TIMEOUT_MS = 5_000
const SHOWN_URL_CHARS = 200
const ORIGIN = /^(https?):\/\/([^/?#@:[\]\\]+|\[[0-9A-Fa-f:.]+\])(?::(\d{1,5}|\*))?$/i
const RANGES: Record<string, string> = {
  loopback: 'a loopback',
  private: 'a private',
  linkLocal: 'a link-local',
  uniqueLocal: 'a unique local',
  multicast: 'a multicast',
  unspecified: 'an unspecified',
  broadcast: 'a broadcast',
  carrierGradeNat: 'a carrier-grade NAT',
  reserved: 'a reserved',
}
const EXCEPTIONS = 'callbacks must reach a public address (events.webhooks.allow lists exceptions)'

function allowedOrigin (entry: unknown, name: string): AllowedOrigin {
  const match = typeof entry === 'string' ? ORIGIN.exec(entry) : null
  const anyPort = match?.[3] === '*'
  const text = match === null ? '' : anyPort ? `${match[1]}://${match[2]}` : match[0]
  if (!URL.canParse(text)) fail(name, 'an origin scheme://host[:port] (http or https; the port may be *)', entry)
  // The URL parser normalizes the host (case, IPv4 forms, IPv6 compression) and drops a default port.
  const url = new URL(text)
  return { protocol: url.protocol, hostname: url.hostname, port: anyPort ? '*' : url.port }
}

function shown (value: unknown): string {
  const text = String(value)
  return JSON.stringify(text.length > SHOWN_URL_CHARS ? `${text.slice(0, SHOWN_URL_CHARS)}…` : text)
}

function bare (hostname: string): string {
  return hostname.startsWith('[') ? hostname.slice(1, -1) : hostname
}

/** Why `address` is not globally routable, or undefined when it is. */
function blockedRange (address: string): string | undefined {
  // process() turns an IPv4-mapped IPv6 address into the IPv4 address it carries.
  const range = ipaddr.process(address).range()
  return range === 'unicast' ? undefined : range
}

export class CallbackGuard {
  readonly #allow: AllowedOrigin[]
  readonly #lookupTimeoutMs: number

  constructor (allow: readonly string[], options: CallbackGuardOptions = {}) {
    if (!Array.isArray(allow)) fail('events.webhooks.allow', 'an array of origins', allow)
    this.#allow = allow.map((entry, i) => allowedOrigin(entry, `events.webhooks.allow[${i}]`))
    this.#lookupTimeoutMs = options.lookupTimeoutMs ?? LOOKUP_TIMEOUT_MS
  }

  /** The URL and the address to connect to, or a `CallbackRefused` saying why the callback may not be reached. */
  async check (value: string): Promise<CheckedCallback> {
    if (!URL.canParse(value)) {
      throw new CallbackRefused('invalid_url', `callback URL ${shown(value)} is not a valid URL`)
    }
    const url = new URL(value)
    const host = JSON.stringify(url.hostname)
    // Credentials in a callback URL would travel to (and be logged by) whoever hosts it: refuse, and never echo them.
    if (url.username !== '' || url.password !== '') {
      throw new CallbackRefused('invalid_url', `callback URL for ${host} must not carry a user name or password`)
    }
    if (this.#allowed(url)) {
      const [first] = await this.#resolve(url)
      return { url, ...first }
    }
    if (url.protocol !== 'https:') {
      throw new CallbackRefused('not_https', `callback URL for ${host} must be https, got ${url.protocol} (events.webhooks.allow lists exceptions)`)
    }
    const addresses = await this.#resolve(url)
    for (const { address } of addresses) {
      const range = blockedRange(address)
      if (range === undefined) continue
      const words = RANGES[range] ?? `a special-purpose (${range})`
      const where = isIP(bare(url.hostname)) === 0 ? `${host} resolves to ${address},` : `${host} is`
      throw new CallbackRefused('blocked_address', `${where} ${words} address; ${EXCEPTIONS}`)
    }
    return { url, ...addresses[0] }
  }

  #allowed (url: URL): boolean {
    return this.#allow.some((origin) => origin.protocol === url.protocol && origin.hostname === url.hostname &&
      (origin.port === '*' || origin.port === url.port))
  }

  async #resolve (url: URL): Promise<Array<{ address: string, family: 4 | 6 }>> {
    const hostname = bare(url.hostname)
    const family = isIP(hostname)
    if (family !== 0) return [{ address: hostname, family: family as 4 | 6 }]
    const lookup = dns.promises.lookup(hostname, { all: true })
    try {
      const addresses = await within(lookup, 'lookup', this.#lookupTimeoutMs)
      return addresses.map(({ address, family }) => ({ address, family: family as 4 | 6 }))
    } catch (error) {
      lookup.catch(() => {})
      const why = (error as NodeJS.ErrnoException).code ?? `no answer within ${this.#lookupTimeoutMs} ms`
      throw new CallbackRefused('unresolvable', `callback host ${JSON.stringify(hostname)} does not resolve (${why})`)
    }
  }
}
