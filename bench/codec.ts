/**
 * Hand-run benchmark of the requestState codec against plain JSON stringify + parse
 * of the same payload: `npm run bench:codec` (or, built, `node dist/bench/codec.js`).
 */
import { Journal } from '../lib/journal.js'
import { RequestStateCodec } from '../lib/modern/codec.js'
import type { RequestStatePayload } from '../lib/modern/codec.js'
import { originalParamsOf } from '../lib/modern/token-delivery.js'
import { FormAnswers } from '../lib/elicitation/answers.js'
import { SchemaCompiler } from '../lib/json-schema.js'
import { FormQuestion } from '../lib/elicitation/questions.js'
import { requestedSchema } from '../lib/elicitation/schema.js'
import { fingerprint } from '../lib/replay/fingerprint.js'
import { ephemeralKey } from '../lib/seal/keys.js'
import { KeyRing } from '../lib/seal/seal.js'

/** The checks of form answers of one registration, for fingerprints. */
const forms = new FormAnswers(new SchemaCompiler())

const ITERATIONS = Number(process.env.ITERATIONS ?? 100_000)
const ROUNDS = Number(process.env.ROUNDS ?? 5)

// A token as the replay engine mints it for the fourth round of a tool call, after three
// answers: originalParams without _meta (originalParamsOf drops it), fingerprints as the engine
// takes them. The params carry a _meta, as real requests do.
const params = {
  name: 'book_trip',
  arguments: { from: 'CDG', to: 'JFK', date: '2026-09-14', passengers: 2 },
  _meta: { progressToken: 'p-42' },
}
const answers = [
  { key: 'seat', question: 'Which seat?', r: { action: 'accept', content: { seat: '12A' } } },
  { key: 'meal', question: 'Which meal?', r: { action: 'accept', content: { meal: 'vegetarian' } } },
  { key: 'confirm', question: 'Book it?', r: { action: 'accept', content: { confirm: true } } },
]
const payload: RequestStatePayload = {
  method: 'tools/call',
  originalParams: originalParamsOf(params),
  journal: new Journal(answers.map(({ key, question, r }) => ({
    key,
    fingerprint: fingerprint(new FormQuestion(question, requestedSchema().string(key), forms)),
    answer: r,
  }))),
  issuedAt: Date.now(),
  principal: 'user-8c1f',
  round: 3,
}

const codec = new RequestStateCodec({ ring: new KeyRing([ephemeralKey()]), ttl: 600_000 })
const token = codec.encode(payload)
const json = JSON.stringify(payload)

type Case = [name: string, fn: () => unknown]
const cases: Case[] = [
  ['encode', () => codec.encode(payload)],
  ['decode', () => codec.decode(token)],
  ['JSON stringify+parse', () => JSON.parse(JSON.stringify(payload))],
]

function time (fn: () => unknown): number {
  const start = process.hrtime.bigint()
  for (let i = 0; i < ITERATIONS; i++) fn()
  return ITERATIONS / (Number(process.hrtime.bigint() - start) / 1e9)
}

for (const [, fn] of cases) time(fn)
// Rounds interleave the cases, and each reports its best round: other load on the machine
// only ever slows a round down, so the best is the closest to the undisturbed figure.
const best = cases.map(() => 0)
for (let round = 0; round < ROUNDS; round++) {
  cases.forEach(([, fn], i) => { best[i] = Math.max(best[i], time(fn)) })
}

console.log(`payload ${Buffer.byteLength(json)} bytes of JSON, token ${token.length} characters; best of ${ROUNDS} rounds of ${ITERATIONS}`)
cases.forEach(([name], i) => {
  console.log(`${name.padEnd(24)} ${Math.round(best[i]).toLocaleString('en-US').padStart(10)} ops/s`)
})
console.log(`encode / JSON ${(best[0] / best[2]).toFixed(2)}, decode / JSON ${(best[1] / best[2]).toFixed(2)}`)
