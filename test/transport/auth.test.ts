import t from 'tap'
import { generateKeyPairSync, sign } from 'node:crypto'
import Fastify, { type FastifyInstance } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import mocapi, { type MocapiOptions } from '../../lib/index.js'
import { KEY, call, capturedLogs } from '../helpers.js'

/** An app protected the documented way: @fastify/jwt in onRequest, the metadata routes let through. */
async function protectedApp (t: { teardown: (fn: () => unknown) => void }, options: MocapiOptions = {}): Promise<FastifyInstance> {
  const app = Fastify()
  await app.register(fastifyJwt, { secret: 'a-test-secret-that-is-long-enough' })
  app.addHook('onRequest', async (request) => {
    if (request.routeOptions.config.mcpPublic !== true) await request.jwtVerify()
  })
  await app.register(mocapi, {
    requestState: { keys: [KEY] },
    protectedResource: { authorizationServers: ['https://auth.example.com'], scopesSupported: ['mcp:tools'] },
    ...options,
  })
  app.mcp.tool({ name: 'whoami' }, (_args, ctx) => `you are ${ctx.principal}`)
  t.teardown(() => app.close())
  await app.ready()
  return app
}

t.test('a call without a token is 401 with a resource_metadata challenge', async (t) => {
  const app = await protectedApp(t)
  const { status, body, response } = await call(app, 'tools/call', { name: 'whoami' }, { id: 5 })
  t.equal(status, 401)
  t.equal(response.headers['www-authenticate'], 'Bearer resource_metadata="http://localhost/.well-known/oauth-protected-resource/mcp"')
  t.equal(body.error.code, -32600)
  t.equal(body.jsonrpc, '2.0')
})

t.test('a valid token reaches the tool, and the principal is its sub', async (t) => {
  const app = await protectedApp(t)
  const token = app.jwt.sign({ sub: 'alice' })
  const { status, body } = await call(app, 'tools/call', { name: 'whoami' }, { headers: { authorization: `Bearer ${token}` } })
  t.equal(status, 200)
  t.same(body.result.content, [{ type: 'text', text: 'you are alice' }])
  const forged = await call(app, 'tools/call', { name: 'whoami' }, { headers: { authorization: `Bearer ${token}x` } })
  t.equal(forged.status, 401)
  t.match(forged.response.headers['www-authenticate'], /resource_metadata="http:\/\/localhost\/\.well-known\/oauth-protected-resource\/mcp"/)
})

t.test('the metadata is public, at the root and path-suffixed well-known urls', async (t) => {
  const app = await protectedApp(t, { allowedHosts: ['mcp.example.com'] })
  for (const url of ['/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource/mcp']) {
    const response = await app.inject({ method: 'GET', url, headers: { host: 'mcp.example.com' } })
    t.equal(response.statusCode, 200, url)
    t.equal(response.headers['cache-control'], 'no-store', 'a url derived from the request is never kept by a shared cache')
    t.same(response.json(), {
      resource: 'http://mcp.example.com/mcp',
      authorization_servers: ['https://auth.example.com'],
      bearer_methods_supported: ['header'],
      scopes_supported: ['mcp:tools'],
    })
  }
})

t.test('without a configured resource, a forged Host never becomes the resource: no metadata, no challenge naming it', async (t) => {
  const lines: string[] = []
  const app = Fastify({ logger: { level: 'warn', stream: { write: (line: string) => { lines.push(JSON.parse(line).msg) } } } })
  await app.register(fastifyJwt, { secret: 'a-test-secret-that-is-long-enough' })
  app.addHook('onRequest', async (request) => {
    if (request.routeOptions.config.mcpPublic !== true) await request.jwtVerify()
  })
  await app.register(mocapi, { requestState: { keys: [KEY] }, protectedResource: { authorizationServers: ['https://auth.example.com'] } })
  t.teardown(() => app.close())
  await app.ready()
  t.match(lines, [/protectedResource\.resource is not set/], 'the operator is told to configure it')
  for (const host of ['evil.example', 'evil.example:443', 'localhost.evil.example']) {
    const metadata = await app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource/mcp', headers: { host } })
    t.equal(metadata.statusCode, 421, host)
    t.equal(metadata.headers['cache-control'], 'no-store', host)
    t.notMatch(metadata.body, /evil/, host)
    const challenged = await call(app, 'tools/list', {}, { headers: { host } })
    t.equal(challenged.status, 401, host)
    t.notOk(challenged.response.headers['www-authenticate'], `${host}: no challenge names a forged host`)
  }
  const local = await app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource', headers: { host: 'localhost:3000' } })
  t.equal(local.json().resource, 'http://localhost:3000/mcp')
})

