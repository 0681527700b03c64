import t from 'tap'
import Fastify from 'fastify'
import mocapi from '../lib/index.js'
import { KEY, MOCAPI_VERSION, build, call, rpc } from './helpers.js'

type Test = Parameters<typeof build>[0]

/** Registers mocapi with `options` and returns the error registration fails with. */
async function refused (t: Test, options: unknown): Promise<Error | undefined> {
  const app = Fastify()
  t.teardown(() => app.close().catch(() => undefined))
  return app.register(mocapi, options as never).then(() => undefined, (error: Error) => error)
}

const keys = [KEY]
const TIMER_BOUND = 'at most 2147483647 (about 24.8 days, the longest timer Node keeps: a longer one fires at once)'
const TOKEN_BOUND = 'at most 1048576 (1 MiB of characters: every retry carries its token, and a request body is at most 1 MiB by default (bodyLimit))'

const BAD: Array<[string, unknown, string]> = [
  ['options an array', [], 'options must be an object, got an array'],
  ['options a string', 'mcp', 'options must be an object, got "mcp"'],
  ['unknown option', { colour: 'red' }, 'unknown option colour'],
  ['tasks not an object', { tasks: 'redis' }, 'tasks must be an object, got "redis"'],
  ['tasks unknown field', { tasks: { ttl: 5 } }, 'unknown option tasks.ttl'],
  ['tasks.store not a store', { tasks: { store: { get () {} } } }, 'tasks.store must be a TaskStore (an object with create, get and update functions), got an object'],
  ['tasks.store null', { tasks: { store: null } }, 'tasks.store must be a TaskStore (an object with create, get and update functions), got null'],
  ['tasks.lease 0', { tasks: { lease: 0 } }, 'tasks.lease must be a positive integer, got 0'],
  ['limits.tasksPerCaller 0', { limits: { tasksPerCaller: 0 } }, 'limits.tasksPerCaller must be a positive integer, got 0'],
  ['limits.taskBytesPerCaller 1.5', { limits: { taskBytesPerCaller: 1.5 } }, 'limits.taskBytesPerCaller must be a positive integer, got 1.5'],
  ['tokenVersion 3', { requestState: { tokenVersion: 3 } }, 'requestState.tokenVersion must be 1 or 2, got 3'],
  ['tokenVersion a string', { requestState: { tokenVersion: '2' } }, 'requestState.tokenVersion must be 1 or 2, got "2"'],
  ['path without slash', { path: 'mcp' }, 'path must be a string starting with \'/\', got "mcp"'],
  ['path a number', { path: 5 }, 'path must be a string starting with \'/\', got 5'],
  ['serverInfo null', { serverInfo: null }, 'serverInfo must be an object, got null'],
  ['serverInfo a string', { serverInfo: 'travel' }, 'serverInfo must be an object, got "travel"'],
  ['serverInfo without name', { serverInfo: { version: '1.0.0' } }, 'serverInfo.name must be a non-empty string, got undefined'],
  ['serverInfo empty name', { serverInfo: { name: '', version: '1.0.0' } }, 'serverInfo.name must be a non-empty string, got ""'],
  ['serverInfo without version', { serverInfo: { name: 'travel' } }, 'serverInfo.version must be a non-empty string, got undefined'],
  ['serverInfo numeric version', { serverInfo: { name: 'travel', version: 1 } }, 'serverInfo.version must be a non-empty string, got 1'],
  ['serverInfo bad title', { serverInfo: { name: 'travel', version: '1', title: ['T'] } }, 'serverInfo.title must be a string, got an array'],
  ['instructions', { instructions: { text: 'hi' } }, 'instructions must be a string, got an object'],
  ['requestState a string', { requestState: 'secret' }, 'requestState must be an object, got "secret"'],
  ['requestState an array', { requestState: [KEY] }, 'requestState must be an object, got an array'],
  ['requestState unknown key', { requestState: { keys, key: KEY } }, 'unknown option requestState.key'],
  ['requestState.keys empty', { requestState: { keys: [] } }, 'requestState.keys must be a non-empty array of keys, got an empty array: make one with `node -e "console.log(require(\'crypto\').randomBytes(32).toString(\'base64\'))"` (or `openssl rand -base64 32`), or leave requestState.keys out for an ephemeral key (one process, lost on restart; mocapi warns)'],
  ['requestState.keys a string', { requestState: { keys: 'abc' } }, 'requestState.keys must be a non-empty array of keys, got "abc": make one with `node -e "console.log(require(\'crypto\').randomBytes(32).toString(\'base64\'))"` (or `openssl rand -base64 32`), or leave requestState.keys out for an ephemeral key (one process, lost on restart; mocapi warns)'],
  ['requestState.ttl zero', { requestState: { keys, ttl: 0 } }, 'requestState.ttl must be a positive integer, got 0'],
  ['requestState.ttl fraction', { requestState: { keys, ttl: 1.5 } }, 'requestState.ttl must be a positive integer, got 1.5'],
  ['requestState.ttl a string', { requestState: { keys, ttl: '300' } }, 'requestState.ttl must be a positive integer, got "300"'],
  ['requestState.maxRounds negative', { requestState: { keys, maxRounds: -1 } }, 'requestState.maxRounds must be a positive integer, got -1'],
  ['requestState.maxTokenLength zero', { requestState: { keys, maxTokenLength: 0 } }, 'requestState.maxTokenLength must be a positive integer, got 0'],
  ['requestState.maxTokenLength past its ceiling', { requestState: { keys, maxTokenLength: 1e9 } }, `requestState.maxTokenLength must be ${TOKEN_BOUND}, got 1000000000`],
  ['requestState.maxTokenLength one past it', { requestState: { keys, maxTokenLength: 2 ** 20 + 1 } }, `requestState.maxTokenLength must be ${TOKEN_BOUND}, got 1048577`],
  // Node runs a timer set past 2^31-1 ms after 1 ms: every 2025-era ask would time out at once, app.close() abandon every handler.
  ['shutdownGrace past the timer bound', { shutdownGrace: 3e9 }, `shutdownGrace must be ${TIMER_BOUND}, got 3000000000`],
  ['shutdownGrace one past it', { shutdownGrace: 2 ** 31 }, `shutdownGrace must be ${TIMER_BOUND}, got 2147483648`],
  ['heartbeat below 100 ms', { heartbeat: 99 }, 'heartbeat must be false or an integer of ms from 100 (a shorter one writes more than it keeps) to 2147483647 (about 24.8 days, the longest timer Node keeps: a longer one fires at once), got 99'],
  ['heartbeat true', { heartbeat: true }, 'heartbeat must be false or an integer of ms from 100 (a shorter one writes more than it keeps) to 2147483647 (about 24.8 days, the longest timer Node keeps: a longer one fires at once), got true'],
  ['heartbeat a string', { heartbeat: '15s' }, 'heartbeat must be false or an integer of ms from 100 (a shorter one writes more than it keeps) to 2147483647 (about 24.8 days, the longest timer Node keeps: a longer one fires at once), got "15s"'],
  ['heartbeat a fraction', { heartbeat: 150.5 }, 'heartbeat must be false or an integer of ms from 100 (a shorter one writes more than it keeps) to 2147483647 (about 24.8 days, the longest timer Node keeps: a longer one fires at once), got 150.5'],
  ['heartbeat past the timer bound', { heartbeat: 2 ** 31 }, 'heartbeat must be false or an integer of ms from 100 (a shorter one writes more than it keeps) to 2147483647 (about 24.8 days, the longest timer Node keeps: a longer one fires at once), got 2147483648'],
  ['session.answerTimeout past the timer bound', { session: { answerTimeout: 3e9 } }, `session.answerTimeout must be ${TIMER_BOUND}, got 3000000000`],
  ['session.ttl past the timer bound', { session: { ttl: 2 ** 31 } }, `session.ttl must be ${TIMER_BOUND}, got 2147483648`],
  ['session.answerTimeout zero', { session: { answerTimeout: 0 } }, 'session.answerTimeout must be a positive integer, got 0'],
  ['principal a string', { principal: 'sub' }, 'principal must be a function, got "sub"'],
  ['principal true', { principal: true }, 'principal must be a function, got true'],
  ['serverInfo a function', { serverInfo: () => ({}) }, 'serverInfo must be an object, got a function'],
  ['allowedOrigins a string', { allowedOrigins: '*' }, 'allowedOrigins must be an array of strings, got "*"'],
  ['allowedOrigins empty entry', { allowedOrigins: ['https://app.example', ''] }, 'allowedOrigins[1] must be a non-empty string, got ""'],
  ['allowedOrigins number entry', { allowedOrigins: [8080] }, 'allowedOrigins[0] must be a non-empty string, got 8080'],
  ['allowedHosts object entry', { allowedHosts: [{ host: 'a' }] }, 'allowedHosts[0] must be a non-empty string, got an object'],
  ['pageSize zero', { pageSize: 0 }, 'pageSize must be a positive integer, got 0'],
  ['bodyLimit infinite', { bodyLimit: Infinity }, 'bodyLimit must be a positive integer, got Infinity'],
  ['bus a string', { bus: 'redis://localhost' }, 'bus must have publish() and subscribe() methods, got "redis://localhost"'],
  ['bus without subscribe', { bus: { publish () {} } }, 'bus must have publish() and subscribe() methods, got an object'],
  ['bus an array', { bus: [] }, 'bus must have publish() and subscribe() methods, got an array'],
  ['tracing a string', { tracing: 'on' }, 'tracing must be true or false, got "on"'],
  ['limits.batchSize zero', { limits: { batchSize: 0 } }, 'limits.batchSize must be a positive integer, got 0'],
  ['limits.batchSize a string', { limits: { batchSize: '32' } }, 'limits.batchSize must be a positive integer, got "32"'],
  ['cache a number', { cache: 60 }, 'cache must be an object, got 60'],
  ['cache unknown key', { cache: { tools: {} } }, 'unknown option cache.tools'],
  ['cache.discover a number', { cache: { discover: 5000 } }, 'cache.discover must be an object, got 5000'],
  ['cache.lists unknown key', { cache: { lists: { ttl: 5000 } } }, 'unknown option cache.lists.ttl'],
  ['cache.lists.ttlMs negative', { cache: { lists: { ttlMs: -1 } } }, 'cache.lists.ttlMs must be a non-negative integer, got -1'],
  ['cache.discover.ttlMs a string', { cache: { discover: { ttlMs: '1h' } } }, 'cache.discover.ttlMs must be a non-negative integer, got "1h"'],
  ['cache.resources.cacheScope', { cache: { resources: { cacheScope: 'shared' } } }, 'cache.resources.cacheScope must be \'public\' or \'private\', got "shared"'],
]

