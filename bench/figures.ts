/**
 * The figures the hardening work is judged by, measured by hand: `npm run bench:figures` (it runs
 * `node --expose-gc dist/bench/figures.js`). Each is printed with how it was taken.
 *
 * - heap after 20,000 add/remove cycles of a tool whose inputSchema has an `$id`;
 * - memory held by 20 listen streams whose clients never read, with the default stream limits;
 * - the slowest resource-template match at the URI length cap (a near miss, backtracking's worst case);
 * - what fingerprinting costs a one-question flow (both rounds);
 * - what the OpenTelemetry observer costs a call when no SDK is registered.
 */
import Fastify from 'fastify'
import { once } from 'node:events'
import { connect, type Socket } from 'node:net'
import { Writable } from 'node:stream'
import { setImmediate as tick, setTimeout as sleep } from 'node:timers/promises'
import mocapi, { requestedSchema } from '../lib/index.js'
import { CallState } from '../lib/call.js'
import { McpContext } from '../lib/context.js'
import { FormAnswers } from '../lib/elicitation/answers.js'
import { SchemaCompiler } from '../lib/json-schema.js'
import { FormQuestion } from '../lib/elicitation/questions.js'
import { schemaJson } from '../lib/elicitation/schema.js'
import { UriTemplate } from '../lib/features/uri-template.js'
import { digest } from '../lib/seal/digest.js'
import { fingerprint } from '../lib/replay/fingerprint.js'
import { LIMITS } from '../lib/options.js'

const DEFAULT_STREAM_BUFFER_BYTES = LIMITS.streamBufferBytes
const DEFAULT_URI_LENGTH = LIMITS.uriLength
import { callTracer } from '../lib/transport/tracing.js'

/** The checks of form answers of one registration, for fingerprints. */
const forms = new FormAnswers(new SchemaCompiler())

const gc = (globalThis as { gc?: () => void }).gc ?? ((): never => { throw new Error('run with node --expose-gc') })()
const MB = 1024 * 1024
const mb = (bytes: number): string => `${(bytes / MB).toFixed(1)} MB`

function heapUsed (): number {
  gc()
  gc()
  return process.memoryUsage().heapUsed
}

/** The median of `runs` timings of `fn`, each over `iterations` calls, in µs per call. */
function time (fn: () => void, iterations: number, runs = 7): number {
  const results: number[] = []
  for (let run = 0; run < runs; run++) {
    const start = process.hrtime.bigint()
    for (let i = 0; i < iterations; i++) fn()
    results.push(Number(process.hrtime.bigint() - start) / 1000 / iterations)
  }
  return results.sort((a, b) => a - b)[runs >> 1]
}

async function addRemoveCycles (): Promise<void> {
  const app = Fastify({ logger: false })
  await app.register(mocapi)
  await app.ready()
  const definition = {
    name: 'cycled',
    inputSchema: { $id: 'https://example.com/cycled', type: 'object', properties: { a: { type: 'string', pattern: '^[a-z]+$' } }, required: ['a'] },
  }
  // One cycle first, so the compiler's Ajv instance counts in the heap before.
  app.mcp.tool(definition, () => 'ok')
  app.mcp.removeTool('cycled')
  await tick()
  const before = heapUsed()
  for (let i = 0; i < 20_000; i++) {
    // A new definition object each time, as an app that builds its tools from data registers them.
    app.mcp.tool(structuredClone(definition), () => 'ok')
    app.mcp.removeTool('cycled')
  }
  // Each add and remove announces a list change on the next microtask: let those run first.
  await tick()
  const after = heapUsed()
  console.log(`20,000 add/remove cycles of a tool with an $id schema: heap ${mb(before)} before, ${mb(after)} after`)
  await app.close()
}

/** A client that sends a listen request and never reads what comes back. */
async function stalledListen (port: number, uri: string, id: number): Promise<Socket> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'subscriptions/listen',
    params: {
      notifications: { resourceSubscriptions: [uri] },
      _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} },
    },
  })
  const socket = connect(port, '127.0.0.1')
  await once(socket, 'connect')
  socket.write(`POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\n` +
    `mcp-protocol-version: 2026-07-28\r\nmcp-method: subscriptions/listen\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`)
  socket.pause()
  socket.on('error', () => {})
  return socket
}

