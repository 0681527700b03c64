import type { FastifyRequest } from 'fastify'
import { invalidRequest } from '../errors.js'

const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]', '::1'])

export function hostnameOf (hostHeader: string | undefined): string {
  if (hostHeader === undefined) return ''
  const host = hostHeader.toLowerCase()
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1)
  const colon = host.indexOf(':')
  return colon === -1 ? host : host.slice(0, colon)
}

export function isKnownHost (name: string, allowedHosts: ReadonlySet<string>): boolean {
  return LOOPBACK_HOSTS.has(name) || allowedHosts.has(name)
}

// The address a connection arrived on: 127.0.0.0/8, ::1, or IPv4 loopback seen by a dual-stack socket.
const LOOPBACK_ADDRESS = /^(?:127\.|::1$|::ffff:127\.)/

function isLoopbackAddress (address: string | undefined): boolean {
  return LOOPBACK_ADDRESS.test(address ?? '')
}

/** Refuses an origin the app did not allow, and a loopback request naming an unknown host (DNS rebinding). */
export function checkOrigin (
  request: FastifyRequest,
  allowedOrigins: readonly string[] | undefined,
  allowedHosts: ReadonlySet<string>
): void {
  const origin = request.headers.origin
  if (origin !== undefined) {
    let ok = allowedOrigins !== undefined && (allowedOrigins.includes('*') || allowedOrigins.includes(origin))
    if (!ok && allowedOrigins === undefined) {
      try {
        ok = LOOPBACK_HOSTS.has(new URL(origin).hostname)
      } catch {
        ok = false
      }
    }
    if (!ok) throw invalidRequest(`Origin not allowed: ${origin.slice(0, 200)} is not in the allowedOrigins option`, 403)
  }
  if (isLoopbackAddress(request.socket.localAddress)) {
    const name = hostnameOf(request.headers.host)
    if (!isKnownHost(name, allowedHosts)) {
      throw invalidRequest(`Host not allowed: ${JSON.stringify(name.slice(0, 200))} reached a loopback address; list it in the allowedHosts option`, 403)
    }
  }
}
