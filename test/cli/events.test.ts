import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { execFileSync, spawn } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PassThrough } from 'node:stream'
import { main } from '../../cli/main.js'
import { createTestClient } from '../../lib/testing/index.js'
import type { MocapiOptions } from '../../lib/index.js'
import { build } from '../helpers.js'
import { run } from './run.js'

type Test = Parameters<typeof build>[0]

const ENTRY = ['--input-type=module', '-e', `import { main, processIo } from ${JSON.stringify(new URL('../../cli/main.js', import.meta.url).href)}
process.exitCode = await main(process.argv.slice(2), processIo())`, 'mocapi']

const incident = {
  name: 'incident.created',
  description: 'A new incident on one service',
  inputSchema: { type: 'object', properties: { service: { type: 'string' }, level: { type: 'integer' } }, required: ['service'] },
  payloadSchema: { type: 'object', properties: { service: { type: 'string' }, severity: { type: 'string' } }, required: ['service', 'severity'] },
  match: (args: { service: string }, data: { service: string }) => data.service === args.service,
} as const

interface Server { app: FastifyInstance, url: string, polls: number[] }

/** A listening app with the incident type (and `setup`'s); `polls` holds when each events/poll came. */
async function server (t: Test, options: MocapiOptions = {}, setup?: (app: FastifyInstance, polls: number[]) => void): Promise<Server> {
  const polls: number[] = []
  const app = await build(t, options, (app) => {
    app.mcp.event(incident)
    setup?.(app, polls)
    app.addHook('onRequest', async (request) => {
      if (request.headers['mcp-method'] === 'events/poll') polls.push(Date.now())
    })
  }, { forceCloseConnections: true })
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`, polls }
}

/** A cursor at the log's end now, for `service`, as `mocapi events --cursor` takes it. */
async function cursorNow (url: string, service = 'api'): Promise<string> {
  const result = await createTestClient(url).request('events/poll', { name: 'incident.created', arguments: { service }, cursor: null })
  return result.cursor as string
}

function emit (app: FastifyInstance, eventId: string, service = 'api', severity = 'P1'): Promise<string> {
  return app.mcp.emit('incident.created', { service, severity }, { eventId })
}

function lines (text: string): Array<Record<string, unknown>> {
  return text.split('\n').filter((line) => line !== '').map((line) => JSON.parse(line))
}

/** The CLI run in this process, its output readable while it runs. */
function start (argv: string[]) {
  let stdout = ''
  let stderr = ''
  const out = new PassThrough().on('data', (chunk) => { stdout += chunk })
  const err = new PassThrough().on('data', (chunk) => { stderr += chunk })
  const done = main(argv, { stdin: new PassThrough(), stdout: out, stderr: err, env: {} })
  return { done, stdout: () => stdout, stderr: () => stderr }
}

async function until (what: () => boolean, label: string): Promise<void> {
  for (let i = 0; i < 500; i++) {
    if (what()) return
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`timed out waiting for ${label}`)
}

t.test('mocapi events <url> lists the types: name, arguments, delivery modes, description', async (t) => {
  const { url } = await server(t, {}, (app) => {
    app.mcp.event({ name: 'deploy.done', description: 'Shipped \u001b]52;c;aGk=\u0007now', payloadSchema: { type: 'object' }, delivery: ['push'] })
  })
  const { code, stdout, stderr } = await run(['events', url])
  t.equal(code, 0, stderr)
  t.equal(stdout, 'incident.created(service: string, level?: integer)  [poll push webhook]  A new incident on one service\n' +
    'deploy.done()  [push]  Shipped \u241bnow\n', 'an escape sequence in a description is shown, not run')
  const json = await run(['events', url, '--json'])
  t.same(JSON.parse(json.stdout).events.map((type: { name: string, delivery: string[] }) => [type.name, type.delivery]),
    [['incident.created', ['poll', 'push', 'webhook']], ['deploy.done', ['push']]])
})

t.test('following by poll from a cursor: one JSON line an occurrence, --max stops, the cursor resumes', async (t) => {
  const { app, url } = await server(t)
  const cursor = await cursorNow(url)
  await emit(app, 'inc-1')
  await emit(app, 'db-1', 'db')
  await emit(app, 'inc-2', 'api', 'P2')
  await emit(app, 'inc-3', 'api', 'P3')
  const first = await run(['events', url, 'incident.created', '--args', '{"service":"api"}', '--cursor', cursor, '--max', '2'])
  t.equal(first.code, 0, first.stderr)
  const printed = lines(first.stdout)
  t.same(printed.map((line) => Object.keys(line)), [['eventId', 'timestamp', 'data'], ['eventId', 'timestamp', 'data']])
  t.same(printed.map((line) => [line.eventId, line.data]), [['inc-1', { service: 'api', severity: 'P1' }], ['inc-2', { service: 'api', severity: 'P2' }]])
  t.match(printed[0].timestamp, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/)
  t.match(first.stderr, /^following incident\.created by poll \(at most 2\); Ctrl-C stops\ncursor: \S+\n$/)
  const resume = /cursor: (\S+)/.exec(first.stderr)?.[1] as string
  const second = await run(['events', url, 'incident.created', '--arg', 'service=api', '--cursor', resume, '--max', '1'])
  t.same(lines(second.stdout).map((line) => line.eventId), ['inc-3'], 'the printed cursor resumes after the last occurrence printed')
})

t.test('a poll starting now waits nextPollMs, and never less than 1000 ms, between polls', async (t) => {
  for (const [interval, least] of [[10, 1000], [1300, 1300]]) {
    const { url, polls } = await server(t, { events: { pollInterval: interval } }, (app, polls) => {
      app.addHook('onResponse', async (request) => {
        if (request.headers['mcp-method'] === 'events/poll' && polls.length === 1) await emit(app, `late-${interval}`)
      })
    })
    const { code, stdout, stderr } = await run(['events', url, 'incident.created', '--args', '{"service":"api"}', '--max', '1'])
    t.equal(code, 0, stderr)
    t.same(lines(stdout).map((line) => line.eventId), [`late-${interval}`])
    t.equal(polls.length, 2)
    t.ok(polls[1] - polls[0] >= least, `nextPollMs ${interval}: the second poll came ${polls[1] - polls[0]} ms after the first (at least ${least})`)
  }
})

t.test('a server error is printed with its JSON-RPC code; Unsupported gets a hint', async (t) => {
  const { url } = await server(t, {}, (app) => {
    app.mcp.event({ name: 'deploy.done', payloadSchema: { type: 'object' }, delivery: ['push'] })
  })
  const unknown = await run(['events', url, 'nope', '--max', '1'])
  t.equal(unknown.code, 1)
  t.match(unknown.stderr, /^mocapi: error -32023: Unknown event type: nope$/m)
  const stream = await run(['events', url, 'nope', '--follow', 'stream', '--max', '1'])
  t.equal(stream.code, 1)
  t.match(stream.stderr, /^mocapi: error -32023: Unknown event type: nope$/m)
  const bad = await run(['events', url, 'incident.created', '--args', '{"service":7}', '--max', '1'])
  t.equal(bad.code, 1)
  t.match(bad.stderr, /^mocapi: error -32602: .*service/m)
  const unsupported = await run(['events', url, 'deploy.done', '--max', '1'])
  t.equal(unsupported.code, 1)
  t.match(unsupported.stderr, /^mocapi: error -32026: .*\nhint: deploy\.done may not offer poll; mocapi events <url> lists what each type offers\n$/m)
})

t.test('following over a held stream: replayed and live occurrences, then --max ends it', async (t) => {
  const { app, url } = await server(t, { events: { heartbeat: 100 } })
  const cursor = await cursorNow(url)
  await emit(app, 'inc-1')
  const cli = start(['events', url, 'incident.created', '--follow', 'stream', '--args', '{"service":"api"}', '--cursor', cursor, '--max', '2'])
  await until(() => cli.stdout() !== '', 'the replayed occurrence')
  await emit(app, 'db-1', 'db')
  await emit(app, 'inc-2', 'api', 'P2')
  t.equal(await cli.done, 0, cli.stderr())
  t.same(lines(cli.stdout()).map((line) => [line.eventId, (line.data as { severity: string }).severity]), [['inc-1', 'P1'], ['inc-2', 'P2']])
  t.match(cli.stderr(), /^following incident\.created by stream \(at most 2\); Ctrl-C stops\ncursor: \S+\n/)
})

t.test('a stream the server terminates ends with its error and code', async (t) => {
  const { app, url } = await server(t, { events: { heartbeat: 100 } })
  const cli = start(['events', url, 'incident.created', '--follow', 'stream', '--args', '{"service":"api"}'])
  await until(() => /cursor: /.test(cli.stderr()), 'the stream to be active')
  await until(() => cli.stderr().split('cursor: ').length > 2, 'a heartbeat with a newer cursor')
  await app.close()
  t.equal(await cli.done, 1)
  t.match(cli.stderr(), /mocapi: the subscription was terminated: error -32603: The server is shutting down/)
})

t.test('a 2025-era client follows by poll too', async (t) => {
  const { app, url } = await server(t)
  const cursor = await cursorNow(url)
  await emit(app, 'inc-1')
  const { code, stdout, stderr } = await run(['events', url, 'incident.created', '--args', '{"service":"api"}', '--cursor', cursor,
    '--max', '1', '--protocol-version', '2025-11-25'])
  t.equal(code, 0, stderr)
  t.same(lines(stdout).map((line) => line.eventId), ['inc-1'])
})

/** The CLI as a process of its own, as a person runs it, so Ctrl-C (SIGINT) can be sent to it. */
function spawned (argv: string[], env: Record<string, string> = {}) {
  const child = spawn(process.execPath, [...process.execArgv, ...ENTRY, ...argv], { stdio: 'pipe', env: { ...process.env, ...env } })
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk })
  const exited = new Promise<number | null>((resolve) => child.on('close', resolve))
  return { child, exited, stdout: () => stdout, stderr: () => stderr }
}

t.test('Ctrl-C ends a poll loop cleanly; hasMore is polled again at once', async (t) => {
  const { app, url, polls } = await server(t, { events: { maxEvents: 2 } })
  const cursor = await cursorNow(url)
  polls.length = 0
  for (let i = 1; i <= 5; i++) await emit(app, `inc-${i}`)
  const cli = spawned(['events', url, 'incident.created', '--args', '{"service":"api"}', '--cursor', cursor])
  await until(() => lines(cli.stdout()).length === 5 && polls.length === 3, 'five occurrences in three polls')
  cli.child.kill('SIGINT')
  t.equal(await cli.exited, 0, cli.stderr())
  t.same(lines(cli.stdout()).map((line) => line.eventId), ['inc-1', 'inc-2', 'inc-3', 'inc-4', 'inc-5'])
  t.ok(polls[2] - polls[0] < 1000, `the server had more, so the three polls came together (${polls[2] - polls[0]} ms)`)
  t.match(cli.stderr(), /stopped after 5 occurrences\n$/)
})

t.test('Ctrl-C ends a held stream cleanly', async (t) => {
  const { app, url } = await server(t)
  const cli = spawned(['events', url, 'incident.created', '--follow', 'stream', '--args', '{"service":"api"}'])
  await until(() => /cursor: /.test(cli.stderr()), 'the stream to be active')
  await emit(app, 'inc-1')
  await until(() => cli.stdout() !== '', 'the occurrence')
  cli.child.kill('SIGINT')
  t.equal(await cli.exited, 0, cli.stderr())
  t.same(lines(cli.stdout()).map((line) => line.eventId), ['inc-1'])
  t.match(cli.stderr(), /stopped after 1 occurrence\n$/)
})

interface Received { method: string, params: Record<string, unknown> }

/** A hand-written endpoint (plain node:http, or node:https given a key and certificate) answering as `answer` says. */
async function rawServer (t: Test, answer: (body: Received & { id: number }, response: ServerResponse) => void,
  tls?: { key: Buffer, cert: Buffer }): Promise<{ url: string, received: Received[] }> {
  const received: Received[] = []
  const handle = (request: IncomingMessage, response: ServerResponse): void => {
    let text = ''
    request.setEncoding('utf8').on('data', (chunk: string) => { text += chunk }).on('end', () => {
      const body = JSON.parse(text)
      received.push({ method: body.method, params: body.params })
      answer(body, response)
    })
  }
  const server = tls === undefined ? createServer(handle) : createHttpsServer(tls, handle)
  t.teardown(() => { server.closeAllConnections(); server.close() })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const scheme = tls === undefined ? 'http' : 'https'
  return { url: `${scheme}://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`, received }
}