t.test('bad options fail registration with a type error naming the value', async (t) => {
  for (const [label, options, message] of BAD) {
    const error = await refused(t, options)
    t.type(error, TypeError, label)
    t.equal((error as { code?: string })?.code, 'FST_MOCAPI_INVALID_OPTION', label)
    t.equal(error?.message, `mocapi: ${message}`, label)
  }
})

t.test('the bounds themselves are accepted', async (t) => {
  const max = 2 ** 31 - 1
  const app = await build(t, { shutdownGrace: max, heartbeat: max, session: { ttl: max, answerTimeout: max }, requestState: { keys, maxTokenLength: 2 ** 20 } })
  t.equal((await call(app, 'server/discover')).status, 200)
})

t.test('an app whose options were refused serves nothing', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close().catch(() => undefined))
  app.register(mocapi, { pageSize: -5 })
  await t.rejects(app.listen({ host: '127.0.0.1', port: 0 }), { code: 'FST_MOCAPI_INVALID_OPTION', message: 'mocapi: pageSize must be a positive integer, got -5' })
})

t.test('serverInfo defaults to mocapi and its version', async (t) => {
  const app = await build(t)
  const { body } = await call(app, 'server/discover')
  t.same(body.result._meta, { 'io.modelcontextprotocol/serverInfo': { name: 'mocapi', version: MOCAPI_VERSION } })
})

