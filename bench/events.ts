/**
 * Events benchmark, run by hand: `npm run bench:events` (`node --expose-gc dist/bench/events.js`). In the same run:
 *
 * - `events/poll` under autocannon, with a cursor 10 occurrences behind the head of a log of 10,000 (each a 200-byte
 *   payload) and with a cursor at the head (an empty poll), against a `tools/call` of a trivial tool on the same server
 *   and against a bare Fastify route that answers each one's exact bytes;
 * - webhook deliveries a second of one node: N subscriptions (BENCH_HOOKS, 10) to one local receiver, K occurrences
 *   (BENCH_OCCURRENCES, 500) emitted back to back, timed from the first emit to the last delivery received, with the
 *   in-memory log and with `RedisEventLog` on a redis-server of the bench's own; against a bare sender that POSTs
 *   the same N × K bodies, 16 at a time as the node's worker does, with a fresh connection each (as mocapi does) and
 *   with kept-alive connections;
 * - memory: heap per held `events/stream` (against a bare route holding an event stream open), per webhook
 *   subscription stored in `MemoryEventLog` (made through `events/subscribe`), per kept 200-byte occurrence.
 *
 * Servers and the bare sender run in child processes (this script, `server <kind> <port>`); the webhook receiver, a
 * plain `node:http` server answering 204 (and echoing verification challenges), runs in this process, which does
 * nothing else while deliveries are timed. Rounds alternate between the scenarios compared (BENCH_ROUNDS, 3;
 * BENCH_SECONDS, 5), after a discarded warm-up of each; medians, and the median of each run's ratio to the reference
 * run of its round ("paired"). Without redis-server on PATH (or REDIS_URL) the Redis row is left out, saying so.
 */
import autocannon from 'autocannon'
import Fastify from 'fastify'
import { createHash, randomBytes } from 'node:crypto'
import { once } from 'node:events'
import http from 'node:http'
import net from 'node:net'
import { cpus } from 'node:os'
import { setTimeout as sleep } from 'node:timers/promises'
import { fileURLToPath } from 'node:url'
import mocapi, { MemoryEventLog, type StoredSubscription } from '../lib/index.js'
import { RedisEventLog } from '../lib/redis/index.js'
import { forkServer, serveForParent, serverCpu, type Server } from './child.js'
import { alternate as alternateIn, median, redis } from './shared.js'

const SECONDS = Number(process.env.BENCH_SECONDS ?? 5)
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3)
const HOOKS = Number(process.env.BENCH_HOOKS ?? 10)
const OCCURRENCES = Number(process.env.BENCH_OCCURRENCES ?? 500)
const CONNECTIONS = 16
/** Deliveries one node's worker has in flight (its claim batch): the bare sender keeps as many. */
const IN_FLIGHT = 16
const LOG_SIZE = 10_000
const BATCH = 10
const STREAMS = 400
const STORED_SUBSCRIPTIONS = 5_000
const KEPT_OCCURRENCES = 20_000
const KEY = createHash('sha256').update('mocapi bench key').digest('base64')
const TYPE = 'bench.tick'
const script = fileURLToPath(import.meta.url)
const PORTS = { memory: 3131, redis: 3132, bare: 3133, sender: 3134, streams: 3135 }

/** An occurrence's data: 200 bytes of JSON. */
const FILL = 'x'.repeat(200 - JSON.stringify({ id: '00000000', text: '' }).length)
const payload = (n: number) => ({ id: String(n).padStart(8, '0'), text: FILL })
const payloadSchema = {
  type: 'object', properties: { id: { type: 'string' }, text: { type: 'string' } }, required: ['id', 'text'],
} as const

// ---------------------------------------------------------------------------------------------
// The server processes

type Message = { emit: number, from: number } | { heap: true } | { post: { url: string, body: string, count: number, keepAlive: boolean } }

