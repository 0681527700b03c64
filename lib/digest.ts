let h1 = 0
let h2 = 0

/** Feeds a string, then a separator that is not a UTF-16 unit, so ('ab', 'c') and ('a', 'bc') differ. */
function feed (text: string): void {
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    h1 = Math.imul(h1 ^ c, 2654435761)
    h2 = Math.imul(h2 ^ c, 1597334677)
  }
  h1 = Math.imul(h1 ^ 0x10000, 2654435761)
  h2 = Math.imul(h2 ^ 0x10000, 1597334677)
}

/**
 * A short, stable digest of up to three strings (not cryptographic): two 32-bit FNV-style lanes
 * over each string and a separator, mixed into 53 bits and written in base 36 (11 characters at
 * most). The parts are fed one by one, so callers need not join them into a new string first.
 * mocapi uses it where it only has to tell things apart, such as the questions in a replay ledger.
 */
export function digest (first: string, second: string, third = ''): string {
  h1 = 0xdeadbeef
  h2 = 0x41c6ce57
  feed(first)
  feed(second)
  feed(third)
  h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909)
  h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909)
  // Two small integers print far faster than one 53-bit number; the first takes a fixed width
  // (31 bits are at most 6 base-36 digits) so the text reads back one way only.
  return (h1 & 0x7fffffff).toString(36).padStart(6, '0') + (h2 & 0x3fffff).toString(36)
}
