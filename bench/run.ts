/**
 * HTTP benchmark, run by hand: `npm run bench`. Drives mocapi, the official TypeScript SDK v2 (`sdk.ts`) and a bare
 * Fastify route that returns mocapi's JSON, in the same run, 16 connections, and prints throughput ratios to the bare
 * route for `tools/call`, for a one-question elicitation flow (call → input_required → retry → complete), for a
 * 2025-era `tools/call` (in mocapi, a session whose sealed `Mcp-Session-Id` is opened on every call), and, on servers
 * with 60 tools registered, for `tools/list` and `tools/call`.
 *
 * Each server runs in its own child process, so the load generator (this process) never shares
 * its event loop. Every round runs mocapi, the bare route and the SDK in turn, BENCH_ROUNDS times (3 by default)
 * after a discarded warm-up of each, and the table shows the median of each, and the median of the ratios of each
 * server's run to the bare run of the same round (steadier when the machine's speed drifts). Every run also reports
 * the CPU the server, the load generator and everything else on the machine used: a server below a
 * full core means the load generator or other load set the pace, and the figures say so. Beside
 * req/s the table gives requests per second of server CPU, which other load on the machine
 * disturbs far less; on an idle machine, with the server at a full core, the two agree.
 *
 * The flow is also run against the bare route plus mocapi's requestState codec alone (seal a
 * token on each first call, one setImmediate later as the engine does, and open it on each
 * retry): the cost every stateless design pays, so its ratio is the ceiling for the flow's on
 * this machine, and the gap to mocapi's is the rest of mocapi.
 *
 * Every server's answers are checked before timing (a benchmark of error replies would be worthless): mocapi's and
 * the SDK's are parsed and must be the tools' successful results; the bare and codec routes must answer mocapi's
 * bytes.
 *
 * BENCH_SECONDS (10 by default) sets the length of a run.
 *
 * BENCH_BEFORE=<path to another build's dist/bench/servers.js> also runs that build's mocapi in
 * every round, next to this one (their order swapped from round to round), and prints each
 * scenario's ratio of this build to that one: the paired before/after measure of a change. A build that predates the
 * 60-tool workloads (its servers.js ignores BENCH_TOOLS) is left out of those two.
 *
 * BENCH_PIN=1 (on a machine of two cores or more with `taskset`, from util-linux) runs the load
 * generator on CPU 0 and every server, all its threads, on CPU 1: each server then has the same
 * core to itself, and the scheduler's placement no longer moves the figures from run to run. It
 * also keeps a server's helper threads (the garbage collector's) on that one core. The targets
 * were set unpinned, which stays the default.
 */
import { execFileSync } from 'node:child_process'
import { cpus } from 'node:os'
import { fileURLToPath } from 'node:url'
import { isDeepStrictEqual } from 'node:util'
import { forkServer, type Server } from './child.js'
import { CONNECTIONS, JSON_ACCEPT, ROUNDS, SECONDS, load, post, resultOf, textOf, type Call, type Reply, type Run } from './http.js'
const MOCAPI_PORT = 3101
const BARE_PORT = 3102
const CODEC_PORT = 3103
const BEFORE_PORT = 3104
const SDK_PORT = 3105
const MOCAPI_60_PORT = 3106
const SDK_60_PORT = 3107
const BEFORE_60_PORT = 3108
const serverScript = fileURLToPath(new URL('./servers.js', import.meta.url))
const sdkScript = fileURLToPath(new URL('./sdk.js', import.meta.url))
const BEFORE = process.env.BENCH_BEFORE
const SIXTY = { BENCH_TOOLS: '60' }

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

async function start (kind: string, port: number, env: Record<string, string> = {}, script = serverScript): Promise<Server> {
  const server = await forkServer(script, script === sdkScript ? [String(port)] : [kind, String(port)], port, env)
  if (PINNED && !pin(server.child.pid as number, 1)) throw new Error(`bench setup: taskset could not move the ${kind} server to CPU 1`)
  return server
}

