import ipaddr from 'ipaddr.js'
import { isIPv6 } from 'node:net'

/** An IPv4 address, or an IPv6 /64: one host holds a whole /64, so counting each address would bound nothing. */
export function callerAddress (ip: string): string {
  const address = ip.split('%')[0]
  if (!isIPv6(address)) return ip
  const parsed = ipaddr.IPv6.parse(address)
  // ::ffff:a.b.c.d is an IPv4 client.
  if (parsed.isIPv4MappedAddress()) return parsed.toIPv4Address().toString()
  return `${parsed.parts.slice(0, 4).map((part) => part.toString(16)).join(':')}::/64`
}

/** For the per-caller limits: the principal, else the address (not the session, which is free to make). */
export function callerOf (principal: string | null, ip: string): string {
  return principal === null ? `address:${callerAddress(ip)}` : `principal:${principal}`
}