t.test('a bearer token that fails verification is 401 with the challenge, not logged as an error, whatever status @fastify/jwt gave it', async (t) => {
  const { privateKey, publicKey } = generateKeyPairSync('ec', { namedCurve: 'P-256' })
  const logs = capturedLogs()
  const app = Fastify(logs.options)
  // ES256 and a checked typ, so that every way fast-jwt refuses a token can be reached.
  await app.register(fastifyJwt, {
    secret: { private: privateKey.export({ type: 'pkcs8', format: 'pem' }), public: publicKey.export({ type: 'spki', format: 'pem' }) },
    sign: { algorithm: 'ES256' },
    verify: { checkTyp: 'JWT' },
  })
  app.addHook('onRequest', async (request) => { await request.jwtVerify() })
  const codes: unknown[] = []
  app.addHook('onError', async (_request, _reply, error) => { codes.push(error.code) })
  await app.register(mocapi, { requestState: { keys: [KEY] }, protectedResource: { authorizationServers: ['https://auth.example.com'] } })
  app.mcp.tool({ name: 'whoami' }, (_args, ctx) => `you are ${ctx.principal}`)
  t.teardown(() => app.close())
  await app.ready()

  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url')
  const es256 = (header: object, payload: unknown) => {
    const input = `${part(header)}.${part(payload)}`
    return `${input}.${sign('sha256', Buffer.from(input), { key: privateKey, dsaEncoding: 'ieee-p1363' }).toString('base64url')}`
  }
  const header = { alg: 'ES256', typ: 'JWT' }
  const now = Math.floor(Date.now() / 1000)
  const valid = app.jwt.sign({ sub: 'alice' })
  const cases: Array<[string, string, string]> = [
    ['a token whose nbf is in the future', app.jwt.sign({ sub: 'alice', nbf: now + 3600 }), 'FAST_JWT_INACTIVE'],
    ['a claim of the wrong type', es256(header, { sub: 'alice', nbf: 'soon' }), 'FAST_JWT_INVALID_CLAIM_TYPE'],
    ['an algorithm the server does not take', `${part({ alg: 'HS256', typ: 'JWT' })}.${part({ sub: 'alice' })}.c2ln`, 'FAST_JWT_INVALID_ALGORITHM'],
    ['a crit header the server does not know', es256({ ...header, crit: ['x-odd'], 'x-odd': 1 }, { sub: 'alice' }), 'FAST_JWT_INVALID_CRIT_HEADER'],
    ['a payload that is no object', es256(header, ['alice']), 'FAST_JWT_INVALID_PAYLOAD'],
    ['a typ other than the one checked', es256({ alg: 'ES256' }, { sub: 'alice' }), 'FAST_JWT_INVALID_TYPE'],
    ['a signature of the wrong length', `${valid.split('.').slice(0, 2).join('.')}.eHg`, 'FAST_JWT_VERIFY_ERROR'],
    ['an expired token, which @fastify/jwt gives a 401', app.jwt.sign({ sub: 'alice', exp: now - 60 }), 'FST_JWT_AUTHORIZATION_TOKEN_EXPIRED'],
  ]
  for (const [label, token, code] of cases) {
    const { status, body, response } = await call(app, 'tools/call', { name: 'whoami' }, { headers: { authorization: `Bearer ${token}` } })
    t.equal(codes.at(-1), code, `${label}: @fastify/jwt threw ${code}`)
    t.equal(status, 401, label)
    t.equal(response.headers['www-authenticate'], 'Bearer resource_metadata="http://localhost/.well-known/oauth-protected-resource/mcp"', `${label}: the challenge`)
    t.match(body, { jsonrpc: '2.0', id: null, error: { code: -32600, message: String } }, `${label}: a JSON-RPC error`)
  }
  t.same(logs.lines.filter((line) => line.level >= 50), [], 'nothing logged at error level')
  t.same((await call(app, 'tools/call', { name: 'whoami' }, { headers: { authorization: `Bearer ${valid}` } })).body.result.content, [{ type: 'text', text: 'you are alice' }],
    'a valid token is served')
})

t.test('a hook\'s failure that is the server\'s own, not the token\'s, stays 500 -32603 and is logged at error level', async (t) => {
  const logs = capturedLogs()
  const app = Fastify(logs.options)
  app.addHook('onRequest', async (request) => {
    throw Object.assign(new Error('the key store is down'), { code: String(request.headers['x-code']) })
  })
  await app.register(mocapi, { requestState: { keys: [KEY] }, protectedResource: { authorizationServers: ['https://auth.example.com'] } })
  t.teardown(() => app.close())
  for (const code of ['FAST_JWT_KEY_FETCHING_ERROR', 'FAST_JWT_MISSING_KEY', 'FAST_JWT_INVALID_OPTION', 'ECONNREFUSED']) {
    const { status, body, response } = await call(app, 'tools/list', {}, { headers: { 'x-code': code } })
    t.same([status, body.error], [500, { code: -32603, message: 'Internal error' }], code)
    t.notOk('www-authenticate' in response.headers, `${code}: no challenge`)
    t.match(logs.lines.find((line) => line.err?.code === code), { level: 50, msg: 'mocapi internal error' }, `${code}: logged at error level`)
  }
})