function fail (message: string): never {
  throw new Error(`bench setup: ${message}`)
}

const add: Call = { name: 'add', params: { arguments: { a: 2, b: 3 } } }
const ask: Call = { name: 'book', params: { arguments: { to: 'Lisbon' } } }
const list: Call = { method: 'tools/list' }
const lookup: Call = { name: 'lookup_07', params: { arguments: { id: 'r-1' } } }
const answer = { 'elicit-1': { action: 'accept', content: { confirm: true, cabin: 'business' } } }
/** The retry of `ask` with the answer, and the requestState of the first call when it carried one. */
const retryOf = (requestState: unknown): Call => ({
  name: 'book',
  params: { arguments: { to: 'Lisbon' }, ...(requestState !== undefined && { requestState }), inputResponses: answer },
})

/** A 2025-era `initialize` of a server: the session id it issued, if it keeps sessions. */
async function initialize (port: number): Promise<string | undefined> {
  const reply = await fetch(`http://127.0.0.1:${port}/mcp`, {
    method: 'POST',
    headers: JSON_ACCEPT,
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 'bench', version: '1.0.0' } } }),
  })
  const session = reply.headers.get('mcp-session-id') ?? undefined
  const text = await reply.text()
  if (resultOf({ status: reply.status, contentType: reply.headers.get('content-type'), text })?.protocolVersion !== '2025-11-25') fail(`port ${port}: initialize answered ${text}`)
  return session
}

/** What a server answers to the checks, so other servers can be held to it. */
interface Answers { add: Reply, first: Reply, retry: Call, retried: Reply, legacy: Call, legacyAdded: Reply }

/** Checks that a server with `add` and `book` answers each workload's calls with the tools' successful results. */
async function check (who: string, port: number): Promise<Answers> {
  const added = await post(port, add)
  if (textOf(added) !== '5') fail(`${who}: tools/call add answered ${added.text}`)
  const first = await post(port, ask)
  const asked = resultOf(first)
  if (asked?.resultType !== 'input_required' || asked.inputRequests?.['elicit-1']?.method !== 'elicitation/create') fail(`${who}: book answered ${first.text}`)
  const retry = retryOf(asked.requestState)
  const retried = await post(port, retry)
  if (textOf(retried) !== 'Booked business to Lisbon') fail(`${who}: the retry of book answered ${retried.text}`)
  const session = await initialize(port)
  const legacy: Call = session === undefined ? { ...add, legacy: true } : { ...add, legacy: true, session }
  const legacyAdded = await post(port, legacy)
  if (textOf(legacyAdded) !== '5' || 'resultType' in resultOf(legacyAdded)) fail(`${who}: the 2025-era add answered ${legacyAdded.text}`)
  return { add: added, first, retry, retried, legacy, legacyAdded }
}

/** Checks a 60-tool server: all 60 listed, with mocapi's names, and `add` and a lookup called. */
async function check60 (who: string, port: number, names?: string[]): Promise<{ listed: Reply, names: string[] }> {
  const listed = await post(port, list)
  const tools = resultOf(listed)?.tools as Array<{ name: string }> | undefined
  const listedNames = (tools ?? []).map((t) => t.name).sort()
  if (listedNames.length !== 60) fail(`${who}: tools/list listed ${listedNames.length} tools: ${listed.text.slice(0, 400)}`)
  if (names !== undefined && listedNames.join() !== names.join()) fail(`${who}: tools/list lists ${listedNames.join()}\nwhere mocapi lists ${names.join()}`)
  const added = await post(port, add)
  if (textOf(added) !== '5') fail(`${who}: tools/call add answered ${added.text}`)
  const looked = await post(port, lookup)
  if (textOf(looked) !== 'lookup_07: no record r-1') fail(`${who}: tools/call lookup_07 answered ${looked.text}`)
  return { listed, names: listedNames }
}

