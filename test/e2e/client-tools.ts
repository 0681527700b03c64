/** The tools the official-client tests call, in both eras: a plain one, one and two questions, sampling with roots. */
import type { FastifyInstance } from 'fastify'
import { requestedSchema } from '../../lib/index.js'

export function clientTools (app: FastifyInstance): void {
  app.mcp.tool({ name: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] } },
    (args: { text: string }) => args.text)
  app.mcp.tool({ name: 'greet' }, async (_args, ctx) => {
    const answer = await ctx.elicit('Your name?', requestedSchema().string('name', { title: 'Name' }))
    return answer.action === 'accept' ? `Hello, ${answer.content.name}` : `No name (${answer.action})`
  })
  app.mcp.tool({ name: 'trip' }, async (_args, ctx) => {
    const where = await ctx.elicit('Where to?', requestedSchema().choose('city', ['Lisbon', 'Oslo']))
    if (where.action !== 'accept') return `No trip (${where.action})`
    const stay = await ctx.elicit(`How many nights in ${where.content.city}?`, requestedSchema().integer('nights', { minimum: 1 }))
    return stay.action === 'accept' ? `${stay.content.nights} nights in ${where.content.city}` : `No stay (${stay.action})`
  })
  app.mcp.tool({ name: 'assistant' }, async (_args, ctx) => {
    const [reply, list] = await Promise.all([
      ctx.sample({ messages: [{ role: 'user', content: { type: 'text', text: 'Capital of France?' } }], maxTokens: 20 }),
      ctx.listRoots(),
    ])
    return `${(reply.content as { text: string }).text}; ${list.map((root) => root.uri).join(', ')}`
  })
}
