/**
 * What outside attacks on scopes, views and the envelope found, each over real HTTP: completions and listen streams
 * that ignored scopes, scoped reads cached as public, a custom scopes option matched by substring, clientInfo fields
 * that were not strings, a repeated version header, and a tools list that varied while it said public.
 */
import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { request as httpRequest } from 'node:http'
import { setTimeout as sleep } from 'node:timers/promises'
import type { MocapiOptions } from '../../lib/index.js'
import { ElicitationPolicy } from '../../lib/elicitation/policy.js'
import { jwtServer, listen, meta, postHttp } from '../helpers.js'

type Test = { teardown: (fn: () => unknown) => void }

const METADATA = 'https://files.example.com/.well-known/oauth-protected-resource/mcp'
const UI = 'io.modelcontextprotocol/ui'
const MIME = 'text/html;profile=mcp-app'
const CARD = '<!doctype html><html><body>salary</body></html>'

/** A listening server behind @fastify/jwt (a token is optional: without one the caller is anonymous). */
function server (t: Test, options: MocapiOptions = {}, setup?: (app: FastifyInstance) => void) {
  return jwtServer(t, { protectedResource: { resource: 'https://files.example.com/mcp', authorizationServers: ['https://auth.example.com'] }, ...options }, setup)
}

/** A 2026-07-28 request over real HTTP. */
const post = postHttp

/** A POST whose headers may repeat (an array value is sent as one header line per item), as fetch cannot. */
function rawPost (url: string, headers: Record<string, string | string[]>, body: object): Promise<{ status: number, body: any }> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } }, (res) => {
      let text = ''
      res.setEncoding('utf8')
      res.on('data', (chunk) => { text += chunk })
      res.on('end', () => resolve({ status: res.statusCode as number, body: JSON.parse(text) }))
    })
    req.on('error', reject)
    req.end(JSON.stringify(body))
  })
}

const complete = (ref: object, name: string) => ({ ref, argument: { name, value: '' } })
const PROMPT = { type: 'ref/prompt', name: 'summarize' }
const TEMPLATE = { type: 'ref/resource', uri: 'archive://{path}' }

function scoped (app: FastifyInstance): void {
  app.mcp
    .prompt({ name: 'summarize', scopes: ['files:read'], arguments: [{ name: 'path', complete: ['alpha', 'beta'] }] }, () => 'Summarize')
    .resource({ uri: 'files://secret', name: 'secret', scopes: ['files:admin'] }, () => 'hush')
    .resource({ uri: 'files://open', name: 'open' }, () => 'hello')
    .resourceTemplate({ uriTemplate: 'archive://{path}', name: 'archive', scopes: ['files:admin'], complete: { path: ['a1', 'a2'] } }, () => 'old')
}

t.test('completion/complete of a scoped prompt or template answers the challenge its get or read answers', async (t) => {
  const { url, token } = await server(t, {}, scoped)
  const anonymous = await post(url, 'completion/complete', complete(PROMPT, 'path'))
  t.equal(anonymous.status, 401)
  t.equal(anonymous.challenge, `Bearer scope="files:read", resource_metadata="${METADATA}"`)
  t.equal(anonymous.body.error.message, 'The prompt summarize needs a token with the scope files:read: sign in')
  const reader = token({ scope: 'files:read' })
  t.same((await post(url, 'completion/complete', complete(PROMPT, 'path'), { token: reader })).body.result.completion.values, ['alpha', 'beta'])
  const template = await post(url, 'completion/complete', complete(TEMPLATE, 'path'), { token: reader })
  t.equal(template.status, 403)
  t.equal(template.challenge, `Bearer error="insufficient_scope", scope="files:admin", resource_metadata="${METADATA}"`)
  t.same(template.body.error, {
    code: -32600,
    message: 'The resource template archive://{path} needs the scope files:admin, which the token does not grant',
    data: { requiredScopes: ['files:admin'], missingScopes: ['files:admin'] },
  })
  const admin = token({ scope: 'files:admin' })
  t.same((await post(url, 'completion/complete', complete(TEMPLATE, 'path'), { token: admin })).body.result.completion.values, ['a1', 'a2'])
  const named = await post(url, 'completion/complete', complete(TEMPLATE, 'unknown'), { token: reader })
  t.equal(named.status, 403, 'even for a variable without a completer')
})