t.test('serverInfo title passes through into _meta', async (t) => {
  const app = await build(t, { serverInfo: { name: 'travel', version: '2.0.0', title: 'Travel Desk' } }, (app) => {
    app.mcp.tool({ name: 'ping_desk' }, () => 'pong')
  })
  const serverInfo = { name: 'travel', version: '2.0.0', title: 'Travel Desk' }
  t.same((await call(app, 'server/discover')).body.result._meta, { 'io.modelcontextprotocol/serverInfo': serverInfo })
  t.same((await call(app, 'tools/call', { name: 'ping_desk' })).body.result._meta, { 'io.modelcontextprotocol/serverInfo': serverInfo })
})

t.test('null options mean the defaults', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(mocapi, null as never)
  const { status, body } = await call(app, 'server/discover')
  t.equal(status, 200)
  t.equal(body.result.ttlMs, 3_600_000)
  t.equal(body.result.cacheScope, 'public')
})

t.test('the path option moves the endpoint', async (t) => {
  const app = await build(t, { path: '/rpc' })
  const moved = await app.inject({ ...rpc('server/discover'), url: '/rpc' })
  t.equal(moved.statusCode, 200)
  t.equal(moved.json().result.resultType, 'complete')
  t.equal((await app.inject(rpc('server/discover'))).statusCode, 404)
})

