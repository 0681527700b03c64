import t from 'tap'
import { createHash, randomBytes } from 'node:crypto'
import { digest } from '../../lib/seal/digest.js'

// Tokens minted by one version of mocapi are opened by the next during a rolling deploy, so the
// digests in their ledgers must not change: the first 16 bytes of SHA-256, in base64url.
const reference = (domain: string, text: string): string =>
  createHash('sha256').update(`${domain}\0${text}`).digest().subarray(0, 16).toString('base64url')

t.test('a digest is the first 16 bytes of SHA-256 over domain, NUL and text, in base64url', async (t) => {
  const texts = ['', 'Book a flight to Lisbon?', 'é✓𝄞 and \u0000 and \uFFFF', 'x'.repeat(10_000)]
  for (let i = 0; i < 2000; i++) texts.push(randomBytes(i % 64).toString('latin1'))
  let same = 0
  for (const text of texts) {
    for (const domain of ['text', 'elicit']) if (digest(domain, text) === reference(domain, text)) same++
  }
  t.equal(same, texts.length * 2, 'every digest agrees with the reference')
  // 2000 random texts cover every value of the 22nd character's top 2 bits many times over.
  t.same(new Set(texts.map((text) => digest('text', text)[21])), new Set(['A', 'Q', 'g', 'w']))
})