function reply (response: ServerResponse, id: number, result: Record<string, unknown>): void {
  response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id, result }))
}

/** An event stream of `messages` (a string is sent as the data line as it is), then the end of the reply. */
function sse (response: ServerResponse, messages: unknown[]): void {
  response.writeHead(200, { 'content-type': 'text/event-stream' })
  response.end(messages.map((message) => `data: ${typeof message === 'string' ? message : JSON.stringify(message)}\n\n`).join(''))
}

function notification (method: string, params?: Record<string, unknown>): Record<string, unknown> {
  return params === undefined ? { jsonrpc: '2.0', method } : { jsonrpc: '2.0', method, params }
}

t.test('event types a server describes oddly are listed from what is there, page after page', async (t) => {
  const pages: Record<string, Record<string, unknown>> = {
    first: {
      events: [
        { name: 'a', inputSchema: 'not a schema' },
        'not a type',
        { name: 'b', inputSchema: { properties: { x: 'odd', y: {} }, required: 'x' }, delivery: 'poll', description: 7 },
      ],
      nextCursor: 'p2',
    },
    p2: { events: 'none', nextCursor: 'p3' },
    p3: { events: [{ name: 'c', delivery: ['push'] }], nextCursor: 3 },
  }
  const { url, received } = await rawServer(t, ({ id, params }, response) => reply(response, id, pages[(params.cursor as string | undefined) ?? 'first']))
  const { code, stdout, stderr } = await run(['events', url])
  t.equal(code, 0, stderr)
  t.equal(stdout, 'a()  []\nb(x?: any, y?: any)  []\nc()  [push]\n')
  t.same(received.map(({ method, params }) => [method, params.cursor]), [['events/list', undefined], ['events/list', 'p2'], ['events/list', 'p3']],
    'each next page is asked for with the cursor the last one gave, until a page gives no string cursor')
})