t.test('cache hints: defaults, and a partial hint keeps the other default', async (t) => {
  const defaults = await build(t, {}, (app) => { app.mcp.tool({ name: 'a' }, () => 'a') })
  const discovered = (await call(defaults, 'server/discover')).body.result
  t.match(discovered, { ttlMs: 3_600_000, cacheScope: 'public' })
  t.match((await call(defaults, 'tools/list')).body.result, { ttlMs: 300_000, cacheScope: 'public' })

  const partial = await build(t, { cache: { discover: { cacheScope: 'private' }, lists: { ttlMs: 0 } } }, (app) => {
    app.mcp.tool({ name: 'a' }, () => 'a')
  })
  t.match((await call(partial, 'server/discover')).body.result, { ttlMs: 3_600_000, cacheScope: 'private' })
  t.match((await call(partial, 'tools/list')).body.result, { ttlMs: 0, cacheScope: 'public' })
})

t.test('the default page size is 100', async (t) => {
  const app = await build(t, {}, (app) => {
    for (let i = 0; i < 101; i++) app.mcp.tool({ name: `tool_${i}` }, () => 'x')
  })
  const first = (await call(app, 'tools/list')).body.result
  t.equal(first.tools.length, 100)
  t.type(first.nextCursor, 'string')
  const second = (await call(app, 'tools/list', { cursor: first.nextCursor })).body.result
  t.same(second.tools.map((tool: { name: string }) => tool.name), ['tool_100'])
})

t.test('the default body limit is 1 MiB', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool<{ pad: string }>({ name: 'size', inputSchema: { type: 'object', properties: { pad: { type: 'string' } } } },
      (args: { pad: string }) => String(args.pad.length))
  })
  const fits = await call(app, 'tools/call', { name: 'size', arguments: { pad: 'x'.repeat(1000 * 1000) } })
  t.equal(fits.status, 200)
  t.equal(fits.body.result.content[0].text, '1000000')
  const over = await call(app, 'tools/call', { name: 'size', arguments: { pad: 'x'.repeat(1024 * 1024) } })
  t.equal(over.status, 413)
  t.equal(over.body.error.code, -32600)
})

t.test('requestState.maxTokenLength refuses longer tokens before decrypting', async (t) => {
  const app = await build(t, { requestState: { keys, maxTokenLength: 64 } }, (app) => {
    app.mcp.tool({ name: 'echo' }, () => 'never')
  })
  const { status, body } = await call(app, 'tools/call', { name: 'echo', requestState: 'A'.repeat(65) })
  t.equal(status, 200)
  t.same(body.error, { code: -32602, message: 'Invalid or expired requestState', data: { reason: 'invalid_request_state' } })
})

t.test('the version comes from package.json; without one, 0.0.0', async (t) => {
  const { readVersion, MOCAPI_VERSION: own } = await import('../lib/version.js')
  t.equal(own, MOCAPI_VERSION)
  const dir = t.testdir({ lib: { 'x.js': '' }, 'package.json': JSON.stringify({ name: 'not-mocapi', version: '9.9.9' }) })
  t.equal(readVersion(new URL(`file://${dir}/lib/x.js`)), '0.0.0', 'another package\'s version is not mocapi\'s')
  const nested = t.testdir({ dist: { lib: { 'x.js': '' } }, 'package.json': JSON.stringify({ name: 'mocapi', version: '1.2.3' }) })
  t.equal(readVersion(new URL(`file://${nested}/dist/lib/x.js`)), '1.2.3', 'found one folder further up, as in an install')
})
