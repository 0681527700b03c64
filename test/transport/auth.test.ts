import t from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import mocapi, { type MocapiOptions } from '../../lib/index.js'
import { KEY, call } from '../helpers.js'

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
