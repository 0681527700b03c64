/**
 * The servers the HTTP benchmark drives, one per process: `node servers.js <kind> <port>`.
 * `bare` is a plain Fastify route that answers the same JSON bodies mocapi sends, so the ratio
 * shows what mocapi adds on top of Fastify itself.
 */
import Fastify from 'fastify'
import mocapi, { requestedSchema } from '../lib/index.js'

export const KEY = Buffer.alloc(32, 7).toString('base64')
const [kind, portText] = process.argv.slice(2)

const app = Fastify({ logger: false })
if (kind === 'mocapi') {
  await app.register(mocapi, { requestState: { keys: [KEY], ttl: 3_600_000 } })
  app.mcp.tool({
    name: 'add',
    inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] },
  }, (args: { a: number, b: number }) => String(args.a + args.b))
  app.mcp.tool({
    name: 'book',
    inputSchema: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] },
  }, async (args: { to: string }, ctx) => {
    const answer = await ctx.elicit(`Book a flight to ${args.to}?`, requestedSchema().boolean('confirm').choose('cabin', ['economy', 'business']))
    return answer.action === 'accept' ? `Booked ${answer.content.cabin} to ${args.to}` : 'Nothing booked'
  })
} else {
  // Answers exactly what mocapi answers, keyed by the request's tool and round.
  const bodies = JSON.parse(process.env.BARE_BODIES ?? '{}') as Record<string, unknown>
  app.post('/mcp', async (request) => {
    const body = request.body as { id: number, params: { name: string, requestState?: string } }
    const key = body.params.requestState === undefined ? body.params.name : `${body.params.name}:retry`
    return { jsonrpc: '2.0', id: body.id, result: bodies[key] }
  })
}
await app.listen({ host: '127.0.0.1', port: Number(portText) })
process.send?.('ready')
