/** Host names and addresses: which a request may name, and which connections arrive on loopback. */

export const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]', '::1'])

/** The host name of a `Host` header, lower-cased, without its port. */
export function hostnameOf (hostHeader: string | undefined): string {
  if (hostHeader === undefined) return ''
  const host = hostHeader.toLowerCase()
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1)
  const colon = host.indexOf(':')
  return colon === -1 ? host : host.slice(0, colon)
}

/** Whether a host name is a loopback name or one the app listed in `allowedHosts`. */
export function isKnownHost (name: string, allowedHosts: ReadonlySet<string>): boolean {
  return LOOPBACK_HOSTS.has(name) || allowedHosts.has(name)
}

// The address a connection arrived on: 127.0.0.0/8, ::1, or IPv4 loopback seen by a dual-stack socket.
const LOOPBACK_ADDRESS = /^(?:127\.|::1$|::ffff:127\.)/

export function isLoopbackAddress (address: string | undefined): boolean {
  return LOOPBACK_ADDRESS.test(address ?? '')
}
