/**
 * Tasks benchmark, run by hand: `npm run bench:tasks`. In the same run, against a plain `tools/call` of the same
 * tool on the same server:
 *
 * - a task's whole life, created by `tools/call` and polled with `tasks/get` until `completed` (the tool suggests a
 *   pollInterval of 0, so the client polls at once), with the in-memory store and with `RedisTaskStore`;
 * - `tasks/get` alone, of one completed task, with each store, and a bare Fastify route answering the same bytes;
 * - what one `tasks/get` costs the store (reads counted through a store that counts them);
 * - the memory a stored task takes in `MemoryTaskStore`;
 * - a bare Redis `GET` round trip from Node (node-redis), one at a time and 16 at once, beside the Redis figures.
 *
 * Each server runs in its own child process (this script, `server <kind> <port>`), 16 connections, rounds
 * alternating between the scenarios compared (BENCH_ROUNDS, 3; BENCH_SECONDS, 5), medians reported. The Redis rows
 * need `redis-server` on PATH (a throwaway one is started on a loopback port) or REDIS_URL; without either they are
 * left out, and the bench says so.
 */
import autocannon from 'autocannon'
import Fastify from 'fastify'
import { createHash } from 'node:crypto'
import http from 'node:http'
import { cpus } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import { createClient } from 'redis'
import mocapi, { MemoryTaskStore, type StoredTask, type TaskStore } from '../lib/index.js'
import { RedisTaskStore } from '../lib/redis/index.js'
import { forkServer, serveForParent, serverCpu, type Server } from './child.js'
import { alternate as alternateIn, median, redis } from './shared.js'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const CONNECTIONS = 16
const KEY = createHash('sha256').update('mocapi bench key').digest('base64')
const TASKS = { 'io.modelcontextprotocol/tasks': {} }
const script = fileURLToPath(import.meta.url)

/** The tools of a benchmark server: `sum` as a plain call or a task, `kept` for a task that lives through the bench. */
function tools (app: ReturnType<typeof Fastify>): void {
  const inputSchema = { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] } as const
  // A task of `sum` lives one second: the flows create thousands a second, and the store keeps each until it expires.
  app.mcp.tool({ name: 'sum', inputSchema, task: { support: 'optional', ttl: 1_000, pollInterval: 0 } }, (args: { a: number, b: number }) => String(args.a + args.b))
  app.mcp.tool({ name: 'kept', inputSchema, task: { support: 'optional', ttl: 3_600_000, pollInterval: 0 } }, (args: { a: number, b: number }) => String(args.a + args.b))
}

async function serve (kind: string, port: number): Promise<void> {
  const app = Fastify({ logger: false })
  if (kind === 'bare') {
    const bodies = JSON.parse(process.env.BARE_BODIES ?? '{}') as Record<string, string>
    const results = Object.fromEntries(Object.entries(bodies).map(([method, text]) => [method, JSON.parse(text).result]))
    app.post('/mcp', async (request) => {
      const body = request.body as { id: number, method: string }
      return { jsonrpc: '2.0', id: body.id, result: results[body.method] }
    })
  } else {
    const store: TaskStore = kind === 'redis'
      ? new RedisTaskStore({ url: process.env.REDIS_URL as string })
      : new MemoryTaskStore({ maxTasks: 100_000 })
    await app.register(mocapi, {
      requestState: { keys: [KEY] },
      tasks: { store },
      limits: { tasksPerCaller: 100_000 },
      // Each flow is its own caller, as each user of a real server holds a few tasks at most.
      principal: (request) => request.headers['x-bench-client'] as string | undefined,
    })
    tools(app)
  }
  await app.listen({ host: '127.0.0.1', port })
  // `node --cpu-prof dist/bench/tasks.js server memory 3111`, then Ctrl-C, writes a profile.
  serveForParent(() => app.close())
}

// ---------------------------------------------------------------------------------------------
// The client

const agent = new http.Agent({ keepAlive: true, maxSockets: CONNECTIONS })

function headers (method: string, name: string, client: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    'mcp-name': name,
    'x-bench-client': client,
  }
}

function body (method: string, params: Record<string, unknown>, tasks: boolean): string {
  return JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method,
    params: {
      ...params,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': '2026-07-28',
        'io.modelcontextprotocol/clientCapabilities': tasks ? { extensions: TASKS } : {},
      },
    },
  })
}