/** One workload: the calls each server takes in a run (a flow's first call and its retry, in turn). */
interface Scenario {
  label: string
  mocapi: Server
  calls: readonly Call[]
  sdk: Server
  sdkCalls: readonly Call[]
  /** The build before the change, with its own calls (its own token and session), when it serves the workload. */
  before?: { server: Server, calls: readonly Call[] }
  /** Runs the bare route plus the codec too: the flow's reference. */
  codec?: true
  /** The size of each server's replies, in bytes, for the note under the table. */
  bytes: string
}
interface Row { label: string, mocapi: Run[], sdk: Run[], bare: Run[], codec: Run[], before: Run[], bytes: string, beforeRan: boolean }

const servers: Server[] = []
const launch = async (...args: Parameters<typeof start>): Promise<Server> => {
  const server = await start(...args)
  servers.push(server)
  return server
}
const rows: Row[] = []
let beforeNote = ''
try {
  const [mocapi, mocapi60, sdk, sdk60] = await Promise.all([
    launch('mocapi', MOCAPI_PORT),
    launch('mocapi', MOCAPI_60_PORT, SIXTY),
    launch('sdk', SDK_PORT, {}, sdkScript),
    launch('sdk', SDK_60_PORT, SIXTY, sdkScript),
  ])

  // Check what every server answers before timing it: a benchmark of error replies would be worthless.
  const ours = await check('mocapi', MOCAPI_PORT)
  const theirs = await check('SDK v2', SDK_PORT)
  const question = (reply: Reply): unknown => resultOf(reply).inputRequests['elicit-1'].params
  if (!isDeepStrictEqual(question(theirs.first), question(ours.first))) fail(`the SDK asks ${theirs.first.text}\nwhere mocapi asks ${ours.first.text}`)
  const ours60 = await check60('mocapi with 60 tools', MOCAPI_60_PORT)
  const theirs60 = await check60('SDK v2 with 60 tools', SDK_60_PORT, ours60.names)

  // The bare route answers mocapi's bodies, byte for byte (the requestState of a first call is
  // fresh every time; the bare route returns one of the same length).
  const bodies = { add: ours.add.text, book: ours.first.text, 'book:retry': ours.retried.text, 'add:session': ours.legacyAdded.text, 'tools/list': ours60.listed.text }
  const [bare, codecOnly] = await Promise.all([
    launch('bare', BARE_PORT, { BARE_BODIES: JSON.stringify(bodies) }),
    launch('codec', CODEC_PORT, { BARE_BODIES: JSON.stringify(bodies) }),
  ])
  for (const port of [BARE_PORT, CODEC_PORT]) {
    for (const [call, expected] of [[add, ours.add], [ask, ours.first], [ours.retry, ours.retried], [ours.legacy, ours.legacyAdded], [list, ours60.listed]] as const) {
      const got = await post(port, call)
      if (got.text !== expected.text || got.status !== expected.status || got.contentType !== expected.contentType) {
        fail(`port ${port} answers ${got.status} ${got.contentType} ${got.text}\nwhere mocapi answers ${expected.status} ${expected.contentType} ${expected.text}`)
      }
    }
  }

  const befores = new Map<string, { server: Server, calls: readonly Call[] }>()
  if (BEFORE !== undefined) {
    // The build before the change answers the same calls the same way, with a token and a session of its own.
    const before = await launch('mocapi', BEFORE_PORT, {}, BEFORE)
    const token = resultOf(await post(BEFORE_PORT, ask))?.requestState ?? fail('the build before answered no requestState')
    const beforeRetry = retryOf(token)
    const beforeLegacy: Call = { ...add, legacy: true, session: await initialize(BEFORE_PORT) ?? fail('the build before issued no session') }
    for (const [call, expected] of [[add, ours.add], [beforeRetry, ours.retried], [beforeLegacy, ours.legacyAdded]] as const) {
      const got = await post(BEFORE_PORT, call)
      if (got.text !== expected.text) fail(`the build before answers ${got.text}\nwhere this one answers ${expected.text}`)
    }
    befores.set('tools/call', { server: before, calls: [add] })
      .set('one-question flow', { server: before, calls: [ask, beforeRetry] })
      .set('2025 tools/call', { server: before, calls: [beforeLegacy] })
    const before60 = await launch('mocapi', BEFORE_60_PORT, SIXTY, BEFORE)
    const listed = resultOf(await post(BEFORE_60_PORT, list))?.tools?.length
    if (listed === 60 && textOf(await post(BEFORE_60_PORT, add)) === '5') {
      befores.set('60 tools: tools/list', { server: before60, calls: [list] }).set('60 tools: tools/call', { server: before60, calls: [add] })
    } else {
      beforeNote = `the build before lists ${listed} tools with BENCH_TOOLS=60 (it predates the 60-tool workloads): left out of them`
    }
  }

  const size = (...replies: Reply[]): string => replies.map((r) => r.text.length).join(' + ')
  const bytesOf = (a: Reply[], b: Reply[]): string => `mocapi ${size(...a)} B, SDK v2 ${size(...b)} B`
  const scenarios: Scenario[] = [
    { label: 'tools/call', mocapi, calls: [add], sdk, sdkCalls: [add], bytes: bytesOf([ours.add], [theirs.add]) },
    { label: 'one-question flow', mocapi, calls: [ask, ours.retry], sdk, sdkCalls: [ask, theirs.retry], codec: true, bytes: bytesOf([ours.first, ours.retried], [theirs.first, theirs.retried]) },
    { label: '2025 tools/call', mocapi, calls: [ours.legacy], sdk, sdkCalls: [theirs.legacy], bytes: bytesOf([ours.legacyAdded], [theirs.legacyAdded]) },
    { label: '60 tools: tools/list', mocapi: mocapi60, calls: [list], sdk: sdk60, sdkCalls: [list], bytes: bytesOf([ours60.listed], [theirs60.listed]) },
    { label: '60 tools: tools/call', mocapi: mocapi60, calls: [add], sdk: sdk60, sdkCalls: [add], bytes: bytesOf([ours.add], [theirs.add]) },
  ]
  for (const scenario of scenarios) scenario.before = befores.get(scenario.label)

  for (const { label, mocapi, calls, sdk, sdkCalls, before, codec, bytes } of scenarios) {
    // Warm-up passes, discarded.
    await load(mocapi, calls)
    await load(sdk, sdkCalls)
    await load(bare, calls)
    if (codec) await load(codecOnly, calls)
    if (before !== undefined) await load(before.server, before.calls)
    const row: Row = { label, mocapi: [], sdk: [], bare: [], codec: [], before: [], bytes, beforeRan: before !== undefined }
    for (let round = 0; round < ROUNDS; round++) {
      // With a build before the change, the two builds swap places each round, so neither always runs first.
      if (before !== undefined && round % 2 === 1) row.before.push(await load(before.server, before.calls))
      row.mocapi.push(await load(mocapi, calls))
      if (before !== undefined && round % 2 === 0) row.before.push(await load(before.server, before.calls))
      row.bare.push(await load(bare, calls))
      row.sdk.push(await load(sdk, sdkCalls))
      if (codec) row.codec.push(await load(codecOnly, calls))
    }
    rows.push(row)
  }
} finally {
  for (const server of servers) server.child.kill()
}

