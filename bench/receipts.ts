/**
 * Receipts, run by `npm run bench` after the main table (or alone: `npm run bench:receipts`). Three mocapi servers,
 * alike but for `receipts`: `false`, the default in-memory store, and `RedisReceiptStore` on a redis-server of the
 * bench's own (left out, saying so, when none is installed). Two workloads: the one-question flow (its retry has a
 * round's receipt: a claim, then the sealed reply kept) and a keyed `tools/call` of `add` with a fresh
 * `Idempotency-Key` on every request (each a first run: claim and complete). Each round runs the servers in turn, the
 * order rotated from round to round, BENCH_ROUNDS times (3) of BENCH_SECONDS (10) after a discarded warm-up; the
 * table gives medians, and each store against `receipts: false` of its round (paired), with the spread of those
 * paired ratios across rounds: the bench's own noise on this machine.
 */
import type autocannon from 'autocannon'
import { spawn, spawnSync } from 'node:child_process'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { forkServer, type Server } from './child.js'
import { CONNECTIONS, ROUNDS, SECONDS, load, post, resultOf, textOf, type Call, type Run } from './http.js'

const serverScript = fileURLToPath(new URL('./servers.js', import.meta.url))
const PORTS = { off: 3121, memory: 3122, redis: 3123 }
const REDIS_PORT = 3129
const answer = { 'elicit-1': { action: 'accept', content: { confirm: true, cabin: 'business' } } }

function fail (message: string): never {
  throw new Error(`bench setup: ${message}`)
}

async function startRedis (): Promise<(() => void) | undefined> {
  if (spawnSync('redis-server', ['--version']).status !== 0) return undefined
  const child = spawn('redis-server', ['--port', String(REDIS_PORT), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
  await sleep(300)
  return () => child.kill('SIGTERM')
}

/** The flow's calls on `port`, checked: its first call and its retry. */
async function flow (port: number): Promise<Call[]> {
  const first: Call = { name: 'book', params: { arguments: { to: 'Lisbon' } } }
  const requestState = resultOf(await post(port, first))?.requestState
  if (typeof requestState !== 'string') fail(`port ${port}: book asked nothing`)
  const retry: Call = { name: 'book', params: { arguments: { to: 'Lisbon' }, requestState, inputResponses: answer } }
  if (textOf(await post(port, retry)) !== 'Booked business to Lisbon') fail(`port ${port}: the retry of book failed`)
  return [first, retry]
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]
const perCpu = (run: Run): number => run.rps / Math.max(run.server, 1) * 100
const servers: Server[] = []
const stopRedis = await startRedis()
try {
  const kinds = (stopRedis === undefined ? ['off', 'memory'] : ['off', 'memory', 'redis']) as Array<keyof typeof PORTS>
  const running: Partial<Record<keyof typeof PORTS, Server>> = {}
  for (const kind of kinds) {
    running[kind] = await forkServer(serverScript, ['mocapi', String(PORTS[kind])], PORTS[kind],
      { BENCH_RECEIPTS: kind, BENCH_REDIS_URL: `redis://127.0.0.1:${REDIS_PORT}` })
    servers.push(running[kind])
  }
  const add: Call = { name: 'add', params: { arguments: { a: 2, b: 3 } } }
  let next = 0
  // A fresh key on every keyed call; on every retry an answer the round does not ask for, which the handler never
  // reads but which makes each retry a request of its own (a receipt to claim and keep), as real retries are.
  const freshKey = (request: autocannon.Request): autocannon.Request =>
    ({ ...request, headers: { ...request.headers, 'idempotency-key': `bench-${process.pid}-${next++}` } })
  const freshRetry = (request: autocannon.Request): autocannon.Request => typeof request.body !== 'string' || !request.body.includes('"inputResponses":{')
    ? request
    : { ...request, body: request.body.replace('"inputResponses":{', `"inputResponses":{"bench-${next++}":{"action":"decline"},`) }
  const workloads = [
    { label: 'one-question flow', calls: await flow(PORTS.off), vary: freshRetry },
    { label: 'keyed tools/call', calls: [add], vary: freshKey },
  ]
  for (const kind of kinds) {
    if (textOf(await post(PORTS[kind], add)) !== '5') fail(`${kind}: add failed`)
    await flow(PORTS[kind])
  }
  for (const { label, calls, vary } of workloads) {
    // Each server's own flow: a token of one server opens on the others (the same key), but a flow is theirs.
    const callsOf = async (kind: keyof typeof PORTS): Promise<Call[]> => label === 'keyed tools/call' ? calls : await flow(PORTS[kind])
    const runs: Partial<Record<keyof typeof PORTS, Run[]>> = {}
    for (const kind of kinds) await load(running[kind] as Server, await callsOf(kind), vary)
    for (let round = 0; round < ROUNDS; round++) {
      const order = kinds.map((_, i) => kinds[(i + round) % kinds.length])
      for (const kind of order) (runs[kind] ??= []).push(await load(running[kind] as Server, await callsOf(kind), vary))
    }
    console.log(`\n${label}${''.padEnd(20 - label.length)}${'req/s'.padStart(8)}${'per CPU'.padStart(10)}   against receipts: false, paired (spread across rounds)`)
    for (const kind of kinds) {
      const mine = runs[kind] as Run[]
      const off = runs.off as Run[]
      const paired = mine.map((run, i) => run.rps / off[i].rps)
      const pairedCpu = mine.map((run, i) => perCpu(run) / perCpu(off[i]))
      const spread = (values: number[]): string => `${Math.min(...values).toFixed(2)}–${Math.max(...values).toFixed(2)}`
      console.log(`  ${(kind === 'off' ? 'receipts: false' : kind === 'memory' ? 'memory store' : 'Redis store').padEnd(18)}` +
        `${Math.round(median(mine.map((run) => run.rps))).toString().padStart(8)}${Math.round(median(mine.map(perCpu))).toString().padStart(10)}` +
        (kind === 'off' ? '' : `   ${median(paired).toFixed(2)} x (${spread(paired)}), per CPU ${median(pairedCpu).toFixed(2)} x (${spread(pairedCpu)})`))
    }
  }
  if (stopRedis === undefined) console.log('\n(no redis-server installed: the Redis store was left out)')
  console.log(`${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s per server, rotated, Node ${process.version}`)
} finally {
  for (const server of servers) server.child.kill('SIGTERM')
  stopRedis?.()
}
