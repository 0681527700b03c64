import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { InvalidDefinitionError } from '../../lib/index.js'
import { build, call, capturedLogs } from '../helpers.js'

const UI = 'io.modelcontextprotocol/ui'
const MIME = 'text/html;profile=mcp-app'
const SHOWS_VIEWS = { extensions: { [UI]: { mimeTypes: [MIME] } } }
const CARD = '<!doctype html><html><body><p id="card">card</p></body></html>'

/** A 2025-era session through inject: initialize with `capabilities`, then requests on it. */
async function legacySession (app: FastifyInstance, capabilities: object) {
  const post = async (body: object, headers: Record<string, string> = {}) => {
    const response = await app.inject({ method: 'POST', url: '/mcp', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, payload: body })
    return { headers: response.headers, body: response.body === '' ? undefined : response.json() }
  }
  const opened = await post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 'host', version: '1' } } })
  const headers = { 'mcp-session-id': opened.headers['mcp-session-id'] as string, 'mcp-protocol-version': '2025-11-25' }
  let id = 1
  return {
    initialize: opened.body.result,
    request: async (method: string, params: object = {}) => (await post({ jsonrpc: '2.0', id: id++, method, params }, headers)).body,
  }
}

function booking (app: FastifyInstance): void {
  app.mcp.uiResource({ uri: 'ui://booking/card', name: 'Booking card', description: 'The booking, as a card', html: CARD, csp: { connectDomains: ['https://api.example.com'], resourceDomains: ['https://*.cdn.example.com', 'http://localhost:8080'] }, permissions: { clipboardWrite: {} }, domain: 'abc123.example-content.com', prefersBorder: true, _meta: { owner: 'travel' } })
    .tool({ name: 'show_booking', description: 'Shows the booking', ui: { resourceUri: 'ui://booking/card' }, _meta: { team: 'travel' } }, () => ({ content: [{ type: 'text', text: 'Booked: 3 nights in Lisbon' }], structuredContent: { nights: 3, city: 'Lisbon' } }))
    .tool({ name: 'cancel_from_card', description: 'Cancels, from the card', ui: { resourceUri: 'ui://booking/card', visibility: ['app'] } }, (_args, ctx) => `cancelled by ${ctx.principal}`)
    .tool({ name: 'plain' }, () => 'plain')
}

const LISTED_UI = { csp: { connectDomains: ['https://api.example.com'], resourceDomains: ['https://*.cdn.example.com', 'http://localhost:8080'] }, permissions: { clipboardWrite: {} }, domain: 'abc123.example-content.com', prefersBorder: true }

t.test('a view is a ui:// resource served as text/html;profile=mcp-app with the extension\'s _meta.ui, declared under capabilities.extensions', async (t) => {
  const app = await build(t, {}, booking)
  const discovered = await call(app, 'server/discover', {}, { capabilities: {} })
  t.same(discovered.body.result.capabilities.extensions, { [UI]: { mimeTypes: [MIME] } })
  const listed = await call(app, 'resources/list')
  t.same(listed.body.result.resources, [{ uri: 'ui://booking/card', name: 'Booking card', description: 'The booking, as a card', mimeType: MIME, _meta: { owner: 'travel', ui: LISTED_UI } }])
  const read = await call(app, 'resources/read', { uri: 'ui://booking/card' })
  t.same(read.body.result.contents, [{ uri: 'ui://booking/card', mimeType: MIME, text: CARD, _meta: { owner: 'travel', ui: LISTED_UI } }])
  t.equal(read.body.result.cacheScope, 'public', 'a view of one fixed document is the same for everyone')

  const tools = await call(app, 'tools/list', {}, { capabilities: SHOWS_VIEWS })
  t.same(tools.body.result.tools.map((tool: any) => [tool.name, tool._meta]), [
    ['show_booking', { team: 'travel', ui: { resourceUri: 'ui://booking/card' }, 'ui/resourceUri': 'ui://booking/card' }],
    ['cancel_from_card', { ui: { resourceUri: 'ui://booking/card', visibility: ['app'] }, 'ui/resourceUri': 'ui://booking/card' }],
    ['plain', undefined],
  ], 'the link is listed as _meta.ui, and as the older flat key; the host hides app-only tools from its model')
  t.notOk('ui' in tools.body.result.tools[0], 'the ui option itself is not listed')

  const session = await legacySession(app, SHOWS_VIEWS)
  t.same(session.initialize.capabilities.extensions, { [UI]: { mimeTypes: [MIME] } }, 'a 2025-era session is told the same')
  t.same((await session.request('resources/read', { uri: 'ui://booking/card' })).result.contents[0]._meta.ui, LISTED_UI)
  t.same((await session.request('tools/list')).result.tools.map((tool: any) => tool.name), ['show_booking', 'cancel_from_card', 'plain'])

  t.notOk('extensions' in (await call(await build(t, {}, (app) => { app.mcp.tool({ name: 'x' }, () => 'x') }), 'server/discover')).body.result.capabilities,
    'no view, no extension')
})