t.test('an events/list that never ends is cut off after 1000 pages', async (t) => {
  const { url, received } = await rawServer(t, ({ id }, response) => reply(response, id, { events: [], nextCursor: 'again' }))
  const { code, stdout, stderr } = await run(['events', url])
  t.equal(code, 1)
  t.equal(stdout, '')
  t.equal(stderr, 'mocapi: events/list still had more after 1000 pages\n')
  t.equal(received.length, 1_000)
})

t.test('a failed listing is reported without the follow hint', async (t) => {
  const { url } = await rawServer(t, ({ id }, response) => {
    response.writeHead(200, { 'content-type': 'application/json' })
    response.end(JSON.stringify({ jsonrpc: '2.0', id, error: { code: -32026, message: 'Not here' } }))
  })
  t.same(await run(['events', url]), { code: 1, stdout: '', stderr: 'mocapi: error -32026: Not here\n' })
})

t.test('polling a server that answers oddly: truncated, no cursor, junk occurrences, no nextPollMs', async (t) => {
  const polls: number[] = []
  const answers: Array<Record<string, unknown>> = [
    { truncated: true, events: 'none', hasMore: true },
    { events: [{ eventId: 'e1', timestamp: 't1', data: { n: 1 }, extra: 'dropped' }, 'junk'], cursor: 'c2', nextPollMs: 'soon' },
    { events: [{ eventId: 'e2', data: null }, { eventId: 'e3' }], cursor: 'c3' },
  ]
  const { url, received } = await rawServer(t, ({ id }, response) => {
    polls.push(Date.now())
    reply(response, id, answers[polls.length - 1])
  })
  const { code, stdout, stderr } = await run(['events', url, 'odd', '--max', '2'])
  t.equal(code, 0, stderr)
  t.equal(stdout, '{"eventId":"e1","timestamp":"t1","data":{"n":1}}\n{"eventId":"e2","data":null}\n', 'e3 is past --max')
  t.equal(stderr, [
    'following odd by poll (at most 2); Ctrl-C stops',
    'truncated: some occurrences since the cursor are no longer kept by the server, and were skipped',
    'cursor: none (this event type keeps no history to resume from)',
    'cursor: c2',
    'cursor: c3',
    '',
  ].join('\n'))
  t.same(received.map(({ params }) => [params.cursor, params.maxEvents]), [[null, 2], [null, 2], ['c2', 1]],
    'a poll without a cursor in reply polls again from none, asking only for what --max still allows')
  t.ok(polls[1] - polls[0] < 1000, 'hasMore: polled again at once')
  t.ok(polls[2] - polls[1] >= 1000, `a nextPollMs that is no number waits the 1000 ms floor (${polls[2] - polls[1]} ms)`)
})