t.test('reads of a scoped resource, template or view are private, whatever their cache says', async (t) => {
  const { url, token } = await server(t, {}, (app) => {
    scoped(app)
    app.mcp
      .resource({ uri: 'files://cached', name: 'cached', scopes: ['files:admin'], cache: { ttlMs: 5_000, cacheScope: 'public' } }, () => 'c')
      .uiResource({ uri: 'ui://salary/card', name: 'salary', scopes: ['files:admin'], html: CARD })
      .uiResource({ uri: 'ui://salary/live', name: 'live', scopes: ['files:admin'], html: () => CARD, cache: { ttlMs: 1_000, cacheScope: 'public' } })
  })
  const admin = token({ scope: 'files:admin' })
  const read = async (uri: string) => (await post(url, 'resources/read', { uri }, { token: admin })).body.result
  t.equal((await read('files://secret')).cacheScope, 'private', 'a scoped resource')
  t.equal((await read('archive://2019')).cacheScope, 'private', 'a scoped template')
  t.same(await read('files://cached').then(({ ttlMs, cacheScope }: any) => ({ ttlMs, cacheScope })), { ttlMs: 5_000, cacheScope: 'private' }, 'its ttl kept, its scope private')
  t.equal((await read('ui://salary/card')).cacheScope, 'private', 'a scoped view')
  t.equal((await read('ui://salary/live')).cacheScope, 'private', 'a scoped view of the request, whatever its cache says')
  t.equal((await read('files://open')).cacheScope, 'public', 'a resource without scopes stays public')
})

t.test('a listen stream hears of a scoped resource only when its token grants the scopes', async (t) => {
  const { app, url, token } = await server(t, {}, scoped)
  const uris = ['files://secret', 'archive://2019', 'files://open']
  const subscribed = { resourceSubscriptions: [...uris, 'files://gone'] }
  const reader = await listen(url, 1, subscribed, { authorization: `Bearer ${token({ scope: 'files:read' })}` })
  const admin = await listen(url, 2, subscribed, { authorization: `Bearer ${token({ scope: 'files:admin' })}` })
  const anonymous = await listen(url, 3, subscribed)
  for (const stream of [reader, admin, anonymous]) t.equal((await stream.next()).method, 'notifications/subscriptions/acknowledged')
  app.mcp.notifyResourceUpdated('files://gone')
  for (const uri of uris) {
    app.mcp.notifyResourceUpdated(uri)
    t.equal((await admin.next()).params.uri, uri, `the admin hears of ${uri}`)
  }
  t.equal((await reader.next()).params.uri, 'files://open')
  t.equal((await anonymous.next()).params.uri, 'files://open')
  await sleep(20)
  t.same([reader, anonymous].map((stream) => stream.frames.length), [2, 2], 'nothing else reached the others')
  for (const stream of [reader, admin, anonymous]) stream.close()
})

t.test('a listen stream with access checks too: a resource both visible and scoped is heard only with the scopes', async (t) => {
  const { app, url, token } = await server(t, {}, (app) => {
    scoped(app)
    app.mcp.resource({ uri: 'files://team', name: 'team', canAccess: () => true, scopes: ['files:admin'] }, () => 'team')
  })
  const uris = ['files://team', 'files://secret', 'files://open']
  const reader = await listen(url, 1, { resourceSubscriptions: uris }, { authorization: `Bearer ${token({ scope: 'files:read' })}` })
  const admin = await listen(url, 2, { resourceSubscriptions: uris }, { authorization: `Bearer ${token({ scope: 'files:admin' })}` })
  for (const stream of [reader, admin]) await stream.next()
  for (const uri of uris) {
    app.mcp.notifyResourceUpdated(uri)
    t.equal((await admin.next()).params.uri, uri)
  }
  t.equal((await reader.next()).params.uri, 'files://open')
  await sleep(20)
  t.equal(reader.frames.length, 2, 'neither scoped resource reached the reader')
  reader.close()
  admin.close()
})

t.test('a 2025-era GET stream hears of a subscribed scoped resource only when its token grants the scopes', async (t) => {
  const { app, url, token } = await server(t, {}, scoped)
  const authorization = `Bearer ${token({ scope: 'files:read' })}`
  const headers = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization }
  const init = await fetch(url, {
    method: 'POST',
    headers,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'host', version: '1' } } }),
  })
  const session = { ...headers, 'mcp-session-id': init.headers.get('mcp-session-id') as string, 'mcp-protocol-version': '2025-11-25' }
  const controller = new AbortController()
  const stream = await fetch(url, { headers: { ...session, accept: 'text/event-stream' }, signal: controller.signal })
  const reader = (stream.body as ReadableStream<Uint8Array>).getReader()
  let id = 2
  for (const uri of ['files://secret', 'files://open']) {
    const reply = await fetch(url, { method: 'POST', headers: session, body: JSON.stringify({ jsonrpc: '2.0', id: id++, method: 'resources/subscribe', params: { uri } }) })
    t.equal(reply.status, 200)
    await reply.text()
  }
  await sleep(20)
  app.mcp.notifyResourceUpdated('files://secret')
  await sleep(20)
  app.mcp.notifyResourceUpdated('files://open')
  let text = ''
  while (!text.includes('files://open')) text += new TextDecoder().decode((await reader.read()).value)
  t.notMatch(text, /files:\/\/secret/, 'the scoped resource was not told of')
  controller.abort()
})