function heapUsed (): number {
  const gc = (globalThis as { gc?: () => void }).gc
  if (gc === undefined) throw new Error('run with node --expose-gc')
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

async function mocapiServer (kind: string): Promise<ReturnType<typeof Fastify>> {
  const app = Fastify({ logger: false })
  const log = kind === 'redis' ? new RedisEventLog({ url: process.env.REDIS_URL as string }) : undefined
  await app.register(mocapi, {
    requestState: { keys: [KEY] },
    principal: (request) => request.headers['x-bench-client'] as string | undefined,
    limits: { streamsPerCaller: STREAMS + 16 },
    events: { log, subscriptionsPerPrincipal: STORED_SUBSCRIPTIONS + 16, webhooks: { allow: ['http://127.0.0.1:*'] } },
  })
  app.mcp.tool({ name: 'add', inputSchema: { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] } as const },
    (args: { a: number, b: number }) => String(args.a + args.b))
  app.mcp.event({ name: TYPE, payloadSchema })
  process.on('message', (message: Message | string) => {
    if (typeof message !== 'object') return
    if ('emit' in message) {
      // Back to back, as an app emits what its upstream hands it.
      const { emit, from } = message
      const emitAll = async (): Promise<void> => {
        for (let i = 0; i < emit; i++) await app.mcp.emit(TYPE, payload(from + i), { eventId: `evt_${process.pid}_${from + i}` })
      }
      emitAll().then(() => process.send?.({ emitted: emit }), (error: unknown) => { throw error })
    } else if ('heap' in message) process.send?.({ heap: heapUsed() })
  })
  return app
}

/** Answers mocapi's bytes (BARE_BODIES, keyed by method and cursor); holds `/hold` open as an event stream. */
function bareServer (): ReturnType<typeof Fastify> {
  const app = Fastify({ logger: false })
  const bodies = JSON.parse(process.env.BARE_BODIES ?? '{}') as Record<string, string>
  const results = Object.fromEntries(Object.entries(bodies).map(([key, text]) => [key, JSON.parse(text).result]))
  app.post('/mcp', async (request) => {
    const body = request.body as { id: number, method: string, params: { cursor?: string } }
    return { jsonrpc: '2.0', id: body.id, result: results[`${body.method}|${body.params.cursor ?? ''}`] }
  })
  app.post('/hold', async (request, reply) => {
    reply.hijack()
    reply.raw.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' })
    reply.raw.write('event: message\ndata: {}\n\n')
  })
  process.on('message', (message: Message | string) => { if (typeof message === 'object' && 'heap' in message) process.send?.({ heap: heapUsed() }) })
  return app
}

/** The bare sender: POSTs `count` times `body`, IN_FLIGHT at a time, a fresh connection each unless `keepAlive`. */
function sender (): void {
  process.on('message', (message: Message | string) => {
    if (typeof message !== 'object' || !('post' in message)) return
    const { url, body, count, keepAlive } = message.post
    const agent = keepAlive ? new http.Agent({ keepAlive: true, maxSockets: IN_FLIGHT }) : false
    let next = 0
    const one = (): Promise<void> => new Promise((resolve, reject) => {
      const n = next++
      const request = http.request(url, {
        method: 'POST',
        agent,
        headers: { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)), 'webhook-id': `bare_${n}`, 'x-mcp-subscription-id': 'bare' },
      }, (response) => {
        response.resume()
        response.on('end', resolve)
      })
      request.on('error', reject)
      request.end(body)
    })
    const loop = async (): Promise<void> => {
      for (;;) {
        if (next >= count) return
        await one()
      }
    }
    Promise.all(Array.from({ length: IN_FLIGHT }, loop)).then(() => {
      if (agent !== false) agent.destroy()
      process.send?.({ posted: count })
    }, (error: unknown) => { throw error })
  })
}