t.test('a host without the extension: app-only tools are left out of tools/list, results stay text first, calls are checked as any', async (t) => {
  const app = await build(t, {}, booking)
  for (const capabilities of [{}, { extensions: { [UI]: {} } }, { extensions: { [UI]: { mimeTypes: ['text/html'] } } }, { extensions: { [UI]: { mimeTypes: MIME } } }, { extensions: [UI] }, { extensions: 'x' }]) {
    const tools = await call(app, 'tools/list', {}, { capabilities })
    t.same(tools.body.result.tools.map((tool: any) => tool.name), ['show_booking', 'plain'], `hidden for ${JSON.stringify(capabilities)}`)
  }
  const session = await legacySession(app, { elicitation: {} })
  t.same((await session.request('tools/list')).result.tools.map((tool: any) => tool.name), ['show_booking', 'plain'], 'and for a 2025-era session without it')

  const shown = await call(app, 'tools/call', { name: 'show_booking' }, { capabilities: {} })
  t.same(shown.body.result.content, [{ type: 'text', text: 'Booked: 3 nights in Lisbon' }], 'a text-only host shows the text')
  t.same(shown.body.result.structuredContent, { nights: 3, city: 'Lisbon' })
  // Visibility is the host's to enforce (it knows who calls: its model or a view); mocapi checks callers.
  const called = await call(app, 'tools/call', { name: 'cancel_from_card' }, { capabilities: SHOWS_VIEWS })
  t.equal(called.body.result.content[0].text, 'cancelled by null')
  t.equal((await session.request('tools/call', { name: 'cancel_from_card' })).result.content[0].text, 'cancelled by null')
})

t.test('canAccess and scopes apply to app-only tools and to views exactly as to others', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.uiResource({ uri: 'ui://admin/panel', name: 'Admin', html: CARD, canAccess: (ctx) => ctx.request.headers['x-admin'] === 'yes' })
      .uiResource({ uri: 'ui://files/browser', name: 'Files', html: CARD, scopes: ['files:read'] })
      .tool({ name: 'purge', ui: { resourceUri: 'ui://admin/panel', visibility: ['app'] }, canAccess: (ctx) => ctx.request.headers['x-admin'] === 'yes' }, () => 'purged')
  })
  const stranger = await call(app, 'tools/call', { name: 'purge' }, { capabilities: SHOWS_VIEWS })
  t.match(stranger.body.error, { code: -32602, message: 'Unknown tool: purge' })
  const admin = await call(app, 'tools/call', { name: 'purge' }, { capabilities: SHOWS_VIEWS, headers: { 'x-admin': 'yes' } })
  t.equal(admin.body.result.content[0].text, 'purged')
  t.same((await call(app, 'tools/list', {}, { capabilities: SHOWS_VIEWS })).body.result.tools, [], 'hidden from the listing of a caller who may not')
  t.match((await call(app, 'resources/read', { uri: 'ui://admin/panel' })).body.error, { code: -32602, message: 'Resource not found' })
  t.equal((await call(app, 'resources/read', { uri: 'ui://admin/panel' }, { headers: { 'x-admin': 'yes' } })).body.result.contents[0].text, CARD)
  t.equal((await call(app, 'resources/read', { uri: 'ui://admin/panel' }, { headers: { 'x-admin': 'yes' } })).body.result.cacheScope, 'private')
  const unscoped = await call(app, 'resources/read', { uri: 'ui://files/browser' })
  t.equal(unscoped.status, 401, 'an anonymous read of a scoped view gets the challenge')
})

