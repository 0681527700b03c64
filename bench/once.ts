/**
 * `ctx.once`, run by hand: `npm run bench:once`. The one-question flow (call → input_required → retry → complete) of
 * `book`, and of `book_once`, the same tool with one effect journaled before its question, each against a bare
 * Fastify route that answers the very bytes mocapi answers, in the same run. Each round runs the four in turn, the
 * order of the two tools swapped from round to round, BENCH_ROUNDS times (3) of BENCH_SECONDS (10) after a discarded
 * warm-up; the table gives medians and the median of the paired ratios (each run against the bare run of its round,
 * and `book_once` against `book` of its round). Then the token's growth per recorded value, from the codec alone.
 */
import { Journal } from '../lib/journal.js'
import { createHash } from 'node:crypto'
import { fileURLToPath } from 'node:url'
import { forkServer, type Server } from './child.js'
import { CONNECTIONS, ROUNDS, SECONDS, load, post, resultOf, textOf, type Call, type Run } from './http.js'
import { RequestStateCodec } from '../lib/modern/codec.js'
import { parseKeys } from '../lib/seal/keys.js'
import { KeyRing } from '../lib/seal/seal.js'

const serverScript = fileURLToPath(new URL('./servers.js', import.meta.url))
const MOCAPI_PORT = 3111
const BARE_PORT = 3112
const answer = { 'elicit-1': { action: 'accept', content: { confirm: true, cabin: 'business' } } }

function fail (message: string): never {
  throw new Error(`bench setup: ${message}`)
}

/** The flow of `tool` on mocapi, checked: its first call, its retry, and what each answered. */
async function flow (tool: string) {
  const first: Call = { name: tool, params: { arguments: { to: 'Lisbon' } } }
  const asked = await post(MOCAPI_PORT, first)
  const requestState = resultOf(asked)?.requestState
  if (typeof requestState !== 'string') fail(`${tool} answered ${asked.text}`)
  const retry: Call = { name: tool, params: { arguments: { to: 'Lisbon' }, requestState, inputResponses: answer } }
  const retried = await post(MOCAPI_PORT, retry)
  if (textOf(retried) !== 'Booked business to Lisbon') fail(`the retry of ${tool} answered ${retried.text}`)
  return { calls: [first, retry], asked, retried, token: requestState as string }
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const servers: Server[] = []
try {
  const mocapi = await forkServer(serverScript, ['mocapi', String(MOCAPI_PORT)], MOCAPI_PORT)
  servers.push(mocapi)
  const plain = await flow('book')
  const once = await flow('book_once')
  const bodies = { book: plain.asked.text, 'book:retry': plain.retried.text, book_once: once.asked.text, 'book_once:retry': once.retried.text }
  const bare = await forkServer(serverScript, ['bare', String(BARE_PORT)], BARE_PORT, { BARE_BODIES: JSON.stringify(bodies) })
  servers.push(bare)
  for (const [call, expected] of [[plain.calls[0], plain.asked], [plain.calls[1], plain.retried], [once.calls[0], once.asked], [once.calls[1], once.retried]] as const) {
    const got = await post(BARE_PORT, call)
    if (got.text !== expected.text) fail(`the bare route answers ${got.text}\nwhere mocapi answers ${expected.text}`)
  }

  const runs: Record<'plain' | 'once' | 'plainBare' | 'onceBare', Run[]> = { plain: [], once: [], plainBare: [], onceBare: [] }
  for (const server of [mocapi, bare]) for (const calls of [plain.calls, once.calls]) await load(server, calls)
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? (['plain', 'once'] as const) : (['once', 'plain'] as const)
    for (const which of order) {
      const calls = which === 'plain' ? plain.calls : once.calls
      runs[which].push(await load(mocapi, calls))
      runs[`${which}Bare`].push(await load(bare, calls))
    }
  }
  // Requests per second of server CPU: steadier than req/s when other load on the machine moves.
  const perCpu = (run: Run): number => run.rps / Math.max(run.server, 1) * 100
  const ratios = (a: Run[], b: Run[], of = (run: Run) => run.rps): number => median(a.map((run, i) => of(run) / of(b[i])))
  const line = (label: string, ours: Run[], ref: Run[]) => console.log(label.padEnd(34) +
    Math.round(median(ours.map((r) => r.rps))).toString().padStart(8) + Math.round(median(ref.map((r) => r.rps))).toString().padStart(10) +
    ratios(ours, ref).toFixed(2).padStart(9) + ratios(ours, ref, perCpu).toFixed(2).padStart(12))
  console.log(`${'workload (mocapi / bare route)'.padEnd(34)}${'req/s'.padStart(8)}${'bare'.padStart(10)}${'ratio'.padStart(9)}${'per CPU'.padStart(12)}`)
  line('one-question flow', runs.plain, runs.plainBare)
  line('one-question flow, one ctx.once', runs.once, runs.onceBare)
  console.log(`\nctx.once against without, paired: ${ratios(runs.once, runs.plain).toFixed(2)} of the flow's req/s, ` +
    `${ratios(runs.once, runs.plain, perCpu).toFixed(2)} per server CPU; the bare route against itself across the two: ` +
    `${ratios(runs.onceBare, runs.plainBare).toFixed(2)} (the noise)`)
  console.log(`tokens: ${plain.token.length} characters without, ${once.token.length} with the recorded quote`)
  console.log(`${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s per server, alternating, Node ${process.version}`)
} finally {
  for (const server of servers) server.child.kill('SIGTERM')
}

// The token's growth per recorded value: the same round's token with 0 to 8 values of each shape.
const key = createHash('sha256').update('mocapi bench once').digest('base64')
const codec = new RequestStateCodec({ ring: new KeyRing(parseKeys([key])), ttl: 3_600_000 })
const shapes: Array<[string, unknown]> = [
  ['a number', 240],
  ['a 12-character id', 'RCPT-0427-XY'],
  ['a quote { fare, price, currency }', { fare: 'FLEX-LIS-0427', price: 240, currency: 'EUR' }],
  ['200 characters of text', 'x'.repeat(200)],
]
const tokenLength = (count: number, value: unknown): number => codec.encode({
  method: 'tools/call',
  originalParams: { name: 'book_once', arguments: { to: 'Lisbon' } },
  journal: new Journal([{ key: 'elicit-1', fingerprint: 'AAAAAAAAAAAAAAAAAAAAAA' }],
    Array.from({ length: count }, (_, i) => [`effect-${i}`, value] as [string, unknown])),
  principal: null,
  round: 1,
}).length
console.log(`\n${'recorded value'.padEnd(36)}${'JSON bytes'.padStart(11)}${'first'.padStart(8)}${'each more'.padStart(11)}  (token characters; none recorded: ${tokenLength(0, null)})`)
for (const [label, value] of shapes) {
  const none = tokenLength(0, value)
  console.log(`${label.padEnd(36)}${JSON.stringify(value).length.toString().padStart(11)}${(tokenLength(1, value) - none).toString().padStart(8)}${((tokenLength(8, value) - tokenLength(1, value)) / 7).toFixed(1).padStart(11)}`)
}