async function serve (kind: string, port: number): Promise<void> {
  if (kind === 'sender') {
    sender()
    serveForParent(async () => {})
    return
  }
  const app = kind === 'bare' ? bareServer() : await mocapiServer(kind)
  await app.listen({ host: '127.0.0.1', port })
  serveForParent(() => app.close())
}

// ---------------------------------------------------------------------------------------------
// The client

const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1.0.0' },
}

function headers (method: string, client?: string): Record<string, string> {
  return {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2026-07-28',
    'mcp-method': method,
    ...(method === 'tools/call' && { 'mcp-name': 'add' }),
    ...(client !== undefined && { 'x-bench-client': client }),
  }
}
const body = (method: string, params: Record<string, unknown>): string =>
  JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: META } })

async function rpc (port: number, method: string, params: Record<string, unknown>, client?: string): Promise<{ text: string, result: any }> {
  const response = await fetch(`http://127.0.0.1:${port}/mcp`, { method: 'POST', headers: headers(method, client), body: body(method, params) })
  const text = await response.text()
  const result = JSON.parse(text).result
  if (response.status !== 200 || result === undefined) throw new Error(`bench setup: ${method} on port ${port} answered ${response.status} ${text.slice(0, 400)}`)
  return { text, result }
}

/** Sends `message` to a child and resolves with its first answer that has `key`. */
function ask<T> (server: Server, message: Message, key: string): Promise<T> {
  return new Promise((resolve) => {
    const listen = (answer: any): void => {
      if (typeof answer !== 'object' || !(key in answer)) return
      server.child.off('message', listen)
      resolve(answer[key] as T)
    }
    server.child.on('message', listen)
    server.child.send(message)
  })
}

const start = (kind: string, port: number, env: Record<string, string> = {}): Promise<Server> =>
  forkServer(script, ['server', kind, String(port)], port, env)

interface Run { rate: number, server: number }

/** Requests a second of one fixed request under autocannon, and the server's CPU (% of a core). */
async function cannon (server: Server, method: string, params: Record<string, unknown>): Promise<Run> {
  const cpu0 = await serverCpu(server)
  const started = performance.now()
  const result = await autocannon({
    url: `http://127.0.0.1:${server.port}/mcp`,
    connections: CONNECTIONS,
    duration: SECONDS,
    requests: [{ method: 'POST', path: '/mcp', headers: headers(method), body: body(method, params) }],
  })
  const ms = performance.now() - started
  if (result.non2xx > 0 || result.errors > 0 || result.timeouts > 0) throw new Error(`${method}: ${result.non2xx} non-2xx, ${result.errors} errors, ${result.timeouts} timeouts`)
  return { rate: result.requests.average, server: Math.round((await serverCpu(server) - cpu0) / ms / 10) }
}

const alternate = (scenarios: Array<() => Promise<Run>>): Promise<Run[][]> => alternateIn(scenarios, ROUNDS)

/** A line: the median rate, its paired ratio to `reference` (and spread), the same per server CPU-second, the CPU. */
function row (label: string, runs: Run[], reference: Run[], unit: string, against = ''): string {
  const rate = median(runs.map((r) => r.rate))
  const paired = runs.map((r, i) => r.rate / reference[i].rate)
  const perCpu = median(runs.map((r, i) => (r.rate / Math.max(r.server, 1)) / (reference[i].rate / Math.max(reference[i].server, 1))))
  const range = `${Math.min(...paired).toFixed(2)}–${Math.max(...paired).toFixed(2)}`
  return `${label.padEnd(46)}${rate.toFixed(0).padStart(8)} ${unit.padEnd(6)}${median(paired).toFixed(2).padStart(6)} x (${range})` +
    `${perCpu.toFixed(2).padStart(7)} x  ${against.padEnd(14)} cpu ${runs.map((r) => r.server).join('/')}`
}

// ---------------------------------------------------------------------------------------------
// 1. events/poll

