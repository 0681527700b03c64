import t from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import type { AddressInfo } from 'node:net'
import mocapi, { type MocapiOptions } from '../../lib/index.js'
import { KEY, build, capturedLogs, postHttp } from '../helpers.js'

type Test = Parameters<typeof build>[0]

const SECRET = 'a-test-secret-of-thirty-two-bytes!!'
const RESOURCE = 'https://files.example.com/mcp'
const METADATA = 'https://files.example.com/.well-known/oauth-protected-resource/mcp'
const META = {
  'io.modelcontextprotocol/protocolVersion': '2026-07-28',
  'io.modelcontextprotocol/clientCapabilities': {},
  'io.modelcontextprotocol/clientInfo': { name: 'scopes-test', version: '1.0.0' },
}

/** A listening server behind @fastify/jwt (a token is optional: without one the caller is anonymous). */
async function server (t: Test, options: MocapiOptions = {}) {
  const { lines, options: logging } = capturedLogs()
  const app: FastifyInstance = Fastify(logging)
  await app.register(fastifyJwt, { secret: SECRET })
  app.addHook('onRequest', async (request) => {
    if (request.headers.authorization !== undefined && request.routeOptions.config.mcpPublic !== true) await request.jwtVerify()
    // An app whose own auth sets request.user to a bare string (an API key's owner, say).
    else if (typeof request.headers['x-user'] === 'string') (request as { user: unknown }).user = request.headers['x-user']
  })
  const ran: string[] = []
  await app.register(mocapi, {
    requestState: { keys: [KEY] },
    protectedResource: { resource: RESOURCE, authorizationServers: ['https://auth.example.com'], scopesSupported: ['profile'] },
    ...options,
  })
  app.mcp
    .tool({ name: 'read_file', scopes: ['files:read'] }, () => { ran.push('read_file'); return 'contents' })
    .tool({ name: 'delete_file', scopes: ['files:read', 'files:write'] }, () => { ran.push('delete_file'); return 'deleted' })
    .tool({ name: 'ping', scopes: [] }, () => 'pong')
    .prompt({ name: 'summarize', scopes: ['files:read'] }, () => { ran.push('summarize'); return 'Summarize' })
    .resource({ uri: 'files://secret', name: 'secret', scopes: ['files:admin'] }, () => { ran.push('secret'); return 'hush' })
    .resourceTemplate({ uriTemplate: 'archive://{path}', name: 'archive', scopes: ['files:admin'] }, () => 'old')
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`
  const token = (claims: object) => app.jwt.sign({ sub: 'ada', ...claims })
  return { app, url, ran, lines, token }
}

/** A 2026-07-28 request over real HTTP. */
const post = (url: string, method: string, params: Record<string, unknown>, token?: string) =>
  postHttp(url, method, params, { token, meta: META })

t.test('a token without a scope the tool needs: 403, the insufficient_scope challenge, an error naming it, nothing run', async (t) => {
  const { url, ran, token } = await server(t)
  const reader = token({ scope: 'files:read profile' })
  t.equal((await post(url, 'tools/call', { name: 'read_file' }, reader)).body.result.content[0].text, 'contents')
  const refused = await post(url, 'tools/call', { name: 'delete_file' }, reader)
  t.equal(refused.status, 403)
  t.equal(refused.challenge, `Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="${METADATA}"`)
  t.same(refused.body.error, {
    code: -32600,
    message: 'The tool delete_file needs the scope files:write, which the token does not grant',
    data: { requiredScopes: ['files:read', 'files:write'], missingScopes: ['files:write'] },
  })
  t.same(ran, ['read_file'], 'delete_file did not run')
  const writer = token({ scp: ['files:read', 'files:write'] })
  t.equal((await post(url, 'tools/call', { name: 'delete_file' }, writer)).body.result.content[0].text, 'deleted', 'scp as an array grants')
  t.equal((await post(url, 'tools/call', { name: 'ping' }, reader)).body.result.content[0].text, 'pong', 'no scopes, no check')
})

t.test('an anonymous caller gets the 401 challenge with the scopes; prompts and resources are checked the same way', async (t) => {
  const { url, ran, token } = await server(t)
  const anonymous = await post(url, 'tools/call', { name: 'delete_file' })
  t.equal(anonymous.status, 401)
  t.equal(anonymous.challenge, `Bearer scope="files:read files:write", resource_metadata="${METADATA}"`)
  t.match(anonymous.body.error, { code: -32600, message: 'The tool delete_file needs a token with the scopes files:read files:write: sign in' })
  const one = await post(url, 'tools/call', { name: 'read_file' })
  t.equal(one.body.error.message, 'The tool read_file needs a token with the scope files:read: sign in')
  const none = await post(url, 'tools/call', { name: 'delete_file' }, token({ scope: 5 }))
  t.equal(none.body.error.message, 'The tool delete_file needs the scopes files:read files:write, which the token does not grant', 'a scope claim that is neither a string nor an array grants nothing')
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'read_file', 'x-user': 'ada' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'read_file', _meta: META } }),
  })
  t.equal(response.status, 403, 'a request.user that is a bare string carries no scopes')
  const prompt = await post(url, 'prompts/get', { name: 'summarize' }, token({ scope: 'profile' }))
  t.equal(prompt.status, 403)
  t.match(prompt.body.error.message, 'The prompt summarize needs the scope files:read')
  const resource = await post(url, 'resources/read', { uri: 'files://secret' }, token({ scope: 'files:read' }))
  t.equal(resource.status, 403)
  t.equal(resource.challenge, `Bearer error="insufficient_scope", scope="files:admin", resource_metadata="${METADATA}"`)
  const long = await post(url, 'resources/read', { uri: `archive://${'a'.repeat(300)}` }, token({ scope: 'files:read' }))
  t.equal(long.body.error.message, `The resource archive://${'a'.repeat(190)}… needs the scope files:admin, which the token does not grant`,
    'a long URI is cut in the message')
  t.same(ran, [])
})