const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}
const cpuNote = (runs: Run[]): string => runs.map((r) => `${r.server}/${r.loader}/${r.other}`).join(' ')
/** Requests per second of server CPU: the pace a server would keep with a core to itself. */
const perCpu = (r: Run): number => r.rps / Math.max(r.server, 1) * 100

/**
 * One line of a table: the medians of `runs` and of `reference`, and the median of the ratios of each run to the
 * reference's run of the same round (the machine's speed drifts less within a round than across the whole bench).
 */
function line (label: string, who: string, runs: Run[], reference: Run[]): string {
  const p = median(runs.map((r) => r.rps))
  const b = median(reference.map((r) => r.rps))
  const pc = median(runs.map(perCpu))
  const bc = median(reference.map(perCpu))
  const pairedRps = median(runs.map((r, i) => r.rps / reference[i].rps))
  const pairedCpu = median(runs.map((r, i) => perCpu(r) / perCpu(reference[i])))
  return `${label.padEnd(22)}${who.padEnd(16)}${p.toFixed(0).padStart(8)}${b.toFixed(0).padStart(10)}${(p / b).toFixed(2).padStart(7)} x` +
    `${pc.toFixed(0).padStart(11)}${bc.toFixed(0).padStart(10)}${(pc / bc).toFixed(2).padStart(7)} x${pairedRps.toFixed(2).padStart(10)} x${pairedCpu.toFixed(2).padStart(7)} x`
}