async function polls (memory: Server, servers: Server[]): Promise<string[]> {
  await ask(memory, { emit: LOG_SIZE - BATCH, from: 0 }, 'emitted')
  const at = { name: TYPE, arguments: {} }
  const behind = (await rpc(memory.port, 'events/poll', { ...at, cursor: null })).result.cursor as string
  await ask(memory, { emit: BATCH, from: LOG_SIZE - BATCH }, 'emitted')
  const ten = await rpc(memory.port, 'events/poll', { ...at, cursor: behind })
  if (ten.result.events.length !== BATCH || ten.result.hasMore !== false) throw new Error(`bench setup: the poll behind the head answered ${ten.text.slice(0, 400)}`)
  const head = ten.result.cursor as string
  const empty = await rpc(memory.port, 'events/poll', { ...at, cursor: head })
  if (empty.result.events.length !== 0) throw new Error(`bench setup: the poll at the head answered ${empty.text}`)
  const added = await rpc(memory.port, 'tools/call', { name: 'add', arguments: { a: 2, b: 3 } })
  if (added.result.content?.[0]?.text !== '5') throw new Error(`bench setup: add answered ${added.text}`)
  const bodies = { [`events/poll|${behind}`]: ten.text, [`events/poll|${head}`]: empty.text, 'tools/call|': added.text }
  const bare = await start('bare', PORTS.bare, { BARE_BODIES: JSON.stringify(bodies) })
  servers.push(bare)
  for (const [params, expected] of [[{ ...at, cursor: behind }, ten.text], [{ ...at, cursor: head }, empty.text]] as const) {
    const got = await rpc(bare.port, 'events/poll', params)
    if (got.text !== expected) throw new Error(`bench setup: the bare route answers ${got.text.slice(0, 200)}\nwhere mocapi answers ${expected.slice(0, 200)}`)
  }

  const addParams = { name: 'add', arguments: { a: 2, b: 3 } }
  const [call, poll10, poll0, bareCall, bare10, bare0] = await alternate([
    () => cannon(memory, 'tools/call', addParams),
    () => cannon(memory, 'events/poll', { ...at, cursor: behind }),
    () => cannon(memory, 'events/poll', { ...at, cursor: head }),
    () => cannon(bare, 'tools/call', addParams),
    () => cannon(bare, 'events/poll', { ...at, cursor: behind }),
    () => cannon(bare, 'events/poll', { ...at, cursor: head }),
  ])
  const ofBare = (runs: Run[], reference: Run[]): string => median(runs.map((r, i) => r.rate / reference[i].rate)).toFixed(2)
  return [
    'autocannon, one fixed request                      rate          paired (spread)  per CPU                   cpu %',
    row('tools/call of add (the reference)', call, call, 'req/s'),
    row(`events/poll, ${BATCH} of ${LOG_SIZE} behind the head`, poll10, call, 'req/s', 'of tools/call'),
    row('events/poll at the head (empty)', poll0, call, 'req/s', 'of tools/call'),
    row('bare route answering tools/call\'s bytes', bareCall, bareCall, 'req/s'),
    row(`bare route answering the ${BATCH}-event poll`, bare10, bareCall, 'req/s', 'of bare call'),
    row('bare route answering the empty poll', bare0, bareCall, 'req/s', 'of bare call'),
    `${''.padEnd(46)}of the bare route with the same bytes: tools/call ${ofBare(call, bareCall)} x, ` +
      `poll of ${BATCH} ${ofBare(poll10, bare10)} x, empty poll ${ofBare(poll0, bare0)} x`,
    `reply bodies: tools/call ${added.text.length} B, poll of ${BATCH} ${ten.text.length} B, empty poll ${empty.text.length} B`,
  ]
}

// ---------------------------------------------------------------------------------------------
// 2. Webhook deliveries

/** The receiver: echoes verification challenges, answers 204 to the rest, and counts them. */
class Receiver {
  readonly server: http.Server
  received = 0
  duplicates = 0
  sample = ''
  #seen = new Set<string>()
  #want = 0
  #done: ((at: number) => void) | undefined