t.test('a stream with odd messages: junk, truncation, unknown methods, reported errors, then an early close', async (t) => {
  const { url } = await rawServer(t, (_body, response) => sse(response, [
    'not json',
    42,
    notification('notifications/events/active', { truncated: true, cursor: 'c1' }),
    notification('notifications/events/heartbeat'),
    notification('notifications/events/event', { eventId: 'e1', timestamp: 't1', data: { n: 1 }, cursor: 'c2' }),
    notification('notifications/events/heartbeat', { cursor: 'c2' }),
    notification('notifications/events/surprise', { cursor: 'c9' }),
    notification('notifications/events/error', { error: { code: -32603, message: 'Backend slow\u001b[2J\nFAKE' } }),
    notification('notifications/events/error', { error: { message: 'No code' } }),
    notification('notifications/events/error', { error: 'not an object' }),
    notification('notifications/events/event', { eventId: 'e2', cursor: 'c3' }),
  ]))
  const { code, stdout, stderr } = await run(['events', url, 'odd', '--follow', 'stream'])
  t.equal(code, 1)
  t.equal(stdout, '{"eventId":"e1","timestamp":"t1","data":{"n":1}}\n{"eventId":"e2"}\n')
  t.equal(stderr, [
    'following odd by stream; Ctrl-C stops',
    'truncated: some occurrences since the cursor are no longer kept by the server, and were skipped',
    'cursor: c1',
    'cursor: c2',
    'mocapi: the server reports: error -32603: Backend slow␛␊FAKE',
    'mocapi: the server reports: No code',
    'mocapi: the server reports: no message',
    'cursor: c3',
    'mocapi: the stream closed; resume with --cursor and the last cursor',
    '',
  ].join('\n'))
})