t.test('a configured resource url is used as given', async (t) => {
  const app = await protectedApp(t, {
    path: '/api/mcp',
    protectedResource: {
      resource: 'https://tools.example.com/api/mcp',
      authorizationServers: ['https://auth.example.com'],
      resourceName: 'Travel tools',
      resourceDocumentation: 'https://tools.example.com/docs',
      bearerMethodsSupported: ['header'],
    },
  })
  const metadata = await app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource/api/mcp' })
  t.same(metadata.json(), {
    resource: 'https://tools.example.com/api/mcp',
    authorization_servers: ['https://auth.example.com'],
    bearer_methods_supported: ['header'],
    resource_name: 'Travel tools',
    resource_documentation: 'https://tools.example.com/docs',
  })
  const response = await app.inject({ method: 'POST', url: '/api/mcp', headers: { 'content-type': 'application/json' }, payload: {} })
  t.equal(response.headers['www-authenticate'], 'Bearer resource_metadata="https://tools.example.com/.well-known/oauth-protected-resource/api/mcp"')
})

t.test('a challenge the app set keeps its own parameters', async (t) => {
  const app = Fastify()
  app.addHook('onRequest', async (request, reply) => {
    if (request.routeOptions.config.mcpPublic === true) return
    reply.header('www-authenticate', 'Bearer error="invalid_token"')
    throw Object.assign(new Error('token expired'), { statusCode: 401 })
  })
  await app.register(mocapi, { requestState: { keys: [KEY] }, protectedResource: { resource: 'https://x.example/', authorizationServers: ['https://a.example'] } })
  t.teardown(() => app.close())
  const response = await app.inject({ method: 'POST', url: '/mcp', headers: { 'content-type': 'application/json' }, payload: {} })
  t.equal(response.statusCode, 401)
  t.equal(response.headers['www-authenticate'], 'Bearer error="invalid_token", resource_metadata="https://x.example/.well-known/oauth-protected-resource"')
  t.equal((await app.inject({ method: 'GET', url: '/.well-known/oauth-protected-resource' })).json().resource, 'https://x.example/')
})

t.test('without protectedResource a 401 passes through untouched', async (t) => {
  const app = Fastify()
  app.addHook('onRequest', async () => { throw Object.assign(new Error('no'), { statusCode: 401 }) })
  await app.register(mocapi, { requestState: { keys: [KEY] } })
  t.teardown(() => app.close())
  const response = await app.inject({ method: 'POST', url: '/mcp', headers: { 'content-type': 'application/json' }, payload: {} })
  t.equal(response.statusCode, 401)
  t.notOk('www-authenticate' in response.headers)
})

t.test('an app hook\'s own 400 stands, as an invalid request carrying its message', async (t) => {
  const app = Fastify()
  app.addHook('onRequest', async () => { throw Object.assign(new Error('unknown tenant'), { statusCode: 400 }) })
  await app.register(mocapi, { requestState: { keys: [KEY] } })
  t.teardown(() => app.close())
  const response = await app.inject({ method: 'POST', url: '/mcp', headers: { 'content-type': 'application/json' }, payload: { jsonrpc: '2.0', id: 1, method: 'ping' } })
  t.equal(response.statusCode, 400)
  t.same(response.json(), { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'unknown tenant' } }, 'before the body is read, the id is not known')
})

t.test('protectedResource options are validated at registration', async (t) => {
  const cases: Array<[unknown, RegExp]> = [
    ['yes', /protectedResource must be an object/],
    [{ authorizationServers: ['https://a.example'], issuer: 'x' }, /unknown option protectedResource.issuer/],
    [{}, /protectedResource.authorizationServers must be an array of strings, got undefined/],
    [{ authorizationServers: [''] }, /protectedResource.authorizationServers\[0\] must be a non-empty string, got ""/],
    [{ authorizationServers: ['https://a.example'], resource: 'not a url' }, /protectedResource.resource must be an absolute URL, got "not a url"/],
    [{ authorizationServers: ['https://a.example'], resource: 5 }, /protectedResource.resource must be an absolute URL, got 5/],
    [{ authorizationServers: ['https://a.example'], scopesSupported: 'all' }, /scopesSupported must be an array of strings/],
    [{ authorizationServers: ['https://a.example'], resourceName: '' }, /resourceName must be a non-empty string/],
  ]
  for (const [protectedResource, message] of cases) {
    const app = Fastify()
    const error = await app.register(mocapi, { protectedResource: protectedResource as never }).then(() => undefined, (e: Error) => e)
    t.match(error?.message, message)
    await app.close()
  }
})