  constructor () {
    this.server = http.createServer((request, response) => {
      const chunks: Buffer[] = []
      request.on('data', (chunk: Buffer) => chunks.push(chunk))
      request.on('end', () => {
        const text = Buffer.concat(chunks).toString()
        if (text.startsWith('{"type":"verification"')) {
          response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ challenge: JSON.parse(text).challenge }))
          return
        }
        response.writeHead(204).end()
        this.sample ||= text
        const key = `${request.headers['x-mcp-subscription-id'] as string}|${request.headers['webhook-id'] as string}`
        if (this.#seen.has(key)) this.duplicates++
        else this.#seen.add(key)
        if (++this.received === this.#want) this.#done?.(performance.now())
      })
    })
  }

  get url (): string {
    return `http://127.0.0.1:${(this.server.address() as net.AddressInfo).port}/hooks`
  }

  /** Resolves with the time the `count`-th delivery from now arrived. */
  expect (count: number): Promise<number> {
    this.received = 0
    this.#seen.clear()
    this.#want = count
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`only ${this.received} of ${count} deliveries within 120 s`)), 120_000)
      this.#done = (at) => {
        clearTimeout(timer)
        resolve(at)
      }
    })
  }
}

async function subscribeAll (server: Server, url: string, count: number, client: string): Promise<void> {
  const secret = `whsec_${randomBytes(32).toString('base64')}`
  for (let i = 0; i < count; i++) {
    await rpc(server.port, 'events/subscribe', { name: TYPE, arguments: { slot: i }, delivery: { mode: 'webhook', url, secret } }, client)
  }
}

async function webhooks (receiver: Receiver, nodes: Record<string, Server>, sender: Server): Promise<string[]> {
  const total = HOOKS * OCCURRENCES
  for (const node of Object.values(nodes)) await subscribeAll(node, receiver.url, HOOKS, 'hooks')
  // Each round emits fresh occurrences: past the LOG_SIZE the poll rows used on the memory node.
  const next: Record<string, number> = { memory: LOG_SIZE, redis: 0 }
  const node = (name: string) => async (): Promise<Run> => {
    const server = nodes[name]
    const cpu0 = await serverCpu(server)
    const done = receiver.expect(total)
    const started = performance.now()
    await ask(server, { emit: OCCURRENCES, from: next[name] }, 'emitted')
    next[name] += OCCURRENCES
    const ms = await done - started
    // The worker is idle once the last delivery is in; its CPU until then is the node's.
    return { rate: total / ms * 1000, server: Math.round((await serverCpu(server) - cpu0) / ms / 10) }
  }
  // The warm-ups run the nodes first: their deliveries give the bare sender its body, a real delivery's bytes.
  const scenarios = Object.keys(nodes).map(node)
  const bareOf = (keepAlive: boolean) => async (): Promise<Run> => {
    const cpu0 = await serverCpu(sender)
    const done = receiver.expect(total)
    const started = performance.now()
    await ask(sender, { post: { url: receiver.url, body: receiver.sample, count: total, keepAlive } }, 'posted')
    const ms = await done - started
    return { rate: total / ms * 1000, server: Math.round((await serverCpu(sender) - cpu0) / ms / 10) }
  }
  const runs = await alternate([...scenarios, bareOf(false), bareOf(true)])
  const bare = runs.at(-2) as Run[]
  const lines = [
    `webhooks: ${HOOKS} subscriptions × ${OCCURRENCES} occurrences = ${total} deliveries a run, first emit to last received`,
  ]
  for (const [i, name] of Object.keys(nodes).entries()) {
    lines.push(row(`one node, ${name === 'memory' ? 'MemoryEventLog' : 'RedisEventLog'}`, runs[i], bare, 'del/s', 'of bare POSTs'))
  }
  lines.push(row('bare sender, a fresh connection each (reference)', bare, bare, 'POST/s'))
  lines.push(row('bare sender, kept-alive connections', runs.at(-1) as Run[], bare, 'POST/s', 'of bare POSTs'))
  lines.push(`delivery body ${Buffer.byteLength(receiver.sample)} B; duplicates received in the last run: ${receiver.duplicates}`)
  return lines
}