t.test('a scopes option answering anything but an array of strings grants nothing, logged once per request', async (t) => {
  const answers: unknown[] = ['nonadmin files:adminx', new Set(['files:admin']), 5, ['files:admin', 5], { 0: 'files:admin', length: 1 }, null]
  let answer: unknown
  const { url, lines, token } = await server(t, { scopes: () => answer as never }, scoped)
  const caller = token({})
  for (answer of answers) {
    const refused = await post(url, 'resources/read', { uri: 'files://secret' }, { token: caller })
    t.equal(refused.status, 403, `${String(answer)}: no substring match, no 500`)
    t.equal(refused.body.error.message, 'The resource files://secret needs the scope files:admin, which the token does not grant')
  }
  const logged = lines.filter((line) => line.level === 50 && /the scopes option returned/.test(line.msg)).map((line) => line.msg)
  t.same(logged.map((msg: string) => /returned (.*), not an array of strings/.exec(msg)?.[1]), [
    '"nonadmin files:adminx"', 'an object', '5', 'an array holding 5', 'an object', 'null',
  ])
  answer = ['files:admin']
  t.equal((await post(url, 'resources/read', { uri: 'files://secret' }, { token: caller })).body.result.contents[0].text, 'hush', 'an array of strings grants')
  answer = undefined
  t.equal((await post(url, 'resources/read', { uri: 'files://secret' }, { token: caller })).status, 403, 'undefined grants nothing, quietly')
  t.equal(lines.filter((line) => /the scopes option returned/.test(line.msg)).length, answers.length)
})

t.test('a listen stream whose scopes answer is bad hears nothing scoped, and is logged once however many changes', async (t) => {
  let answer: unknown = 'files:admin'
  const { app, url, lines, token } = await server(t, { scopes: () => answer as never }, scoped)
  const stream = await listen(url, 9, { resourceSubscriptions: ['files://secret', 'files://open'] }, { authorization: `Bearer ${token({})}` })
  await stream.next()
  for (let i = 0; i < 3; i++) app.mcp.notifyResourceUpdated('files://secret')
  await sleep(20)
  app.mcp.notifyResourceUpdated('files://open')
  t.equal((await stream.next()).params.uri, 'files://open')
  t.equal(lines.filter((line) => line.level === 50 && /the scopes option returned "files:admin"/.test(line.msg)).length, 1, 'one line for the stream')
  answer = ['files:admin']
  app.mcp.notifyResourceUpdated('files://secret')
  t.equal((await stream.next()).params.uri, 'files://secret', 'heard once the option answers an array')
  stream.close()
})

t.test('a clientInfo whose name, version or title is not a string is -32602 at the envelope, in both eras, never a 500', async (t) => {
  const { url } = await server(t, { elicitation: { disable: true } }, (app) => {
    app.mcp.tool({ name: 'ask' }, () => 'asked')
  })
  const INFO = 'io.modelcontextprotocol/clientInfo'
  const cases: Array<[object, string]> = [
    [{ name: { toString: 1 }, version: '1' }, 'name must be a string, got an object'],
    [{ name: 'host', version: 5 }, 'version must be a string, got 5'],
    [{ name: 'host' }, 'version must be a string, got undefined'],
    [{ name: 'host', version: '1', title: ['x'] }, 'title must be a string, got an array'],
  ]
  for (const [clientInfo, message] of cases) {
    const modern = await post(url, 'tools/call', { name: 'ask' }, { meta: { ...meta({ elicitation: {} }), [INFO]: clientInfo } })
    t.equal(modern.status, 400)
    t.same(modern.body.error, { code: -32602, message: `params._meta["${INFO}"].${message}` })
    const legacy = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo } }),
    })
    t.equal(legacy.status, 400)
    t.equal(legacy.headers.get('mcp-session-id'), null, 'no session')
    t.same((await legacy.json() as any).error, { code: -32602, message: `params.clientInfo.${message}` })
  }
  const titled = await post(url, 'tools/call', { name: 'ask' }, { meta: { ...meta({ elicitation: {} }), [INFO]: { name: 'host', version: '1', title: 'Host' } } })
  t.equal(titled.body.result.content[0].text, 'asked', 'a string title is fine')
})

t.test('elicitation.disable logs a client whose clientInfo fields are not strings without calling their toString', async (t) => {
  const logged: unknown[] = []
  const log = { info: (fields: unknown) => { logged.push(fields) }, error: () => {} } as never
  const policy = new ElicitationPolicy(true, log)
  const client = policy.apply({
    protocolVersion: '2026-07-28',
    capabilities: { elicitation: {} },
    info: { name: { toString: 1 }, version: 7 } as never,
    logLevel: 'info',
  } as never)
  t.equal(client.elicitationOff, true)
  t.same(logged, [{ mcp: { client: '(object) (number)' } }])
})