async function nonReadingStreams (): Promise<void> {
  const ended = { streams: 0 }
  const logs = new Writable({
    write (chunk: Buffer, _encoding, done) {
      if (chunk.toString().includes('ended an event stream')) ended.streams++
      done()
    },
  })
  const app = Fastify({ logger: { level: 'warn', stream: logs } })
  // One caller opens all 20 (the default allows 16 per caller).
  await app.register(mocapi, { limits: { streamsPerCaller: 20 } })
  app.mcp.resourceTemplate({ uriTemplate: 'test://{path}', name: 'any' }, (_uri, v) => v.path)
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  const uri = `test://${'x'.repeat(4000)}`
  const before = process.memoryUsage()
  const base = heapUsed() + before.external
  const sockets: Socket[] = []
  for (let i = 0; i < 20; i++) sockets.push(await stalledListen(port, uri, i))
  await sleep(100)
  let peak = 0
  let sent = 0
  for (; ended.streams < 20 && sent < 200_000; sent++) {
    app.mcp.notifyResourceUpdated(uri)
    if (sent % 100 === 0) {
      await tick()
      // After a full GC: what the streams hold, not the garbage each update leaves.
      peak = Math.max(peak, heapUsed() + process.memoryUsage().external - base)
    }
  }
  const now = process.memoryUsage()
  const held = heapUsed() + now.external - base
  console.log(`20 listen streams that never read (limits.streamBufferBytes ${mb(DEFAULT_STREAM_BUFFER_BYTES)}): ${ended.streams} cut off after ${sent} updates of 4 kB;` +
    ` heap + external (after GC) at most ${mb(peak)} above the start, ${mb(held)} once they were cut`)
  for (const socket of sockets) socket.destroy()
  await app.close()
}

function templateWorstCase (): void {
  const cases = [
    { template: 'logs://{service}.{date}.{level}', uri: 'logs://' + 'a.'.repeat((DEFAULT_URI_LENGTH - 8) / 2) + '!' },
    { template: 'pairs://{a}{b}', uri: 'pairs://' + 'x'.repeat(DEFAULT_URI_LENGTH - 9) + '!' },
    { template: 'x/{a}/{b}/{c}/{d}', uri: 'x/' + 'a/'.repeat((DEFAULT_URI_LENGTH - 3) / 2) + '%' },
  ]
  for (const { template, uri } of cases) {
    const compiled = new UriTemplate(template, 'bench')
    if (compiled.match(uri) !== undefined) throw new Error(`${template} matched ${uri.slice(0, 40)}…`)
    const us = time(() => compiled.match(uri), 50)
    console.log(`template ${template} against a ${uri.length}-character near miss: ${(us / 1000).toFixed(3)} ms per match`)
  }
}

function fingerprintCost (): void {
  // The bench flow's question. Its fingerprint is a digest of the schema's JSON text and one of the message: the
  // first is made once per builder (so once for a hoisted schema), the second on every ask.
  const schema = requestedSchema().boolean('confirm').choose('cabin', ['economy', 'business'])
  const json = schemaJson(schema)
  const text = 'Book a flight to Lisbon?'
  const both = time(() => { digest('elicit', json); fingerprint(new FormQuestion(text, schema, forms)) }, 20_000)
  const hoisted = time(() => { fingerprint(new FormQuestion(text, schema, forms)) }, 20_000)
  console.log(`fingerprinting one question (SHA-256 of the schema's JSON text and of the message): ${both.toFixed(2)} µs; ` +
    `with the schema's digest already made (its builder hoisted): ${hoisted.toFixed(2)} µs, ` +
    `so a one-question flow, which asks twice, spends ${(2 * hoisted).toFixed(2)} to ${(2 * both).toFixed(2)} µs on fingerprints`)
}

async function tracingCost (): Promise<void> {
  const api = await import('@opentelemetry/api')
  const observer = callTracer(api as never)
  const app = Fastify({ logger: false })
  // A context as the route makes it, around a request injected once.
  let request: unknown
  app.post('/', async (r) => {
    request = r
    return 'ok'
  })
  await app.inject({ method: 'POST', url: '/', payload: {} })
  const stream = { signal: new AbortController().signal, notify: () => true }
  const ctx = new McpContext(new CallState(request as never, { id: 1, method: 'tools/call', params: { name: 'add', arguments: {} } },
    { protocolVersion: '2026-07-28', capabilities: {}, info: undefined, logLevel: undefined }, { value: null, state: 'anonymous' },
    stream as never, undefined as never, forms))
  const reply = { elapsedTime: 1 }
  const us = time(() => { observer.begin(request as never, ctx).ended({ outcome: 'complete', round: 1 }, reply as never) }, 100_000)
  console.log(`the OpenTelemetry observer with no SDK registered: ${us.toFixed(2)} µs per call (a call begun and ended: with nothing registered it makes no span)`)
  await app.close()
}

console.log(`Node ${process.version}`)
await addRemoveCycles()
await nonReadingStreams()
templateWorstCase()
fingerprintCost()
await tracingCost()