t.test('html as a function of the request, or a file', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mocapi-views-'))
  const file = join(dir, 'card.html')
  writeFileSync(file, CARD)
  const logs = capturedLogs('error')
  const app = await build(t, {}, (app) => {
    app.mcp.uiResource({ uri: 'ui://greeting/card', name: 'Greeting', html: async (ctx) => `<!doctype html><p>Hello ${ctx.request.headers['x-user']}</p>` })
      .uiResource({ uri: 'ui://file/card', name: 'From a path', file })
      .uiResource({ uri: 'ui://file/url', name: 'From a URL', file: pathToFileURL(file) })
      .uiResource({ uri: 'ui://broken/card', name: 'Broken', html: () => 42 as unknown as string })
      .uiResource({ uri: 'ui://empty/card', name: 'Empty', html: () => '' })
  }, logs.options)
  const greeting = await call(app, 'resources/read', { uri: 'ui://greeting/card' }, { headers: { 'x-user': 'Ada' } })
  t.same(greeting.body.result.contents, [{ uri: 'ui://greeting/card', mimeType: MIME, text: '<!doctype html><p>Hello Ada</p>' }])
  t.equal(greeting.body.result.cacheScope, 'private', 'HTML made per request may differ per caller')
  t.equal((await call(app, 'resources/read', { uri: 'ui://file/card' })).body.result.contents[0].text, CARD)
  t.equal((await call(app, 'resources/read', { uri: 'ui://file/url' })).body.result.contents[0].text, CARD)
  for (const uri of ['ui://broken/card', 'ui://empty/card']) {
    const broken = await call(app, 'resources/read', { uri })
    t.match(broken.body.error, { code: -32603 }, `${uri}: an internal error, not a page without HTML`)
  }
  t.match(logs.lines.filter((line) => line.level === 50).map((line) => line.err?.message), [/html function of view "ui:\/\/broken\/card" returned 42, not an HTML document/, /returned "", not an HTML document/])
  t.equal((await call(app, 'resources/read', { uri: 'ui://file/card' })).status, 200, 'and the server goes on serving')
})

