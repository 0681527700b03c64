// What the HTTP benchmarks share: the requests they send, how they read replies, and one timed run of a server.
import autocannon from 'autocannon'
import { cpus } from 'node:os'
import { serverCpu, type Server } from './child.js'

export const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
export const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
export const CONNECTIONS = 16

/**
 * One request of a run: a 2026-07-28 request (`tools/call` unless `method` says otherwise), or with `legacy` a
 * 2025-11-25 one, in the session `session` names when the server keeps sessions.
 */
export interface Call { method?: 'tools/list', name?: string, params?: Record<string, unknown>, legacy?: true, session?: string }

export const JSON_ACCEPT = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
export function headers (call: Call): Record<string, string> {
  if (call.legacy === true) {
    return call.session === undefined
      ? { ...JSON_ACCEPT, 'mcp-protocol-version': '2025-11-25' }
      : { ...JSON_ACCEPT, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': call.session }
  }
  const modern = { ...JSON_ACCEPT, 'mcp-protocol-version': '2026-07-28', 'mcp-method': call.method ?? 'tools/call' }
  return call.name === undefined ? modern : { ...modern, 'mcp-name': call.name }
}
const meta = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1.0.0' },
}
export const body = (call: Call) => JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: call.method ?? 'tools/call',
  params: { ...(call.name !== undefined && { name: call.name }), ...call.params, ...(call.legacy !== true && { _meta: meta }) },
})

/** Busy CPU time of the whole machine so far, in microseconds, over all cores. */
function machineCpu (): number {
  return cpus().reduce((sum, { times }) => sum + (times.user + times.nice + times.sys + times.irq) * 1000, 0)
}

function ownCpu (): number {
  const { user, system } = process.cpuUsage()
  return user + system
}

export interface Reply { status: number, contentType: string | null, text: string }

export async function post (port: number, call: Call): Promise<Reply> {
  const response = await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'POST', headers: headers(call), body: body(call) })
  return { status: response.status, contentType: response.headers.get('content-type'), text: await response.text() }
}

/** The JSON-RPC result of a reply, whether it came as a JSON body or as an event stream's last message. */
export function resultOf (reply: Reply): any {
  const text = reply.contentType?.startsWith('text/event-stream') === true
    ? reply.text.split('\n').filter((line) => line.startsWith('data:')).at(-1)?.slice(5) ?? ''
    : reply.text
  try {
    return JSON.parse(text).result
  } catch {
    return undefined
  }
}
/** The text of a successful tool result's first content block. */
export const textOf = (reply: Reply): unknown => {
  const result = resultOf(reply)
  return reply.status === 200 && result?.isError !== true ? result?.content?.[0]?.text : undefined
}

export interface Run {
  rps: number
  /** CPU used during the run, in percent of one core. */
  server: number
  loader: number
  other: number
}

/** `vary`: makes each request sent anew (a fresh idempotency key, say). */
export async function load (server: Server, calls: readonly Call[], vary?: (request: autocannon.Request) => autocannon.Request): Promise<Run> {
  const cpu0 = await serverCpu(server)
  const own0 = ownCpu()
  const machine0 = machineCpu()
  const start = process.hrtime.bigint()
  const result = await autocannon({
    url: `http://127.0.0.1:${server.port}/mcp`,
    connections: CONNECTIONS,
    duration: SECONDS,
    requests: calls.map((c) => ({
      method: 'POST',
      path: '/mcp',
      headers: headers(c),
      body: body(c),
      ...(vary !== undefined && { setupRequest: vary }),
    })),
  })
  const elapsed = Number(process.hrtime.bigint() - start) / 1000
  const serverUsed = await serverCpu(server) - cpu0
  const ownUsed = ownCpu() - own0
  const machineUsed = machineCpu() - machine0
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) {
    throw new Error(`port ${server.port}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`)
  }
  const percent = (us: number): number => Math.round(100 * us / elapsed)
  return {
    rps: result.requests.average,
    server: percent(serverUsed),
    loader: percent(ownUsed),
    other: Math.max(0, percent(machineUsed - serverUsed - ownUsed)),
  }
}
