/**
 * The official TypeScript SDK v2 (`@modelcontextprotocol/server`), served for the HTTP benchmark in a process of its
 * own: `node sdk.js <port>`, BENCH_TOOLS=60 for the 60-tool workloads. It is wired as the SDK's serving guide
 * (docs/serving/http.md) mounts it on plain `node:http`: `createMcpHandler(factory)` (a fresh `McpServer` per request,
 * no session store; 2025-era requests served statelessly, its default `legacy: 'stateless'`), wrapped once with
 * `toNodeHandler` from `@modelcontextprotocol/node`, behind that package's localhost `Host` and `Origin` guards.
 *
 * The tools are bench/tools.ts's, the same JSON Schemas mocapi registers, through the SDK's `fromJsonSchema`; the
 * schema objects are made once at module scope, as the guide asks of anything costly ("create … caches once at module
 * scope and close over them"), and the factory registers the tools on each request's instance. `book` asks its
 * question the SDK's 2026-07-28 way (docs/servers/input-required.md): it returns `inputRequired(…)` while the answer
 * is missing and reads the retry's `inputResponses` with `inputResponse` and the schema-checking `acceptedContent`.
 */
import { createServer } from 'node:http'
import { acceptedContent, createMcpHandler, fromJsonSchema, inputRequired, inputResponse, McpServer } from '@modelcontextprotocol/server'
import { localhostHostValidation, localhostOriginValidation, toNodeHandler } from '@modelcontextprotocol/node'
import { serveForParent } from './child.js'
import { addInput, bookAnswer, bookInput, lookupInput, lookups, lookupText } from './tools.js'

const add = fromJsonSchema<{ a: number, b: number }>(addInput)
const book = fromJsonSchema<{ to: string }>(bookInput)
const answer = fromJsonSchema<{ confirm: boolean, cabin: 'economy' | 'business' }>(bookAnswer)
const lookup = fromJsonSchema<{ id: string }>(lookupInput)
const text = (value: string) => ({ content: [{ type: 'text' as const, text: value }] })

const handler = createMcpHandler(() => {
  const server = new McpServer({ name: 'bench', version: '1.0.0' })
  server.registerTool('add', { inputSchema: add }, async ({ a, b }) => text(String(a + b)))
  server.registerTool('book', { inputSchema: book }, async ({ to }, ctx) => {
    const view = inputResponse(ctx.mcpReq.inputResponses, 'elicit-1')
    if (view.kind === 'elicit' && view.action !== 'accept') return text('Nothing booked')
    const content = acceptedContent(ctx.mcpReq.inputResponses, 'elicit-1', answer)
    if (content === undefined) {
      return inputRequired({ inputRequests: { 'elicit-1': inputRequired.elicit({ message: `Book a flight to ${to}?`, requestedSchema: bookAnswer }) } })
    }
    return text(`Booked ${content.cabin} to ${to}`)
  })
  for (const { name, description } of lookups) {
    server.registerTool(name, { description, inputSchema: lookup }, async ({ id }) => text(lookupText(name, id)))
  }
  return server
})

const serve = toNodeHandler(handler)
const validateHost = localhostHostValidation()
const validateOrigin = localhostOriginValidation()
const server = createServer((req, res) => {
  if (!validateHost(req, res) || !validateOrigin(req, res)) return
  serve(req, res).catch((error: unknown) => { console.error(error) })
})
await new Promise<void>((resolve) => server.listen(Number(process.argv[2]), '127.0.0.1', resolve))
serveForParent(async () => {
  await handler.close()
  server.closeAllConnections()
  await new Promise((resolve) => server.close(resolve))
})
