import t, { type Test } from 'tap'
import Fastify, { type FastifyServerOptions } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import mocapi from '../../lib/index.js'
import { MAX_SESSION_ID_LENGTH } from '../../lib/legacy/session.js'
import { KEY, capturedLogs } from '../helpers.js'

/**
 * What a 2025-era session seals must fit in its 4,096-character id. Over real HTTP: clientInfo
 * fields and principals too long once encoded (a control character or a lone surrogate is six
 * characters of JSON) are refused with a 400 naming them, never a 500 and a stack in the log.
 */

/** A server on a loopback port, optionally behind @fastify/jwt, with its log captured. */
async function serve (t: Test, jwt = false) {
  const logs = capturedLogs()
  const app = Fastify(logs.options as FastifyServerOptions)
  if (jwt) {
    await app.register(fastifyJwt, { secret: 'a-test-secret-that-is-long-enough' })
    app.addHook('onRequest', async (request) => {
      if (request.routeOptions.config.mcpPublic !== true) await request.jwtVerify()
    })
  }
  await app.register(mocapi, { requestState: { keys: [KEY] } })
  app.mcp.tool({ name: 'whoami' }, (_args, ctx) => `you are ${String(ctx.principal).length} characters`)
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { port } = app.server.address() as { port: number }
  return { app, logs, url: `http://127.0.0.1:${port}/mcp` }
}

let nextId = 1

async function post (url: string, body: object, headers: Record<string, string> = {}) {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
    body: JSON.stringify(body),
  })
  const text = await response.text()
  return { status: response.status, body: JSON.parse(text), session: response.headers.get('mcp-session-id') }
}

function initialize (url: string, clientInfo: object, headers: Record<string, string> = {}) {
  return post(url, { jsonrpc: '2.0', id: nextId++, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo } }, headers)
}

/** No line at error level, and no stack, in what the server logged. */
function quiet (t: Test, lines: Array<Record<string, any>>): void {
  t.same(lines.filter((line) => line.level >= 50 || line.err !== undefined), [], 'nothing logged at error level, no stack')
}

const CONTROL = '\u0001'.repeat(256)
// 256 UTF-16 code units, each a surrogate without its pair: JSON.stringify escapes each as \udXXX.
const LONE = '\ud800'.repeat(128) + '\udfff'.repeat(128)

t.test('clientInfo fields of control characters or lone surrogates are a 400 naming the field, not a 500', async (t) => {
  const { url, logs } = await serve(t)
  const cases: Array<[string, object, string]> = [
    ['a name and a version of 256 control characters', { name: CONTROL, version: CONTROL }, 'params.clientInfo.name'],
    ['a name and a version of 256 lone surrogates', { name: LONE, version: LONE }, 'params.clientInfo.name'],
    ['a name of 256 control characters', { name: CONTROL, version: '1' }, 'params.clientInfo.name'],
    ['a version of 256 control characters', { name: 'c', version: CONTROL }, 'params.clientInfo.version'],
    ['a name of 256 lone surrogates', { name: LONE, version: '1' }, 'params.clientInfo.name'],
    ['a version of 256 lone surrogates', { name: 'c', version: LONE }, 'params.clientInfo.version'],
    ['a title of 256 control characters', { name: 'c', version: '1', title: CONTROL }, 'params.clientInfo.title'],
  ]
  for (const [what, clientInfo, field] of cases) {
    const reply = await initialize(url, clientInfo)
    t.equal(reply.status, 400, what)
    t.equal(reply.body.error?.code, -32602, what)
    t.match(reply.body.error?.message, new RegExp(`^${field.replaceAll('.', '\\.')} is too long for a session id: it takes \\d+ bytes as JSON`), what)
    t.equal(reply.session, null, `${what}: no session`)
  }
  quiet(t, logs.lines)
})

t.test('clientInfo whose fields fit one by one but not together is a 400 naming the fields', async (t) => {
  const { url, logs } = await serve(t)
  // 170 control characters are 1,022 bytes of JSON, within a field's bound; three of them are not within the id's.
  const field = '\u0001'.repeat(170)
  const reply = await initialize(url, { name: field, version: field, title: field })
  t.equal(reply.status, 400)
  t.equal(reply.body.error.code, -32602)
  t.match(reply.body.error.message, /^params\.clientInfo does not fit in a session id/)
  t.match(reply.body.error.message, /clientInfo\.name, clientInfo\.version or clientInfo\.title/)
  t.equal(reply.session, null)
  quiet(t, logs.lines)
})

t.test('a JWT whose sub is 3,000 characters is a 400 naming the principal, not a 500', async (t) => {
  const { app, url, logs } = await serve(t, true)
  const token = app.jwt.sign({ sub: 's'.repeat(3000) })
  const reply = await initialize(url, { name: 'c', version: '1' }, { authorization: `Bearer ${token}` })
  t.equal(reply.status, 400)
  t.equal(reply.body.error.code, -32600)
  t.match(reply.body.error.message, /^The caller's principal is too long for a 2025-era session: it takes 3002 bytes/)
  t.notMatch(reply.body.error.message, /sss/, 'the principal is not echoed')
  t.equal(reply.session, null)
  quiet(t, logs.lines)
})

t.test('text that encodes within the bounds still opens a session that serves', async (t) => {
  const { app, url, logs } = await serve(t, true)
  const token = app.jwt.sign({ sub: 'é'.repeat(500) })
  // 256 characters in a script of three UTF-8 bytes each, and 128 characters outside the BMP (pairs, not lone surrogates).
  const reply = await initialize(url, { name: '語'.repeat(256), version: '😀'.repeat(128), title: '"\\'.repeat(128) }, { authorization: `Bearer ${token}` })
  t.equal(reply.status, 200)
  const session = reply.session as string
  t.ok(session.length <= MAX_SESSION_ID_LENGTH, `a session id of ${session.length} characters`)
  const called = await post(url, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'whoami' } },
    { authorization: `Bearer ${token}`, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' })
  t.same(called.body.result.content, [{ type: 'text', text: 'you are 500 characters' }])
  quiet(t, logs.lines)
})