t.test('a stream the server ends with its final result or error', async (t) => {
  const final: Record<string, Record<string, unknown>> = {
    result: { jsonrpc: '2.0', id: 1, result: {} },
    error: { jsonrpc: '2.0', id: 1, error: { code: -32603, message: 'Gone' } },
  }
  const { url } = await rawServer(t, ({ params }, response) => sse(response, [
    notification('notifications/events/active', { cursor: 'c1' }),
    final[params.name as string],
  ]))
  const result = await run(['events', url, 'result', '--follow', 'stream'])
  t.equal(result.code, 1)
  t.equal(result.stderr, 'following result by stream; Ctrl-C stops\ncursor: c1\nmocapi: the server ended the stream; resume with --cursor and the last cursor\n')
  const error = await run(['events', url, 'error', '--follow', 'stream'])
  t.equal(error.code, 1)
  t.equal(error.stderr, 'following error by stream; Ctrl-C stops\ncursor: c1\nmocapi: error -32603: Gone\n')
})

t.test('an events/stream answered without a stream: a JSON result, bad JSON, no content type, an HTML error', async (t) => {
  const { url } = await rawServer(t, ({ id, params }, response) => {
    if (params.name === 'result') return reply(response, id, {})
    if (params.name === 'bad-json') return response.writeHead(200, { 'content-type': 'application/json' }).end('{oops')
    if (params.name === 'untyped') return response.end('plain words')
    response.writeHead(502, { 'content-type': 'text/html' }).end('<h1>Bad gateway</h1>')
  })
  const said = async (name: string): Promise<[number, string]> => {
    const { code, stdout, stderr } = await run(['events', url, name, '--follow', 'stream'])
    t.equal(stdout, '', `${name}: nothing on stdout`)
    return [code, stderr.replace(`following ${name} by stream; Ctrl-C stops\n`, '')]
  }
  t.same(await said('result'), [1, 'mocapi: the server answered without opening a stream\n'])
  t.same(await said('bad-json'), [1, 'mocapi: HTTP 200: {oops\n'])
  t.same(await said('untyped'), [1, 'mocapi: HTTP 200: plain words\n'])
  t.same(await said('html'), [1, 'mocapi: HTTP 502: <h1>Bad gateway</h1>\n'])
})

t.test('an https endpoint: the stream is held over TLS', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mocapi-cli-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', join(dir, 'key.pem'), '-out', join(dir, 'cert.pem'), '-days', '1', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=IP:127.0.0.1'], { stdio: 'ignore' })
  const tls = { key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem')) }
  const { url, received } = await rawServer(t, (_body, response) => sse(response, [
    notification('notifications/events/active', { cursor: 'c1' }),
    notification('notifications/events/event', { eventId: 'e1', timestamp: 't1', data: {}, cursor: 'c2' }),
  ]), tls)
  const cli = spawned(['events', url, 'secure', '--follow', 'stream', '--max', '1'], { NODE_EXTRA_CA_CERTS: join(dir, 'cert.pem') })
  t.equal(await cli.exited, 0, cli.stderr())
  t.equal(cli.stdout(), '{"eventId":"e1","timestamp":"t1","data":{}}\n')
  t.equal(cli.stderr(), 'following secure by stream (at most 1); Ctrl-C stops\ncursor: c1\ncursor: c2\n')
  t.same(received.map(({ method }) => method), ['events/stream'])
})