function post (port: number, head: Record<string, string>, text: string): Promise<any> {
  return new Promise((resolve, reject) => {
    const request = http.request({ host: '127.0.0.1', port, method: 'POST', path: '/mcp', agent, headers: { ...head, 'content-length': Buffer.byteLength(text) } }, (response) => {
      let reply = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => { reply += chunk })
      response.on('end', () => {
        const json = JSON.parse(reply)
        if (json.result === undefined) reject(new Error(`port ${port}: ${reply}`))
        else resolve(json.result)
      })
    })
    request.on('error', reject)
    request.end(text)
  })
}

const call = (port: number, client: string, tasks: boolean, name = 'sum'): Promise<any> =>
  post(port, headers('tools/call', name, client), body('tools/call', { name, arguments: { a: 2, b: 3 } }, tasks))
const get = (port: number, client: string, taskId: string): Promise<any> =>
  post(port, headers('tasks/get', taskId, client), body('tasks/get', { taskId }, true))

const start = (kind: string, port: number, env: Record<string, string> = {}): Promise<Server> =>
  forkServer(script, ['server', kind, String(port)], port, env)

interface Run { rate: number, server: number }

/** Operations a second of `operation`, run back to back on 16 loops for SECONDS, and the server's CPU (% of a core). */
async function loops (server: Server, operation: (loop: number, n: number) => Promise<void>): Promise<Run> {
  const cpu0 = await serverCpu(server)
  const started = performance.now()
  const until = started + SECONDS * 1000
  let done = 0
  await Promise.all(Array.from({ length: CONNECTIONS }, async (_, loop) => {
    for (let n = 0; performance.now() < until; n++) {
      await operation(loop, n)
      done++
    }
  }))
  const ms = performance.now() - started
  return { rate: done / ms * 1000, server: Math.round((await serverCpu(server) - cpu0) / ms / 10) }
}

/** Requests a second of one fixed request under autocannon, and the server's CPU. */
async function cannon (server: Server, method: string, name: string, params: Record<string, unknown>, tasks: boolean): Promise<Run> {
  const cpu0 = await serverCpu(server)
  const started = performance.now()
  const result = await autocannon({
    url: `http://127.0.0.1:${server.port}/mcp`,
    connections: CONNECTIONS,
    duration: SECONDS,
    requests: [{ method: 'POST', path: '/mcp', headers: headers(method, name, 'reader'), body: body(method, params, tasks) }],
  })
  const ms = performance.now() - started
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) throw new Error(`${method}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`)
  return { rate: result.requests.average, server: Math.round((await serverCpu(server) - cpu0) / ms / 10) }
}

/** Task flows run, and the tasks/get they took, per store. */
const polled = { memory: { flows: 0, polls: 0 }, redis: { flows: 0, polls: 0 } }

/** A task's whole life: created, then polled until completed, as a client with the extension does it. */
async function taskFlow (port: number, client: string, count: { flows: number, polls: number }): Promise<void> {
  const created = await call(port, client, true)
  if (created.resultType !== 'task') throw new Error(`not a task: ${JSON.stringify(created)}`)
  count.flows++
  for (let polls = 0; ; polls++) {
    const task = await get(port, client, created.taskId)
    count.polls++
    if (task.status === 'completed') {
      if (task.result.content[0].text !== '5') throw new Error(`a wrong result: ${JSON.stringify(task)}`)
      return
    }
    if (task.status !== 'working' || polls > 1_000) throw new Error(`task ${created.taskId}: ${JSON.stringify(task)}`)
  }
}

async function plainCall (port: number, client: string): Promise<void> {
  const result = await call(port, client, false)
  if (result.content[0].text !== '5') throw new Error(`a wrong result: ${JSON.stringify(result)}`)
}

const alternate = (scenarios: Array<() => Promise<Run>>): Promise<Run[][]> => alternateIn(scenarios, ROUNDS)

function row (label: string, runs: Run[], reference: Run[], unit: string): string {
  const rate = median(runs.map((r) => r.rate))
  const paired = median(runs.map((r, i) => r.rate / reference[i].rate))
  return `${label.padEnd(44)}${rate.toFixed(0).padStart(8)} ${unit}${paired.toFixed(2).padStart(8)} x   cpu ${runs.map((r) => r.server).join('/')}`
}

// ---------------------------------------------------------------------------------------------
// In process: store reads per tasks/get, memory per task

/** A MemoryTaskStore that counts its reads. */
class CountingStore extends MemoryTaskStore {
  reads = 0
  override get (id: string): Promise<StoredTask | undefined> {
    this.reads++
    return super.get(id)
  }
}

