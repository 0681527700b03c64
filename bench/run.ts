/**
 * HTTP benchmark, run by hand: `npm run bench`. Drives mocapi and a bare Fastify route that
 * returns the same JSON, in the same run, 16 connections, and prints throughput ratios for
 * `tools/call`, for a one-question elicitation flow (call → input_required → retry → complete),
 * and for a 2025-era `tools/call` in a session (its sealed `Mcp-Session-Id` opened on every call).
 *
 * Each server runs in its own child process, so the load generator (this process) never shares
 * its event loop. Runs alternate mocapi / bare, BENCH_ROUNDS times (3 by default) after a
 * discarded warm-up of each, and the table shows the median of each, and the median of the ratios of each mocapi
 * run to the bare run right after it (steadier when the machine's speed drifts). Every run also reports the
 * CPU the server, the load generator and everything else on the machine used: a server below a
 * full core means the load generator or other load set the pace, and the figures say so. Beside
 * req/s the table gives requests per second of server CPU, which other load on the machine
 * disturbs far less; on an idle machine, with the server at a full core, the two agree.
 *
 * The flow is also run against the bare route plus mocapi's requestState codec alone (seal a
 * token on each first call, one setImmediate later as the engine does, and open it on each
 * retry): the cost every stateless design pays, so its ratio is the ceiling for the flow's on
 * this machine, and the gap to mocapi's is the rest of mocapi.
 *
 * BENCH_SECONDS (10 by default) sets the length of a run.
 *
 * BENCH_BEFORE=<path to another build's dist/bench/servers.js> also runs that build's mocapi in
 * every round, next to this one (their order swapped from round to round), and prints each
 * scenario's ratio of this build to that one: the paired before/after measure of a change.
 *
 * BENCH_PIN=1 (on a machine of two cores or more with `taskset`, from util-linux) runs the load
 * generator on CPU 0 and every server, all its threads, on CPU 1: each server then has the same
 * core to itself, and the scheduler's placement no longer moves the figures from run to run. It
 * also keeps a server's helper threads (the garbage collector's) on that one core. The targets
 * were set unpinned, which stays the default.
 */
import autocannon from 'autocannon'
import { execFileSync } from 'node:child_process'
import { cpus } from 'node:os'
import { fileURLToPath } from 'node:url'
import { forkServer, serverCpu, type Server } from './child.js'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 10)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const CONNECTIONS = 16
const MOCAPI_PORT = 3101
const BARE_PORT = 3102
const CODEC_PORT = 3103
const BEFORE_PORT = 3104
const serverScript = fileURLToPath(new URL('./servers.js', import.meta.url))
const BEFORE = process.env.BENCH_BEFORE

/** Sets the CPUs of every thread of a process; false when taskset is missing or refuses. */
function pin (pid: number, cpu: number): boolean {
  try {
    execFileSync('taskset', ['-apc', String(cpu), String(pid)], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}
const PINNED = process.env.BENCH_PIN === '1' && cpus().length >= 2 && pin(process.pid, 0)

const headers = (call: Call): Record<string, string> => call.session === undefined
  ? { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': call.name }
  : { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': call.session }
const meta = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': { elicitation: {} },
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1.0.0' },
}
const body = (call: Call) => JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: call.session === undefined ? { name: call.name, ...call.params, _meta: meta } : { name: call.name, ...call.params } })

/** One request of a run: a 2026-07-28 call, or a call in a 2025-era session when `session` is set. */
interface Call { name: string, params: Record<string, unknown>, session?: string }

async function start (kind: string, port: number, env: Record<string, string> = {}, script = serverScript): Promise<Server> {
  const server = await forkServer(script, [kind, String(port)], port, env)
  if (PINNED && !pin(server.child.pid as number, 1)) throw new Error(`bench setup: taskset could not move the ${kind} server to CPU 1`)
  return server
}

/** Busy CPU time of the whole machine so far, in microseconds, over all cores. */
function machineCpu (): number {
  return cpus().reduce((sum, { times }) => sum + (times.user + times.nice + times.sys + times.irq) * 1000, 0)
}

function ownCpu (): number {
  const { user, system } = process.cpuUsage()
  return user + system
}

async function post (port: number, call: Call): Promise<{ status: number, contentType: string | null, text: string }> {
  const response = await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'POST', headers: headers(call), body: body(call) })
  return { status: response.status, contentType: response.headers.get('content-type'), text: await response.text() }
}