t.test('a version header that is not _meta\'s version is -32020 before it is unsupported', async (t) => {
  const { url } = await server(t, {}, (app) => { app.mcp.tool({ name: 'first' }, () => '1') })
  const body = (method: string, version: string) => ({ jsonrpc: '2.0', id: 7, method, params: { _meta: { ...meta({}), 'io.modelcontextprotocol/protocolVersion': version } } })
  for (const method of ['tools/list', 'server/discover']) {
    const twice = await rawPost(url, { 'mcp-protocol-version': ['2026-07-28', '2026-07-28'], 'mcp-method': method }, body(method, '2026-07-28'))
    t.equal(twice.status, 400, `${method}: a repeated header`)
    t.equal(twice.body.error.code, -32020)
    t.equal(twice.body.id, 7)
  }
  const repeated = await rawPost(url, { 'mcp-protocol-version': ['2026-07-28', '2026-07-28'], 'mcp-method': 'tools/list' }, body('tools/list', '2026-07-28'))
  t.equal(repeated.body.error.message,
    'The MCP-Protocol-Version header ("2026-07-28, 2026-07-28") does not match params._meta["io.modelcontextprotocol/protocolVersion"] ("2026-07-28")')
  const other = await rawPost(url, { 'mcp-protocol-version': '1900-01-01', 'mcp-method': 'tools/list' }, body('tools/list', '2026-07-28'))
  t.same([other.status, other.body.error.code], [400, -32020], 'an unknown header against a supported _meta')
  const same = await rawPost(url, { 'mcp-protocol-version': '1900-01-01', 'mcp-method': 'tools/list' }, body('tools/list', '1900-01-01'))
  t.same([same.status, same.body.error], [400, {
    code: -32022,
    message: 'Unsupported protocol version',
    data: { supported: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'], requested: '1900-01-01' },
  }], 'the same unknown version in both stays -32022')
  const bare = await rawPost(url, { 'mcp-protocol-version': '1900-01-01' }, { jsonrpc: '2.0', id: 8, method: 'tools/list', params: {} })
  t.same([bare.status, bare.body.error.code], [400, -32022], 'without _meta there is nothing to mismatch')
  const answer = await rawPost(url, { 'mcp-protocol-version': '1900-01-01' }, { jsonrpc: '2.0', id: 9, result: {} })
  t.same([answer.status, answer.body.error.code], [400, -32022], 'nor for a response')
})

t.test('tools/list is private while an app-only tool is registered, as it then differs by the client\'s extensions', async (t) => {
  const { app, url } = await server(t, {}, (app) => {
    app.mcp.uiResource({ uri: 'ui://booking/card', name: 'card', html: CARD })
      .tool({ name: 'show', ui: { resourceUri: 'ui://booking/card' } }, () => 'shown')
  })
  const list = (capabilities: object) => post(url, 'tools/list', {}, { meta: meta(capabilities) }).then(({ body }) => body.result)
  const views = { extensions: { [UI]: { mimeTypes: [MIME] } } }
  t.equal((await list({})).cacheScope, 'public', 'a tool linking a view is listed to everyone')
  app.mcp.tool({ name: 'refresh', ui: { resourceUri: 'ui://booking/card', visibility: ['app'] } }, () => 'r')
  const plain = await list({})
  const host = await list(views)
  t.same(plain.tools.map((tool: any) => tool.name), ['show'])
  t.same(host.tools.map((tool: any) => tool.name), ['show', 'refresh'])
  t.same([plain.cacheScope, host.cacheScope], ['private', 'private'])
  app.mcp.removeTool('refresh')
  t.equal((await list(views)).cacheScope, 'public', 'public again once none is app-only')
})

t.test('a ui:// URI in any case is a view: app.mcp.resource refuses it, app.mcp.uiResource takes it', async (t) => {
  const { app, url } = await server(t)
  for (const uri of ['UI://booking/card', 'Ui://booking/card', 'ui://booking/card']) {
    t.throws(() => app.mcp.resource({ uri, name: 'card' }, () => CARD),
      { code: 'FST_MOCAPI_INVALID_DEFINITION', message: `resource "${uri}": ui:// resources are views, registered with app.mcp.uiResource` })
    t.throws(() => app.mcp.resourceTemplate({ uriTemplate: `${uri}/{id}`, name: 'cards' }, () => CARD),
      { message: `resource template "${uri}/{id}": ui:// resources are views, each registered with app.mcp.uiResource` }, 'nor may a template serve them')
  }
  app.mcp.uiResource({ uri: 'UI://booking/card', name: 'card', html: CARD })
  const read = await post(url, 'resources/read', { uri: 'UI://booking/card' })
  t.equal(read.body.result.contents[0].mimeType, MIME)
})