// ---------------------------------------------------------------------------------------------
// 3. Memory

/** Opens an `events/stream` (or the bare route's held stream) and reads it; resolves once its first bytes came. */
async function openStream (port: number, path: string, client: string): Promise<net.Socket> {
  const text = body('events/stream', { name: TYPE, arguments: {} })
  const socket = net.connect(port, '127.0.0.1')
  await once(socket, 'connect')
  socket.write(`POST ${path} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n` +
    `mcp-protocol-version: 2026-07-28\r\nmcp-method: events/stream\r\nx-bench-client: ${client}\r\ncontent-length: ${Buffer.byteLength(text)}\r\n\r\n${text}`)
  const [first] = await once(socket, 'data') as [Buffer]
  if (!first.toString().startsWith('HTTP/1.1 200')) throw new Error(`bench setup: the stream answered ${first.toString().slice(0, 300)}`)
  socket.on('data', () => {})
  return socket
}

/** Heap bytes per held stream in `server`: STREAMS of them opened, after GC, against the heap before. */
async function perStream (server: Server, path: string): Promise<number> {
  // One opened and closed first, so the heap before holds the code a stream runs.
  const warm = await openStream(server.port, path, 'warm')
  warm.destroy()
  await sleep(200)
  const before = await ask<number>(server, { heap: true }, 'heap')
  const sockets: net.Socket[] = []
  for (let i = 0; i < STREAMS; i++) sockets.push(await openStream(server.port, path, `streamer-${i % 8}`))
  await sleep(200)
  const after = await ask<number>(server, { heap: true }, 'heap')
  for (const socket of sockets) socket.destroy()
  return (after - before) / STREAMS
}

/** In this process: heap per subscription stored through `events/subscribe`, and per kept 200-byte occurrence. */
async function inProcess (receiver: Receiver): Promise<{ perSubscription: number, perOccurrence: number[], sealed: number }> {
  let sealed = 0
  // Notes the length of what it stores, and stores it as MemoryEventLog does.
  const log = new (class extends MemoryEventLog {
    override putSubscription (subscription: StoredSubscription, maxPerOwner: number): Promise<'stored' | 'full'> {
      sealed = subscription.sealed.length
      return super.putSubscription(subscription, maxPerOwner)
    }
  })()
  const app = Fastify({ logger: false })
  await app.register(mocapi, {
    requestState: { keys: [KEY] },
    principal: () => 'subscriber',
    events: { log, subscriptionsPerPrincipal: STORED_SUBSCRIPTIONS + 16, webhooks: { allow: ['http://127.0.0.1:*'] } },
  })
  app.mcp.event({ name: TYPE, payloadSchema })
  app.mcp.event({ name: `${TYPE}.kept`, payloadSchema })
  await app.ready()
  const secret = `whsec_${randomBytes(32).toString('base64')}`
  const subscribe = async (slot: number): Promise<any> => {
    const reply = await app.inject({
      method: 'POST',
      url: '/mcp',
      headers: headers('events/subscribe'),
      payload: body('events/subscribe', { name: TYPE, arguments: { slot }, delivery: { mode: 'webhook', url: receiver.url, secret } }),
    })
    return reply.json()
  }
  // The first is verified (a POST to the receiver); later ones find the callback verified, as a client's refreshes do.
  const first = await subscribe(-1)
  if (typeof first.result?.id !== 'string') throw new Error(`bench setup: events/subscribe answered ${JSON.stringify(first)}`)
  let before = heapUsed()
  for (let i = 0; i < STORED_SUBSCRIPTIONS; i++) await subscribe(i)
  const perSubscription = (heapUsed() - before) / STORED_SUBSCRIPTIONS

  // A type no one subscribed to: its appends make no fan-out job, so the heap holds the occurrences alone. Once with
  // the eventId mocapi makes (a UUID), once with the app's own (`evt_` and a number, as an upstream's id).
  await app.mcp.emit(`${TYPE}.kept`, payload(0))
  const perOccurrence = []
  for (const own of [false, true]) {
    before = heapUsed()
    for (let i = 1; i <= KEPT_OCCURRENCES; i++) await app.mcp.emit(`${TYPE}.kept`, payload(i), own ? { eventId: `evt_${i}` } : {})
    perOccurrence.push((heapUsed() - before) / KEPT_OCCURRENCES)
  }
  await app.close()
  return { perSubscription, perOccurrence, sealed }
}