async function inProcess (): Promise<{ readsPerGet: number, bytesPerTask: number, tasks: number }> {
  const store = new CountingStore({ maxTasks: 100_000 })
  const app = Fastify({ logger: false })
  await app.register(mocapi, { requestState: { keys: [KEY] }, tasks: { store }, limits: { tasksPerCaller: 100_000 } })
  tools(app)
  await app.ready()
  const inject = async (method: string, name: string, params: Record<string, unknown>): Promise<any> => {
    const reply = await app.inject({ method: 'POST', url: '/mcp', headers: headers(method, name, ''), payload: body(method, params, true) })
    return reply.json().result
  }
  const created = await inject('tools/call', 'kept', { name: 'kept', arguments: { a: 2, b: 3 } })
  while ((await inject('tasks/get', created.taskId, { taskId: created.taskId })).status !== 'completed');
  const gets = 1_000
  store.reads = 0
  for (let i = 0; i < gets; i++) await inject('tasks/get', created.taskId, { taskId: created.taskId })
  const readsPerGet = store.reads / gets

  // Memory: completed tasks of `kept` (sealed arguments, ledger and result), held until they expire.
  const gc = (globalThis as { gc?: () => void }).gc
  const count = 10_000
  let bytesPerTask = Number.NaN
  if (gc !== undefined) {
    const store2 = new MemoryTaskStore({ maxTasks: count + 10 })
    const app2 = Fastify({ logger: false })
    await app2.register(mocapi, { requestState: { keys: [KEY] }, tasks: { store: store2 }, limits: { tasksPerCaller: count + 10 } })
    tools(app2)
    await app2.ready()
    // Warm, so the heap measured holds tasks and not the first call's compiled code.
    const one = (): Promise<unknown> => app2.inject({ method: 'POST', url: '/mcp', headers: headers('tools/call', 'kept', ''), payload: body('tools/call', { name: 'kept', arguments: { a: 2, b: 3 } }, true) })
    await one()
    await sleep(50)
    gc(); gc()
    const before = process.memoryUsage().heapUsed
    for (let i = 0; i < count - 1; i++) await one()
    await sleep(200)
    gc(); gc()
    bytesPerTask = (process.memoryUsage().heapUsed - before) / (count - 1)
    await app2.close()
  }
  await app.close()
  return { readsPerGet, bytesPerTask, tasks: count }
}

// ---------------------------------------------------------------------------------------------
// Redis

/** A bare GET round trip from Node: one at a time (µs each), and 16 at once (GETs a second). */
async function redisGet (url: string): Promise<{ oneUs: number, concurrent: number }> {
  const client = createClient({ url })
  client.on('error', () => {})
  await client.connect()
  await client.set('bench:key', 'x'.repeat(600))
  const count = 20_000
  let started = performance.now()
  for (let i = 0; i < count; i++) await client.get('bench:key')
  const oneUs = (performance.now() - started) * 1000 / count
  started = performance.now()
  const until = started + SECONDS * 1000
  let done = 0
  await Promise.all(Array.from({ length: CONNECTIONS }, async () => {
    while (performance.now() < until) {
      await client.get('bench:key')
      done++
    }
  }))
  const concurrent = done / (performance.now() - started) * 1000
  await client.quit()
  return { oneUs, concurrent }
}

// ---------------------------------------------------------------------------------------------

