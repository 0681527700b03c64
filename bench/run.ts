/**
 * HTTP benchmark, run by hand: `npm run bench`. Drives mocapi and a bare Fastify route that
 * returns the same JSON, in the same run, 16 connections, and prints throughput ratios for
 * `tools/call` and for a one-question elicitation flow (call → input_required → retry → complete).
 */
import autocannon from 'autocannon'
import { fork, type ChildProcess } from 'node:child_process'
import { fileURLToPath } from 'node:url'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const CONNECTIONS = 16
const serverScript = fileURLToPath(new URL('./servers.js', import.meta.url))
const headers = (name: string) => ({
  'content-type': 'application/json',
  accept: 'application/json, text/event-stream',
  'mcp-protocol-version': '2026-07-28',
  'mcp-method': 'tools/call',
  'mcp-name': name,
})
const meta = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1.0.0' },
}
const body = (name: string, params: object) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, ...params, _meta: meta } })

async function start (kind: string, port: number, env: Record<string, string> = {}): Promise<ChildProcess> {
  const child = fork(serverScript, [kind, String(port)], { env: { ...process.env, ...env }, stdio: 'inherit' })
  await new Promise((resolve) => child.once('message', resolve))
  return child
}

async function post (port: number, name: string, params: object): Promise<any> {
  const response = await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'POST', headers: headers(name), body: body(name, params) })
  return response.json()
}

async function load (port: number, requests: Array<{ name: string, params: object }>): Promise<number> {
  const result = await autocannon({
    url: `http://127.0.0.1:${port}/mcp`,
    connections: CONNECTIONS,
    duration: SECONDS,
    requests: requests.map((r) => ({ method: 'POST', path: '/mcp', headers: headers(r.name), body: body(r.name, r.params) })),
  })
  if (result.non2xx > 0 || result.errors > 0) throw new Error(`port ${port}: ${result.non2xx} non-2xx, ${result.errors} errors`)
  return result.requests.average
}

const mocapiServer = await start('mocapi', 3101)
const add = { name: 'add', params: { arguments: { a: 2, b: 3 } } }
const ask = { name: 'book', params: { arguments: { to: 'Lisbon' } } }
const first = await post(3101, ask.name, ask.params)
const retry = {
  name: 'book',
  params: { arguments: { to: 'Lisbon' }, requestState: first.result.requestState, inputResponses: { 'elicit-1': { action: 'accept', content: { confirm: true, cabin: 'business' } } } },
}
const bodies = {
  add: (await post(3101, add.name, add.params)).result,
  book: first.result,
  'book:retry': (await post(3101, retry.name, retry.params)).result,
}
if (bodies['book:retry'].resultType !== 'complete') throw new Error('the retry did not complete')
const bareServer = await start('bare', 3102, { BARE_BODIES: JSON.stringify(bodies) })

const rows: Array<[string, number, number]> = []
try {
  for (const [label, requests] of [['tools/call', [add]], ['one-question flow', [ask, retry]]] as const) {
    await load(3101, [...requests]) // warm-up pass, discarded
    await load(3102, [...requests])
    const plugin = await load(3101, [...requests])
    const bare = await load(3102, [...requests])
    rows.push([label, plugin, bare])
  }
} finally {
  mocapiServer.kill()
  bareServer.kill()
}
console.log(`\n${CONNECTIONS} connections, ${SECONDS} s per run, Node ${process.version}`)
console.log('scenario            mocapi req/s   bare Fastify req/s   ratio')
for (const [label, plugin, bare] of rows) {
  console.log(`${label.padEnd(20)}${plugin.toFixed(0).padStart(12)}${bare.toFixed(0).padStart(21)}${(plugin / bare).toFixed(2).padStart(8)} x`)
}
