import { isIPv6 } from 'node:net'

function hextets (address: string): number[] {
  let text = address
  const dot = text.indexOf('.')
  if (dot !== -1) {
    const start = text.lastIndexOf(':') + 1
    const [a, b, c, d] = text.slice(start).split('.').map(Number)
    text = `${text.slice(0, start)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.split('::')
  const words = (part: string | undefined): string[] => part === undefined || part === '' ? [] : part.split(':')
  const front = words(head)
  const back = words(tail)
  const zeros = Array.from({ length: 8 - front.length - back.length }, () => '0')
  return [...front, ...zeros, ...back].map((word) => parseInt(word, 16))
}

/** An IPv4 address, or an IPv6 /64: one host holds a whole /64, so counting each address would bound nothing. */
export function callerAddress (ip: string): string {
  const address = ip.split('%')[0]
  if (!isIPv6(address)) return ip
  const words = hextets(address)
  // ::ffff:a.b.c.d is an IPv4 client.
  if (words.slice(0, 5).every((word) => word === 0) && words[5] === 0xffff) {
    return [words[6] >> 8, words[6] & 0xff, words[7] >> 8, words[7] & 0xff].join('.')
  }
  return `${words.slice(0, 4).map((word) => word.toString(16)).join(':')}::/64`
}

/** For the per-caller limits: the principal, else the address (not the session, which is free to make). */
export function callerOf (principal: string | null, ip: string): string {
  return principal === null ? `address:${callerAddress(ip)}` : `principal:${principal}`
}