t.test('views and links are checked at registration, with messages that name the bad value', async (t) => {
  const app = await build(t)
  const empty = join(mkdtempSync(join(tmpdir(), 'mocapi-views-')), 'empty.html')
  writeFileSync(empty, '\n')
  const view = (definition: object) => () => app.mcp.uiResource({ uri: 'ui://v/1', name: 'v', html: CARD, ...definition } as any)
  const refused: Array<[() => unknown, RegExp]> = [
    [view({ uri: 'https://example.com/v' }), /view uri must be a ui:\/\/ URI such as ui:\/\/booking\/card, got "https:\/\/example.com\/v"/],
    [view({ uri: 'ui://' }), /view uri must be a ui:\/\/ URI/],
    [view({ name: '' }), /view "ui:\/\/v\/1" name must be a non-empty string/],
    [view({ mimeType: 'text/html' }), /view "ui:\/\/v\/1" has an unknown field "mimeType"/],
    [view({ html: undefined }), /needs html \(a string, or a function of the request\) or file \(a path\), exactly one/],
    [view({ file: '/x.html' }), /exactly one/],
    [view({ html: '  ' }), /view "ui:\/\/v\/1" html must be an HTML document/],
    [view({ html: 5 }), /html must be an HTML document .*got 5/],
    [view({ html: undefined, file: '/nonexistent/card.html' }), /view "ui:\/\/v\/1" file \/nonexistent\/card.html could not be read: ENOENT/],
    [view({ html: undefined, file: 7 }), /file must be a path or a file: URL, got 7/],
    [view({ csp: [] }), /csp must be an object, got an array/],
    [view({ csp: { scriptDomains: [] } }), /view "ui:\/\/v\/1" csp has an unknown field "scriptDomains"/],
    [view({ csp: { connectDomains: 'https://a.example.com' } }), /csp.connectDomains must be an array of origins/],
    [view({ csp: { connectDomains: ['https://a.example.com; script-src *'] } }), /csp.connectDomains\[0\] must be an origin such as https:\/\/api.example.com/],
    [view({ csp: { resourceDomains: ['https://ok.example.com', 'https://cdn.example.com/path'] } }), /csp.resourceDomains\[1\] must be an origin/],
    [view({ csp: { frameDomains: ['*'] } }), /csp.frameDomains\[0\] must be an origin/],
    [view({ csp: { frameDomains: ['https://*'] } }), /csp.frameDomains\[0\] must be an origin/],
    [view({ csp: { baseUriDomains: ["'self'"] } }), /csp.baseUriDomains\[0\] must be an origin/],
    [view({ csp: { connectDomains: ['javascript://x.example.com'] } }), /csp.connectDomains\[0\] must be an origin/],
    [view({ csp: { connectDomains: ['https://a.example.com:70000'] } }), /csp.connectDomains\[0\] must be an origin/],
    [view({ csp: { connectDomains: ['https://a.example.com '] } }), /csp.connectDomains\[0\] must be an origin/],
    [view({ csp: { connectDomains: [5] } }), /csp.connectDomains\[0\] must be an origin .*got 5/],
    [view({ csp: { connectDomains: ['https://a.example.com:0'] } }), /csp.connectDomains\[0\] must be an origin/],
    [view({ csp: { connectDomains: [`https://${'a.'.repeat(150)}example.com`] } }), /csp.connectDomains\[0\] must be an origin/],
    [view({ html: undefined, file: empty }), /view "ui:\/\/v\/1" file .*empty.html must be an HTML document/],
    [view({ permissions: { usb: {} } }), /permissions has an unknown field "usb"/],
    [view({ permissions: { camera: true } }), /permissions.camera must be \{\}, got true/],
    [view({ permissions: { camera: { always: true } } }), /permissions.camera must be \{\}, got an object/],
    [view({ domain: 'https://a.example.com/x' }), /domain must be a host name such as abc123.example-content.com/],
    [view({ domain: 'localhost' }), /domain must be a host name/],
    [view({ prefersBorder: 'yes' }), /prefersBorder must be true or false, got "yes"/],
    [view({ _meta: { ui: { csp: {} } } }), /_meta.ui is built by mocapi: set csp, permissions, domain and prefersBorder instead/],
    [() => app.mcp.resource({ uri: 'ui://v/2', name: 'v' }, () => CARD), /ui:\/\/ resources are views, registered with app.mcp.uiResource/],
    [() => app.mcp.tool({ name: 'a', ui: { resourceUri: 'ui://missing' } }, () => 'a'), /tool "a" ui.resourceUri must be the ui:\/\/ URI of a view registered with app.mcp.uiResource \(register the view first\), got "ui:\/\/missing"/],
    [() => app.mcp.tool({ name: 'a', ui: {} }, () => 'a'), /tool "a" ui needs resourceUri/],
    [() => app.mcp.tool({ name: 'a', ui: { visibility: [] } }, () => 'a'), /tool "a" ui.visibility must be \['model'\], \['app'\] or \['model', 'app'\], got an array/],
    [() => app.mcp.tool({ name: 'a', ui: { visibility: ['user'] } } as any, () => 'a'), /ui.visibility must be/],
    [() => app.mcp.tool({ name: 'a', ui: { visibility: ['app', 'app'] } }, () => 'a'), /ui.visibility must be/],
    [() => app.mcp.tool({ name: 'a', ui: { resourceUri: 'ui://v/1', view: 'x' } } as any, () => 'a'), /tool "a" ui has an unknown field "view"/],
    [() => app.mcp.tool({ name: 'a', ui: 'ui://v/1' } as any, () => 'a'), /tool "a" ui must be an object, got "ui:\/\/v\/1"/],
    [() => app.mcp.tool({ name: 'a', _meta: { ui: { resourceUri: 'ui://v/1' } } }, () => 'a'), /tool "a" _meta.ui is built by mocapi: link a view with the tool's ui option/],
    [() => app.mcp.tool({ name: 'a', _meta: { 'ui/resourceUri': 'ui://v/1' } }, () => 'a'), /_meta.ui is built by mocapi/],
    [() => app.mcp.tool({ name: 'a', _meta: 'ui' } as any, () => 'a'), /tool "a" _meta must be an object, got "ui"/],
  ]
  for (const [register, message] of refused) t.throws(register, { name: InvalidDefinitionError.name, message }, String(message))
  t.same(app.mcp.listResources(), [], 'nothing half-registered')
  t.same(app.mcp.listTools(), [])

  view({})()
  t.throws(view({}), /FST_MOCAPI_DUPLICATE_DEFINITION|already registered/, 'a view twice')
  app.mcp.uiResource({ uri: 'ui://v/open', name: 'open', html: CARD, csp: { connectDomains: ['wss://*.example.com:*', 'http://[::1]:8080', 'https://127.0.0.1'], frameDomains: [] }, domain: 'https://sandbox.example.com' })
  t.same(app.mcp.listResources().at(-1)?._meta, { ui: { csp: { connectDomains: ['wss://*.example.com:*', 'http://[::1]:8080', 'https://127.0.0.1'], frameDomains: [] }, domain: 'https://sandbox.example.com' } })
})

t.test('a view a tool links cannot be removed from under it; the extension goes with the last view', async (t) => {
  const app = await build(t)
  app.mcp.uiResource({ uri: 'ui://v/1', name: 'v', html: CARD })
    .tool({ name: 'show', ui: { resourceUri: 'ui://v/1' } }, () => 'shown')
    .tool({ name: 'also', ui: { resourceUri: 'ui://v/1', visibility: ['model'] } }, () => 'also')
  t.throws(() => app.mcp.removeResource('ui://v/1'), { name: InvalidDefinitionError.name, message: 'view "ui://v/1" is the view of tool "show", tool "also": remove or re-register those first' })
  t.ok(app.mcp.removeTool('show'))
  t.ok(app.mcp.removeTool('also'))
  t.ok(app.mcp.removeResource('ui://v/1'))
  t.notOk(app.mcp.removeResource('ui://v/1'))
  t.notOk('extensions' in (await call(app, 'server/discover')).body.result.capabilities)
  t.throws(() => app.mcp.tool({ name: 'show', ui: { resourceUri: 'ui://v/1' } }, () => 'shown'), /register the view first/)

  app.mcp.uiResource({ uri: 'ui://v/2', name: 'v', html: CARD })
    .tool({ name: 'hidden', ui: { visibility: ['app'] } }, () => 'h')
  t.same((await call(app, 'tools/list', {}, { capabilities: {} })).body.result.tools, [])
  t.ok(app.mcp.removeTool('hidden'))
  app.mcp.tool({ name: 'hidden' }, () => 'h')
  t.same((await call(app, 'tools/list', {}, { capabilities: {} })).body.result.tools.map((tool: any) => tool.name), ['hidden'], 'a tool registered again under the name is listed as it is now')
})

t.test('ctx.clientSupports reads what the client declared, on the request or its session, whatever shape it sent', async (t) => {
  const app = await build(t, { elicitation: { disable: (client) => client?.name === 'no-asking' } }, (app) => {
    app.mcp.tool({ name: 'supports' }, (_args, ctx) => ['io.modelcontextprotocol/ui', 'io.modelcontextprotocol/tasks', 'elicitation', 'sampling', 'roots', 'extensions', 'constructor', '__proto__', 'toString']
      .filter((name) => ctx.clientSupports(name)).join(' '))
  })
  const supports = async (capabilities: object, clientInfo = { name: 'host', version: '1' }) => (await call(app, 'tools/call', { name: 'supports' }, {
    meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': capabilities, 'io.modelcontextprotocol/clientInfo': clientInfo },
  })).body.result.content[0].text
  t.equal(await supports({ ...SHOWS_VIEWS, elicitation: {}, sampling: {} }), 'io.modelcontextprotocol/ui elicitation sampling extensions')
  t.equal(await supports({ extensions: { 'io.modelcontextprotocol/tasks': {}, [UI]: { mimeTypes: ['text/html'] } }, roots: {} }), 'io.modelcontextprotocol/tasks roots extensions')
  t.equal(await supports({ elicitation: true, sampling: [], roots: null, extensions: { 'io.modelcontextprotocol/tasks': 'yes' } }), 'extensions')
  t.equal(await supports({ constructor: {} }), 'constructor', 'own keys, not what every object inherits')
  t.equal(await supports({ elicitation: {}, sampling: {} }, { name: 'no-asking', version: '1' }), 'sampling', 'elicitation turned off by the operator reads as not declared')
  const session = await legacySession(app, { ...SHOWS_VIEWS, roots: {} })
  t.equal((await session.request('tools/call', { name: 'supports' })).result.content[0].text, 'io.modelcontextprotocol/ui roots extensions', 'a 2025-era session: what its initialize declared')
})