interface Run {
  rps: number
  /** CPU used during the run, in percent of one core. */
  server: number
  loader: number
  other: number
}

async function load (server: Server, calls: readonly Call[]): Promise<Run> {
  const cpu0 = await serverCpu(server)
  const own0 = ownCpu()
  const machine0 = machineCpu()
  const start = process.hrtime.bigint()
  const result = await autocannon({
    url: `http://127.0.0.1:${server.port}/mcp`,
    connections: CONNECTIONS,
    duration: SECONDS,
    requests: calls.map((c) => ({ method: 'POST', path: '/mcp', headers: headers(c), body: body(c) })),
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

function fail (message: string): never {
  throw new Error(`bench setup: ${message}`)
}

const add: Call = { name: 'add', params: { arguments: { a: 2, b: 3 } } }
const ask: Call = { name: 'book', params: { arguments: { to: 'Lisbon' } } }

/** A 2025-era session of a server, for its calls. */
async function sessionOf (port: number): Promise<string> {
  const initialize = await fetch(`http://127.0.0.1:${port}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'bench', version: '1.0.0' } } }),
  })
  return initialize.headers.get('mcp-session-id') ?? fail(`initialize answered ${await initialize.text()}`)
}

let legacyAdd: Call = add
const mocapi = await start('mocapi', MOCAPI_PORT)
const before = BEFORE === undefined ? undefined : await start('mocapi', BEFORE_PORT, {}, BEFORE)
/** The calls of each scenario as the build before the change takes them (its own session). */
const beforeCalls = new Map<string, readonly Call[]>()
const beforeRuns = new Map<string, Run[]>()
let bare: Server | undefined
let codecOnly: Server | undefined
const rows: Array<{ label: string, plugin: Run[], bare: Run[] }> = []
const codecRuns: Run[] = []
try {
  // Check what mocapi answers before timing it: a benchmark of error replies would be worthless.
  const added = await post(MOCAPI_PORT, add)
  const first = await post(MOCAPI_PORT, ask)
  const firstResult = JSON.parse(first.text).result
  if (JSON.parse(added.text).result?.content?.[0]?.text !== '5') fail(`tools/call add answered ${added.text}`)
  if (firstResult?.resultType !== 'input_required' || typeof firstResult.requestState !== 'string') fail(`book answered ${first.text}`)
  const retry: Call = {
    name: 'book',
    params: {
      arguments: { to: 'Lisbon' },
      requestState: firstResult.requestState,
      inputResponses: { 'elicit-1': { action: 'accept', content: { confirm: true, cabin: 'business' } } },
    },
  }
  const retried = await post(MOCAPI_PORT, retry)
  if (JSON.parse(retried.text).result?.content?.[0]?.text !== 'Booked business to Lisbon') fail(`the retry answered ${retried.text}`)
  legacyAdd = { ...add, session: await sessionOf(MOCAPI_PORT) }
  const legacyAdded = await post(MOCAPI_PORT, legacyAdd)
  if (JSON.parse(legacyAdded.text).result?.content?.[0]?.text !== '5' || 'resultType' in JSON.parse(legacyAdded.text).result) fail(`the 2025-era add answered ${legacyAdded.text}`)

  // The bare route answers the same bodies, byte for byte (the requestState of a first call is
  // fresh every time; the bare route returns one of the same length).
  const bodies = { add: added.text, book: first.text, 'book:retry': retried.text, 'add:session': legacyAdded.text }
  bare = await start('bare', BARE_PORT, { BARE_BODIES: JSON.stringify(bodies) })
  codecOnly = await start('codec', CODEC_PORT, { BARE_BODIES: JSON.stringify(bodies) })
  for (const port of [BARE_PORT, CODEC_PORT]) {
    for (const [call, expected] of [[add, added], [ask, first], [retry, retried], [legacyAdd, legacyAdded]] as const) {
      const got = await post(port, call)
      if (got.text !== expected.text || got.status !== expected.status || got.contentType !== expected.contentType) {
        fail(`port ${port} answers ${got.status} ${got.contentType} ${got.text}\nwhere mocapi answers ${expected.status} ${expected.contentType} ${expected.text}`)
      }
    }
  }

  if (before !== undefined) {
    // The build before the change answers the same calls the same way, with a token and a session of its own.
    const token = JSON.parse((await post(BEFORE_PORT, ask)).text).result?.requestState ?? fail('the build before answered no requestState')
    const beforeRetry = { ...retry, params: { ...retry.params, requestState: token } }
    const beforeLegacy = { ...add, session: await sessionOf(BEFORE_PORT) }
    for (const [call, expected] of [[add, added], [beforeRetry, retried], [beforeLegacy, legacyAdded]] as const) {
      const got = await post(BEFORE_PORT, call)
      if (got.text !== expected.text) fail(`the build before answers ${got.text}\nwhere this one answers ${expected.text}`)
    }
    beforeCalls.set('tools/call', [add]).set('one-question flow', [ask, beforeRetry]).set('2025 tools/call', [beforeLegacy])
  }

  for (const [label, calls] of [['tools/call', [add]], ['one-question flow', [ask, retry]], ['2025 tools/call', [legacyAdd]]] as const) {
    await load(mocapi, calls) // warm-up passes, discarded
    await load(bare, calls)
    const row = { label, plugin: [] as Run[], bare: [] as Run[] }
    const flow = calls.length > 1
    if (flow) await load(codecOnly, calls)
    const previous = beforeCalls.get(label)
    const earlier: Run[] = []
    if (before !== undefined && previous !== undefined) await load(before, previous)
    for (let round = 0; round < ROUNDS; round++) {
      // With a build before the change, the two builds swap places each round, so neither always runs first.
      if (before !== undefined && previous !== undefined && round % 2 === 1) earlier.push(await load(before, previous))
      row.plugin.push(await load(mocapi, calls))
      if (before !== undefined && previous !== undefined && round % 2 === 0) earlier.push(await load(before, previous))
      row.bare.push(await load(bare, calls))
      if (flow) codecRuns.push(await load(codecOnly, calls))
    }
    if (before !== undefined) beforeRuns.set(label, earlier)
    rows.push(row)
  }
} finally {
  mocapi.child.kill()
  before?.child.kill()
  bare?.child.kill()
  codecOnly?.child.kill()
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}
const cpuNote = (runs: Run[]): string => runs.map((r) => `${r.server}/${r.loader}/${r.other}`).join(' ')
/** Requests per second of server CPU: the pace a server would keep with a core to itself. */
const perCpu = (r: Run): number => r.rps / Math.max(r.server, 1) * 100

console.log(`\n${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s per server, alternating, Node ${process.version}, ${cpus().length} CPUs${PINNED ? ', servers pinned to CPU 1 and the load generator to CPU 0' : ''}`)
console.log('medians            mocapi req/s   bare req/s   ratio    per server CPU-second: mocapi    bare   ratio   paired: req/s  per CPU')
for (const { label, plugin, bare } of rows) {
  const p = median(plugin.map((r) => r.rps))
  const b = median(bare.map((r) => r.rps))
  const pc = median(plugin.map(perCpu))
  const bc = median(bare.map(perCpu))
  // Each mocapi run against the bare run right after it: the machine's speed drifts less within a pair than across
  // the whole bench, so the median of these ratios is steadier than the ratio of the medians.
  const pairedRps = median(plugin.map((r, i) => r.rps / bare[i].rps))
  const pairedCpu = median(plugin.map((r, i) => perCpu(r) / perCpu(bare[i])))
  console.log(`${label.padEnd(18)}${p.toFixed(0).padStart(13)}${b.toFixed(0).padStart(13)}${(p / b).toFixed(2).padStart(7)} x${pc.toFixed(0).padStart(30)}${bc.toFixed(0).padStart(8)}${(pc / bc).toFixed(2).padStart(7)} x` +
    `${pairedRps.toFixed(2).padStart(13)} x${pairedCpu.toFixed(2).padStart(7)} x`)
}
{
  // The bare route plus only the token work: what any stateless AES-GCM design pays, and so
  // the ceiling of the flow ratio on this machine; the gap to mocapi is the rest of mocapi.
  const flowBare = median(rows[1].bare.map((r) => r.rps))
  const c = median(codecRuns.map((r) => r.rps))
  console.log(`${'  bare + codec only'.padEnd(18)}${''.padStart(13)}${c.toFixed(0).padStart(13)}${(c / flowBare).toFixed(2).padStart(7)} x of bare: the same flow with only requestState seal and open added`)
}
if (before !== undefined) {
  console.log(`\nthis build against the build before the change (${BEFORE}), the same rounds:`)
  console.log('                   after req/s  before req/s   ratio    per server CPU-second: after  before   ratio   paired: req/s  per CPU')
  for (const { label, plugin } of rows) {
    const earlier = beforeRuns.get(label) as Run[]
    const a = median(plugin.map((r) => r.rps))
    const b = median(earlier.map((r) => r.rps))
    const ac = median(plugin.map(perCpu))
    const bc = median(earlier.map(perCpu))
    const pairedRps = median(plugin.map((r, i) => r.rps / earlier[i].rps))
    const pairedCpu = median(plugin.map((r, i) => perCpu(r) / perCpu(earlier[i])))
    console.log(`${label.padEnd(18)}${a.toFixed(0).padStart(13)}${b.toFixed(0).padStart(14)}${(a / b).toFixed(2).padStart(7)} x${ac.toFixed(0).padStart(29)}${bc.toFixed(0).padStart(8)}${(ac / bc).toFixed(2).padStart(7)} x` +
      `${pairedRps.toFixed(2).padStart(13)} x${pairedCpu.toFixed(2).padStart(7)} x`)
    console.log(`${''.padEnd(20)}before ${earlier.map((r) => r.rps.toFixed(0)).join(' ')}  cpu ${cpuNote(earlier)}`)
  }
}
console.log('\nruns (req/s), and CPU % of one core as server/load generator/everything else:')
for (const { label, plugin, bare } of rows) {
  console.log(`${label.padEnd(20)}mocapi ${plugin.map((r) => r.rps.toFixed(0)).join(' ')}  cpu ${cpuNote(plugin)}`)
  console.log(`${''.padEnd(20)}bare   ${bare.map((r) => r.rps.toFixed(0)).join(' ')}  cpu ${cpuNote(bare)}`)
}
console.log(`${'one-question flow'.padEnd(20)}codec  ${codecRuns.map((r) => r.rps.toFixed(0)).join(' ')}  cpu ${cpuNote(codecRuns)}`)
const all = [...rows.flatMap((r) => [...r.plugin, ...r.bare]), ...codecRuns]
if (all.some((r) => r.other > 10)) {
  console.log('\nwarning: other processes used over 10% of a core during some runs: their req/s are low, trust the per-CPU figures more')
}
if (all.some((r) => r.server < 85)) {
  console.log('warning: a server used under 85% of a core during some runs: the load generator or other load set its pace')
}
