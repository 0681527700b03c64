/**
 * The servers the HTTP benchmark drives, one per process: `node servers.js <kind> <port>`
 * (to profile: `node --cpu-prof dist/bench/servers.js mocapi 3101`, load it, then Ctrl-C).
 * `bare` is a plain Fastify route that answers the same JSON bodies mocapi sends, so the ratio
 * shows what mocapi adds on top of Fastify itself. `codec` is the bare route plus only the
 * requestState work any stateless design must do: it seals a token for each first call and
 * opens the token of each retry, with mocapi's codec, and answers the same bodies. It seals
 * one `setImmediate` later, as mocapi's engine does (it waits that long to gather concurrent
 * asks), so the two differ only in the rest of mocapi's work. With BENCH_TOOLS=60, mocapi registers the 60 tools of
 * bench/tools.ts (the 60-tool workloads), whose `tools/list` the bare routes answer too.
 */
import { Journal } from '../lib/journal.js'
import Fastify from 'fastify'
import mocapi, { requestedSchema } from '../lib/index.js'
import { createHash } from 'node:crypto'
import { RequestStateCodec } from '../lib/modern/codec.js'
import { FormAnswers } from '../lib/elicitation/answers.js'
import { SchemaCompiler } from '../lib/json-schema.js'
import { FormQuestion } from '../lib/elicitation/questions.js'
import { fingerprint } from '../lib/replay/fingerprint.js'
import { parseKeys } from '../lib/seal/keys.js'
import { KeyRing } from '../lib/seal/seal.js'
import { serveForParent } from './child.js'
import { addInput, bookInput, lookupInput, lookups, lookupText } from './tools.js'

/** The checks of form answers of one registration, for fingerprints. */
const forms = new FormAnswers(new SchemaCompiler())

// The same key on every run, so tokens made by one server process open in another.
export const KEY = createHash('sha256').update('mocapi bench key').digest('base64')
const bookQuestion = new FormQuestion('Book a flight to Lisbon?', requestedSchema().boolean('confirm').choose('cabin', ['economy', 'business']), forms)
const [kind, portText] = process.argv.slice(2)

const app = Fastify({ logger: false })
if (kind === 'mocapi') {
  // BENCH_TOKEN_VERSION=1 seals the layout without per-token keys, to measure that cost apart.
  const tokenVersion = process.env.BENCH_TOKEN_VERSION === '1' ? 1 : 2
  // BENCH_RECEIPTS: `off` (receipts: false), `redis` (RedisReceiptStore at BENCH_REDIS_URL), else the default store.
  const receipts = process.env.BENCH_RECEIPTS === 'off'
    ? false as const
    : process.env.BENCH_RECEIPTS === 'redis'
      ? { store: new (await import('../lib/redis/index.js')).RedisReceiptStore({ url: process.env.BENCH_REDIS_URL }) }
      : undefined
  await app.register(mocapi, { requestState: { keys: [KEY], ttl: 3_600_000, tokenVersion }, receipts })
  app.mcp.tool({ name: 'add', inputSchema: addInput }, (args: { a: number, b: number }) => String(args.a + args.b))
  app.mcp.tool({ name: 'book', inputSchema: bookInput }, async (args: { to: string }, ctx) => {
    const answer = await ctx.elicit(`Book a flight to ${args.to}?`, requestedSchema().boolean('confirm').choose('cabin', ['economy', 'business']))
    return answer.action === 'accept' ? `Booked ${answer.content.cabin} to ${args.to}` : 'Nothing booked'
  })
  // `book` with one effect journaled before its question (bench/once.ts): the same question and answer. Not on the
  // 60-tool server, whose tools are exactly the workload's.
  if (lookups.length === 0) {
    app.mcp.tool({ name: 'book_once', inputSchema: bookInput }, async (args: { to: string }, ctx) => {
      const quote = await ctx.once('quote', () => ({ fare: 'FLEX-LIS-0427', price: 240, currency: 'EUR' }))
      const answer = await ctx.elicit(`Book a flight to ${args.to}?`, requestedSchema().boolean('confirm').choose('cabin', ['economy', 'business']))
      return answer.action === 'accept' && quote.price > 0 ? `Booked ${answer.content.cabin} to ${args.to}` : 'Nothing booked'
    })
  }
  // BENCH_TOOLS=60: the 60-tool workloads' server (bench/tools.ts).
  for (const { name, description } of lookups) {
    app.mcp.tool({ name, description, inputSchema: lookupInput }, (args: { id: string }) => lookupText(name, args.id))
  }
} else {
  // Answers what mocapi answers, keyed by the request's tool and round: BARE_BODIES holds
  // mocapi's response bodies, and the route rebuilds and serialises each like any JSON route.
  const bodies = JSON.parse(process.env.BARE_BODIES ?? '{}') as Record<string, string>
  const results = Object.fromEntries(Object.entries(bodies).map(([key, text]) => [key, JSON.parse(text).result]))
  const codec = kind === 'codec' ? new RequestStateCodec({ ring: new KeyRing(parseKeys([KEY])), ttl: 3_600_000 }) : undefined
  app.post('/mcp', async (request) => {
    const body = request.body as { id: number, method: string, params: { name?: string, arguments?: object, requestState?: string } }
    const token = body.params.requestState
    if (codec !== undefined && body.params.name === 'book') {
      if (token === undefined) {
        await new Promise((resolve) => setImmediate(resolve))
        codec.encode({
          method: body.method,
          originalParams: { name: body.params.name, arguments: body.params.arguments },
          journal: new Journal([{ key: 'elicit-1', fingerprint: fingerprint(bookQuestion) }]),
          principal: null,
          round: 1,
        })
      } else codec.decode(token)
    }
    const key = body.method === 'tools/list'
      ? 'tools/list'
      : request.headers['mcp-session-id'] !== undefined ? `${body.params.name}:session` : token === undefined ? body.params.name as string : `${body.params.name}:retry`
    return { jsonrpc: '2.0', id: body.id, result: results[key] }
  })
}
await app.listen({ host: '127.0.0.1', port: Number(portText) })
serveForParent(() => app.close())
