import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { spawn } from 'node:child_process'
import type { AddressInfo } from 'node:net'
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
function spawned (argv: string[]) {
  const child = spawn(process.execPath, [...process.execArgv, ...ENTRY, ...argv], { stdio: 'pipe' })
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