async function main (): Promise<void> {
  const servers: Server[] = []
  const redisServer = await redis()
  try {
    const memory = await start('memory', 3111)
    servers.push(memory)
    // The bare route answers what mocapi answers to tasks/get and to a plain tools/call.
    const kept = await call(memory.port, 'reader', true, 'kept')
    let done
    while ((done = await get(memory.port, 'reader', kept.taskId)).status !== 'completed');
    const bodies = {
      'tasks/get': JSON.stringify({ jsonrpc: '2.0', id: 1, result: done }),
      'tools/call': JSON.stringify({ jsonrpc: '2.0', id: 1, result: await call(memory.port, 'reader', false) }),
    }
    const bare = await start('bare', 3112, { BARE_BODIES: JSON.stringify(bodies) })
    servers.push(bare)
    const redisNode = redisServer === undefined ? undefined : await start('redis', 3113, { REDIS_URL: redisServer.url })
    if (redisNode !== undefined) servers.push(redisNode)
    let redisKept: string | undefined
    if (redisNode !== undefined) {
      redisKept = (await call(redisNode.port, 'reader', true, 'kept')).taskId as string
      while ((await get(redisNode.port, 'reader', redisKept)).status !== 'completed');
    }

    const sumArgs = { name: 'sum', arguments: { a: 2, b: 3 } }
    const getOf = (server: Server, taskId: string) => () => cannon(server, 'tasks/get', taskId, { taskId }, true)
    const plainOf = (server: Server) => () => cannon(server, 'tools/call', 'sum', sumArgs, false)
    const [memCall, memGet, bareGet, bareCall] = await alternate([plainOf(memory), getOf(memory, kept.taskId), getOf(bare, kept.taskId), plainOf(bare)])
    const redisCannon = redisNode === undefined ? undefined : await alternate([plainOf(redisNode), getOf(redisNode, redisKept as string)])

    const flowOf = (server: Server, prefix: 'memory' | 'redis') => () =>
      loops(server, (loop, n) => taskFlow(server.port, `${prefix}-${loop}-${n}`, polled[prefix]))
    const callLoopOf = (server: Server) => () => loops(server, (loop) => plainCall(server.port, `caller-${loop}`))
    const [memCalls, memFlows] = await alternate([callLoopOf(memory), flowOf(memory, 'memory')])
    const redisLoops = redisNode === undefined ? undefined : await alternate([callLoopOf(redisNode), flowOf(redisNode, 'redis')])

    const inproc = await inProcess()
    const get1 = redisServer === undefined ? undefined : await redisGet(redisServer.url)

    console.log(`\n${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s per scenario, alternating, Node ${process.version}, ${cpus().length} CPUs`)
    console.log('medians; "paired": the median ratio of each run to the reference run of its round; cpu: the server\'s, % of a core\n')
    console.log('autocannon, one fixed request                   req/s   paired')
    console.log(row('tools/call (the reference), memory store', memCall, memCall, 'req/s'))
    console.log(row('tasks/get of a completed task, memory store', memGet, memCall, 'req/s') + '   of tools/call')
    console.log(row('bare route answering tools/call\'s bytes', bareCall, bareCall, 'req/s'))
    console.log(row('bare route answering tasks/get\'s bytes', bareGet, bareGet, 'req/s'))
    console.log(`${''.padEnd(44)}tools/call ${median(memCall.map((r, i) => r.rate / bareCall[i].rate)).toFixed(2)} x, tasks/get ${median(memGet.map((r, i) => r.rate / bareGet[i].rate)).toFixed(2)} x of the bare route`)
    if (redisCannon !== undefined) {
      console.log(row('tools/call, Redis store server', redisCannon[0], redisCannon[0], 'req/s'))
      console.log(row('tasks/get, RedisTaskStore', redisCannon[1], redisCannon[0], 'req/s') + '   of tools/call')
    }
    console.log('\nwhole operations, 16 loops back to back           op/s   paired')
    console.log(row('plain tools/call, memory store server', memCalls, memCalls, 'op/s '))
    console.log(row('task: create, poll until completed, memory', memFlows, memCalls, 'op/s ') + '   of tools/call')
    if (redisLoops !== undefined) {
      console.log(row('plain tools/call, Redis store server', redisLoops[0], redisLoops[0], 'op/s '))
      console.log(row('task: create, poll until completed, Redis', redisLoops[1], redisLoops[0], 'op/s ') + '   of tools/call')
    }
    const perFlow = (count: { flows: number, polls: number }): string => (count.polls / count.flows).toFixed(2)
    console.log(`tasks/get per task flow: ${perFlow(polled.memory)} with the memory store${redisLoops === undefined ? '' : `, ${perFlow(polled.redis)} with Redis`}`)
    console.log(`\nstore reads per tasks/get: ${inproc.readsPerGet.toFixed(2)}`)
    console.log(Number.isNaN(inproc.bytesPerTask)
      ? 'memory per stored task: run with node --expose-gc to measure it'
      : `memory per stored task (MemoryTaskStore, ${inproc.tasks} completed tasks): ${(inproc.bytesPerTask / 1024).toFixed(2)} KiB`)
    if (get1 === undefined) console.log('Redis: no redis-server on PATH and no REDIS_URL: the Redis rows are left out')
    else console.log(`bare Redis GET from Node (node-redis, 600 bytes): ${get1.oneUs.toFixed(0)} µs one at a time, ${get1.concurrent.toFixed(0)} GET/s 16 at once`)
  } finally {
    for (const server of servers) server.child.kill()
    redisServer?.child?.kill()
    agent.destroy()
  }
}

if (process.argv[2] === 'server') await serve(process.argv[3], Number(process.argv[4]))
else await main()