t.test('the listing shows scoped tools, without their scopes; RFC 9728 metadata lists every scope', async (t) => {
  const { app, url } = await server(t)
  const listed = await post(url, 'tools/list', {})
  t.same(listed.body.result.tools.map((tool: { name: string }) => tool.name), ['read_file', 'delete_file', 'ping'])
  t.notOk(listed.body.result.tools.some((tool: object) => 'scopes' in tool))
  const metadata = await app.inject({ url: '/.well-known/oauth-protected-resource/mcp' })
  t.same(metadata.json().scopes_supported, ['profile', 'files:read', 'files:write', 'files:admin'])
  app.mcp.removeResource('files://secret')
  app.mcp.removeResourceTemplate('archive://{path}')
  const after = await app.inject({ url: '/.well-known/oauth-protected-resource/mcp' })
  t.same(after.json().scopes_supported, ['profile', 'files:read', 'files:write'], 'as registered now')
})

t.test('a 2025-era session: the same 403 and challenge', async (t) => {
  const { url, token } = await server(t)
  const reader = token({ scope: 'files:read' })
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${reader}` }
  const init = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'host', version: '1' } } }),
  })
  const session = init.headers.get('mcp-session-id') as string
  t.ok(session)
  const sessionHeaders = { ...headers, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }
  await fetch(url, { method: 'POST', headers: sessionHeaders, body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }) })
  const response = await fetch(url, {
    method: 'POST',
    headers: sessionHeaders,
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'delete_file' } }),
  })
  t.equal(response.status, 403)
  t.equal(response.headers.get('www-authenticate'), `Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="${METADATA}"`)
  const text = await response.text()
  t.match(text, /needs the scope files:write, which the token does not grant/)
})

t.test('the scopes option reads them elsewhere; one that throws grants nothing, logged; without protectedResource, no metadata URL', async (t) => {
  const { url, token } = await server(t, { scopes: (request) => (request.headers['x-scopes'] as string | undefined)?.split(',') })
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'delete_file', authorization: `Bearer ${token({})}`, 'x-scopes': 'files:read,files:write' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'delete_file', _meta: META } }),
  })
  t.equal((await response.json() as any).result.content[0].text, 'deleted')

  const broken = await server(t, { scopes: () => { throw new Error('claims unreadable') } })
  const refused = await post(broken.url, 'tools/call', { name: 'read_file' }, broken.token({ scope: 'files:read' }))
  t.equal(refused.status, 403)
  t.ok(broken.lines.some((line) => line.level === 50 && /the scopes option threw/.test(line.msg)))

  const plain = await server(t, { protectedResource: undefined })
  const bare = await post(plain.url, 'tools/call', { name: 'read_file' }, plain.token({}))
  t.equal(bare.challenge, 'Bearer error="insufficient_scope", scope="files:read"')
})

t.test('scopes are checked at registration, naming the bad value', async (t) => {
  const app = await build(t)
  t.throws(() => app.mcp.tool({ name: 'a', scopes: ['has space'] }, () => 'x'), { code: 'FST_MOCAPI_INVALID_DEFINITION', message: /tool "a" scopes\[0\] must be an OAuth scope token \(no spaces, quotes or backslashes\), got "has space"/ })
  t.throws(() => app.mcp.tool({ name: 'a', scopes: 'files:read' as never }, () => 'x'), /got "files:read"/)
  t.throws(() => app.mcp.prompt({ name: 'p', scopes: ['files:read', 'a"b'] }, () => 'x'), /prompt "p" scopes\[1\] must be/)
  t.throws(() => app.mcp.resourceTemplate({ uriTemplate: 'x://{id}', name: 't', scopes: Array.from({ length: 65 }, (_, i) => `s${i}`) }, () => 'x'), /scopes must be an array of at most 64/)
  await t.rejects(async () => { await Fastify().register(mocapi, { requestState: { keys: [KEY] }, scopes: 'files:read' as never }) },
    { code: 'FST_MOCAPI_INVALID_OPTION', message: /scopes must be a function, got "files:read"/ })
})