// ---------------------------------------------------------------------------------------------
// Redis

// ---------------------------------------------------------------------------------------------

async function main (): Promise<void> {
  const servers: Server[] = []
  const redisServer = await redis()
  const receiver = new Receiver()
  receiver.server.listen(0, '127.0.0.1')
  await once(receiver.server, 'listening')
  try {
    const memory = await start('memory', PORTS.memory)
    servers.push(memory)
    const pollLines = await polls(memory, servers)

    const nodes: Record<string, Server> = { memory }
    if (redisServer !== undefined) {
      nodes.redis = await start('redis', PORTS.redis, { REDIS_URL: redisServer.url })
      servers.push(nodes.redis)
    }
    const sender = await start('sender', PORTS.sender)
    servers.push(sender)
    const hookLines = await webhooks(receiver, nodes, sender)

    const streamer = await start('memory', PORTS.streams)
    servers.push(streamer)
    const bare = servers.find((server) => server.port === PORTS.bare) as Server
    const streamBytes = await perStream(streamer, '/mcp')
    const bareStreamBytes = await perStream(bare, '/hold')
    const stored = await inProcess(receiver)

    console.log(`\n${CONNECTIONS} connections, ${ROUNDS} rounds of ${SECONDS} s per scenario, alternating, Node ${process.version}, ${cpus().length} CPUs`)
    console.log('medians; "paired": the median ratio of each run to the reference run of its round, in rate and in rate per CPU-second of')
    console.log('the server (of the node, of the sender); cpu: that process\'s, % of a core\n')
    for (const line of pollLines) console.log(line)
    console.log('')
    for (const line of hookLines) console.log(line)
    if (redisServer === undefined) console.log('RedisEventLog: no redis-server on PATH and no REDIS_URL: its row is left out')
    console.log('\nmemory (heap after GC)')
    console.log(`per held events/stream (${STREAMS} open, each read): ${(streamBytes / 1024).toFixed(1)} KiB; ` +
      `a bare route holding an event stream open: ${(bareStreamBytes / 1024).toFixed(1)} KiB (${(streamBytes / bareStreamBytes).toFixed(2)} x)`)
    console.log(`per webhook subscription in MemoryEventLog (${STORED_SUBSCRIPTIONS} through events/subscribe, sealed record ${stored.sealed} characters): ` +
      `${(stored.perSubscription / 1024).toFixed(2)} KiB`)
    console.log(`per kept occurrence of a 200-byte payload (MemoryEventLog, ${KEPT_OCCURRENCES} of each): ${stored.perOccurrence[0].toFixed(0)} B ` +
      `with the eventId emit makes, ${stored.perOccurrence[1].toFixed(0)} B with the app's own (evt_<n>)`)
  } finally {
    for (const server of servers) server.child.kill()
    redisServer?.child?.kill()
    receiver.server.closeAllConnections()
    receiver.server.close()
  }
}

if (process.argv[2] === 'server') await serve(process.argv[3], Number(process.argv[4]))
else await main()