console.log(`\n${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s per server, alternating, Node ${process.version}, ${cpus().length} CPUs${PINNED ? ', servers pinned to CPU 1 and the load generator to CPU 0' : ''}`)
console.log('medians; the reference is the bare route unless the line says          per server CPU-second          paired')
console.log(`${'workload'.padEnd(22)}${'server'.padEnd(16)}${'req/s'.padStart(8)}${'ref req/s'.padStart(10)}${'ratio'.padStart(9)}${'server'.padStart(11)}${'ref'.padStart(10)}${'ratio'.padStart(9)}${'req/s'.padStart(12)}${'per CPU'.padStart(9)}`)
for (const row of rows) {
  console.log(line(row.label, 'mocapi', row.mocapi, row.bare))
  console.log(line('', 'SDK v2', row.sdk, row.bare))
  if (row.codec.length > 0) {
    // The bare route plus only the token work: what any stateless AES-GCM design pays, and so the ceiling of the
    // flow's ratio on this machine; the gap to mocapi is the rest of mocapi.
    console.log(line('', 'bare + codec', row.codec, row.bare))
    console.log(line('  of the codec ref.', 'mocapi', row.mocapi, row.codec))
    console.log(line('', 'SDK v2', row.sdk, row.codec))
  }
}
console.log('(bare + codec: the bare route answering the same flow with only the requestState seal and open added)')
if (rows.some((r) => r.beforeRan)) {
  console.log(`\nthis build against the build before the change (${BEFORE}), the same rounds; the reference is the build before:`)
  for (const row of rows.filter((r) => r.beforeRan)) {
    console.log(line(row.label, 'mocapi', row.mocapi, row.before))
    console.log(`${''.padEnd(22)}before ${row.before.map((r) => r.rps.toFixed(0)).join(' ')}  cpu ${cpuNote(row.before)}`)
  }
}
if (beforeNote !== '') console.log(beforeNote)
console.log('\nruns (req/s), and CPU % of one core as server/load generator/everything else:')
for (const row of rows) {
  console.log(`${row.label.padEnd(22)}mocapi ${row.mocapi.map((r) => r.rps.toFixed(0)).join(' ')}  cpu ${cpuNote(row.mocapi)}`)
  console.log(`${''.padEnd(22)}SDK v2 ${row.sdk.map((r) => r.rps.toFixed(0)).join(' ')}  cpu ${cpuNote(row.sdk)}`)
  console.log(`${''.padEnd(22)}bare   ${row.bare.map((r) => r.rps.toFixed(0)).join(' ')}  cpu ${cpuNote(row.bare)}`)
  if (row.codec.length > 0) console.log(`${''.padEnd(22)}codec  ${row.codec.map((r) => r.rps.toFixed(0)).join(' ')}  cpu ${cpuNote(row.codec)}`)
  console.log(`${''.padEnd(22)}reply bodies: ${row.bytes}`)
}
const all = rows.flatMap((r) => [...r.mocapi, ...r.sdk, ...r.bare, ...r.codec, ...r.before])
if (all.some((r) => r.other > 10)) {
  console.log('\nwarning: other processes used over 10% of a core during some runs: their req/s are low, trust the per-CPU figures more')
}
if (all.some((r) => r.server < 85)) {
  console.log('warning: a server used under 85% of a core during some runs: the load generator or other load set its pace')
}
