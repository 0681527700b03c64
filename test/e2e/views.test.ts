/**
 * A view (the MCP Apps extension, `io.modelcontextprotocol/ui`) in a real host: headless Chromium loads a host page
 * whose official v2 client calls a tool over real HTTP with a JWT, reads the tool's view, renders it through a sandbox
 * proxy on another origin with the official `AppBridge`, and the view (the official `App`) calls an app-only tool back
 * through the host, which answers the tool's elicitation. Both protocol eras: a 2025-11-25 session (the client's
 * default; the question comes as a request on the call's stream) and 2026-07-28 (pinned; it comes back in an
 * `input_required` result, and the client retries the call with the answer).
 *
 * Without Chromium (`/usr/bin/chromium`, or `CHROMIUM_PATH`) it is skipped, unless `MOCAPI_REQUIRE_SERVERS=1`.
 * Screenshots land in `.tap/screenshots/`.
 */
import t, { type Test } from 'tap'
import Fastify from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import type { Browser, FrameLocator, Locator } from 'playwright-core'
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client'
import mocapi, { requestedSchema } from '../../lib/index.js'
import { KEY } from '../helpers.js'
import { HOST_PAGE, bundle, counterView, findChromium, launch, sandboxPage, screenshotAfter } from '../browser/harness.js'
import type { HostConfig } from '../browser/host.js'
import { demo, demoEnv, loader } from './demo-process.js'

const UI = 'io.modelcontextprotocol/ui'
const VIEW_URI = 'ui://counter/view'
const MIME = 'text/html;profile=mcp-app'
/** An origin the view's policy lets it fetch (port 9: browsers refuse to connect, so nothing is sent). */
const ALLOWED = 'http://127.0.0.1:9'

/** What the server saw. */
interface Seen {
  /** Each bump applied: who asked (`ctx.principal`) and by how much. */
  bumps: Array<{ principal: string | null, by: number }>
  /** The principal of each run of bump's handler: mocapi replays a handler once it has the answer, in both eras. */
  bumpRuns: Array<string | null>
  /** Whether each `show_counter` call came from a client that shows views. */
  showsViews: boolean[]
}

/**
 * A counter on a free port of 127.0.0.1, the MCP endpoint behind @fastify/jwt (HS256), plus the host page, its script
 * and the sandbox proxy page, served unauthenticated from the same app.
 */
async function counterServer (t: Test) {
  const secret = randomBytes(32).toString('base64')
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(fastifyJwt, { secret, sign: { algorithm: 'HS256' }, verify: { algorithms: ['HS256'] } })
  app.addHook('onRequest', async (request) => {
    if (request.routeOptions.url === '/mcp') await request.jwtVerify()
  })
  // The host page calls /mcp from its own origin (http://127.0.0.1:PORT, a loopback origin mocapi allows by default);
  // the view, on http://localhost:PORT, never calls it, and its policy would stop it.
  await app.register(mocapi, { requestState: { keys: [KEY] } })

  const seen: Seen = { bumps: [], bumpRuns: [], showsViews: [] }
  let count = 0
  const result = (text: string) => ({ content: [{ type: 'text' as const, text }], structuredContent: { count } })

  app.mcp.uiResource({
    uri: VIEW_URI,
    name: 'Counter',
    description: 'Shows the counter and bumps it',
    html: await counterView(),
    csp: { connectDomains: [ALLOWED] },
    prefersBorder: true,
  })
  app.mcp.tool({
    name: 'show_counter',
    description: 'Shows the counter',
    inputSchema: { type: 'object', properties: {} },
    ui: { resourceUri: VIEW_URI },
  }, (_args, ctx) => {
    seen.showsViews.push(ctx.clientSupports(UI))
    return result(`Count: ${count}`)
  })
  app.mcp.tool({
    name: 'bump',
    description: 'Bumps the counter by an amount the user gives',
    inputSchema: { type: 'object', properties: {} },
    ui: { resourceUri: VIEW_URI, visibility: ['app'] },
  }, async (_args, ctx) => {
    seen.bumpRuns.push(ctx.principal)
    const answer = await ctx.elicit('Bump by how much?', requestedSchema().integer('by', { title: 'By', minimum: 1, maximum: 10 }))
    if (answer.action !== 'accept') return result(`Not bumped (${answer.action}); count: ${count}`)
    count += answer.content.by
    seen.bumps.push({ principal: ctx.principal, by: answer.content.by })
    return result(`Count: ${count}`)
  })

  app.get('/host', (_request, reply) => reply.type('text/html; charset=utf-8').send(HOST_PAGE))
  app.get('/host.js', async (_request, reply) => reply.type('text/javascript; charset=utf-8').send(await bundle('host')))
  app.get('/sandbox', async (_request, reply) => reply.type('text/html; charset=utf-8').send(await sandboxPage()))

  await app.listen({ host: '127.0.0.1', port: 0 })
  const port = (app.server.address() as AddressInfo).port
  return { app, seen, port, token: app.jwt.sign({ sub: 'ada' }) }
}

/** Waits until the locator's whole text is `text`; the message says what it was instead. */
async function textIs (locator: Locator, text: string, timeout = 10_000): Promise<void> {
  try {
    await locator.filter({ hasText: new RegExp(`^${text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`) }).waitFor({ timeout })
  } catch {
    throw new Error(`expected ${JSON.stringify(text)}, the page shows ${JSON.stringify(await locator.textContent({ timeout: 1_000 }).catch(() => null))}`)
  }
}

/** The same server to a client that shows no views (the official v2 client, from Node): no app-only tool for it. */
async function withoutViews (t: Test, server: Awaited<ReturnType<typeof counterServer>>, era: HostConfig['era']): Promise<void> {
  const client = new Client({ name: 'plain-client', version: '1.0.0' }, {
    capabilities: { elicitation: { form: {} } },
    ...(era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' as const } } } : {}),
  })
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${server.port}/mcp`), {
    requestInit: { headers: { authorization: `Bearer ${server.token}` } },
  }))
  t.teardown(() => client.close())
  t.same((await client.listTools()).tools.map((tool) => tool.name), ['show_counter'], 'a client that shows no views is not listed bump')
  const result = await client.callTool({ name: 'show_counter', arguments: {} })
  t.same(result.content, [{ type: 'text', text: 'Count: 0' }], 'its result stays text first')
  t.same(server.seen.showsViews, [false])
  server.seen.showsViews.length = 0
}

async function scenario (t: Test, browser: Browser, era: HostConfig['era']): Promise<void> {
  const server = await counterServer(t)
  await withoutViews(t, server, era)
  const context = await browser.newContext({ viewport: { width: 720, height: 560 } })
  t.teardown(() => context.close())
  const page = await context.newPage()
  const consoleErrors: string[] = []
  page.on('console', (message) => { if (message.type() === 'error') consoleErrors.push(`${message.text()} (${message.location().url})`) })
  page.on('pageerror', (error) => consoleErrors.push(`page error: ${error.message}`))

  const config: HostConfig = {
    mcpUrl: `http://127.0.0.1:${server.port}/mcp`,
    token: server.token,
    era,
    // Another origin than the host page's: localhost, not 127.0.0.1.
    sandboxUrl: `http://localhost:${server.port}/sandbox`,
  }
  await page.addInitScript((config) => { if (window.top === window) window.hostConfig = config }, config)

  await screenshotAfter(t, page, async () => {
    await page.goto(`http://127.0.0.1:${server.port}/host`)
    await page.evaluate(() => window.host!.ready)
    const connected = await page.evaluate(() => ({
      era: window.host!.era,
      version: window.host!.protocolVersion,
      tools: window.host!.tools.map((tool) => ({ name: tool.name, _meta: tool._meta })),
      modelTools: window.host!.modelTools,
    }))
    t.same([connected.era, connected.version], era === 'modern' ? ['modern', '2026-07-28'] : ['legacy', '2025-11-25'])
    t.same(connected.tools.map((tool) => tool.name).sort(), ['bump', 'show_counter'], 'a host that shows views is listed the app-only tool')
    t.match(connected.tools.find((tool) => tool.name === 'bump'), { _meta: { ui: { resourceUri: VIEW_URI, visibility: ['app'] } } })
    t.match(connected.tools.find((tool) => tool.name === 'show_counter'), { _meta: { ui: { resourceUri: VIEW_URI } } })
    t.same(connected.modelTools, ['show_counter'], 'the host keeps the app-only tool from its model')

    const shown = await page.evaluate(() => window.host!.callTool('show_counter'))
    t.same(shown.structuredContent, { count: 0 })
    t.same(server.seen.showsViews, [true], 'the server saw a client that shows views')
    t.match(await page.evaluate(() => window.host!.views), [{
      uri: VIEW_URI,
      mimeType: MIME,
      tool: 'show_counter',
      meta: { csp: { connectDomains: [ALLOWED] }, prefersBorder: true },
    }])

    const view: FrameLocator = page.frameLocator('iframe.view').frameLocator('#view')
    await textIs(view.locator('#count'), '0')

    await page.evaluate(() => { window.hostAnswers!.push({ action: 'accept', content: { by: 2 } }) })
    await view.locator('#bump').click()
    await textIs(view.locator('#status'), 'Count: 2')
    await textIs(view.locator('#count'), '2')

    t.same(server.seen.bumps, [{ principal: 'ada', by: 2 }], 'bump applied once, as the token\'s subject')
    t.same(server.seen.bumpRuns, ['ada', 'ada'], 'two runs, both as ada: up to the question, then the replay with its answer')
    const asked = await page.evaluate(() => window.hostLog!)
    t.equal(asked.length, 1, 'the host answered one elicitation')
    t.match(asked[0], {
      message: 'Bump by how much?',
      requestedSchema: { type: 'object', properties: { by: { type: 'integer', title: 'By', minimum: 1, maximum: 10 } }, required: ['by'] },
      answer: 'accept',
    })
    t.same(await page.evaluate(() => window.host!.bridged), [{ name: 'bump', arguments: {}, outcome: 'forwarded' }])

    // The host built the view's policy from csp: the allowed origin passed, the MCP server's own was blocked.
    await view.locator('#csp[data-violations]').waitFor({ timeout: 10_000 })
    const violations = JSON.parse(await view.locator('#csp').getAttribute('data-violations') ?? '[]') as Array<{ directive: string, blocked: string }>
    t.same(violations, [{ directive: 'connect-src', blocked: `http://127.0.0.1:${server.port}/mcp` }], 'one violation: the MCP server\'s origin')

    t.same(await page.evaluate(() => window.host!.errors), [], 'no errors in the host')
    // The console's only errors are the probe's: the allowed origin failed in the network (past the policy), the
    // MCP server's own was refused by the policy.
    const denied = `http://127.0.0.1:${server.port}/mcp`
    const probed = (line: string) => line.endsWith(`(${ALLOWED}/)`) || (line.includes('Content Security Policy') && line.includes(denied))
    t.same(consoleErrors.filter((line) => !probed(line)), [], 'no other errors on the console')
    t.ok(consoleErrors.some((line) => line.endsWith(`(${ALLOWED}/)`)), 'the allowed fetch reached the network')
  })
}

/** The demo server in a process of its own, on a free port, with `env` added; stopped when the test ends. */
async function demoServer (t: Test, env: Record<string, string>): Promise<string> {
  const child = spawn(process.execPath, [...loader, demo], { env: demoEnv({ PORT: '0', LOG_LEVEL: 'info', ...env }), stdio: ['ignore', 'pipe', 'inherit'] })
  t.teardown(async () => {
    if (child.exitCode !== null) return
    const exited = once(child, 'exit')
    child.kill('SIGTERM')
    await exited
  })
  let buffer = ''
  return new Promise<string>((resolve, reject) => {
    child.stdout.on('data', (chunk: Buffer) => {
      buffer += chunk.toString()
      const url = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(buffer)
      if (url !== null) resolve(url[1])
    })
    child.once('exit', (code) => reject(new Error(`the demo exited with ${code} before listening`)))
  })
}

/**
 * The demo's booking card in a host that is a web page on an origin of its own, as the extension's basic-host is: the
 * host's client calls the demo cross-origin, which `CORS_ORIGINS` allows (README), the host answers book_flight's two
 * questions, the card renders the booking, and its button calls the app-only flight_status.
 */
async function demoCard (t: Test, browser: Browser, era: HostConfig['era']): Promise<void> {
  const site = Fastify()
  t.teardown(() => site.close())
  site.get('/host', (_request, reply) => reply.type('text/html; charset=utf-8').send(HOST_PAGE))
  site.get('/host.js', async (_request, reply) => reply.type('text/javascript; charset=utf-8').send(await bundle('host')))
  site.get('/sandbox', async (_request, reply) => reply.type('text/html; charset=utf-8').send(await sandboxPage()))
  await site.listen({ host: '127.0.0.1', port: 0 })
  const sitePort = (site.server.address() as AddressInfo).port
  const hostOrigin = `http://127.0.0.1:${sitePort}`
  const base = await demoServer(t, { CORS_ORIGINS: hostOrigin })

  const context = await browser.newContext({ viewport: { width: 720, height: 560 } })
  t.teardown(() => context.close())
  const page = await context.newPage()
  const consoleErrors: string[] = []
  page.on('console', (message) => { if (message.type() === 'error') consoleErrors.push(message.text()) })
  page.on('pageerror', (error) => consoleErrors.push(`page error: ${error.message}`))
  const config: HostConfig = { mcpUrl: `${base}/mcp`, era, sandboxUrl: `http://localhost:${sitePort}/sandbox` }
  await page.addInitScript((config) => { if (window.top === window) window.hostConfig = config }, config)

  await screenshotAfter(t, page, async () => {
    await page.goto(`${hostOrigin}/host`)
    await page.evaluate(() => window.host!.ready)
    t.equal(await page.evaluate(() => window.host!.protocolVersion), era === 'modern' ? '2026-07-28' : '2025-11-25', 'connected across origins')
    t.same(await page.evaluate(() => window.host!.modelTools), ['weather', 'convert_currency', 'book_flight'], 'flight_status is the card\'s, not the model\'s')
    await page.evaluate(() => {
      window.hostAnswers!.push({ action: 'accept', content: { confirm: true, cabin: 'business' } }, { action: 'accept', content: { seat: 'window' } })
    })
    const booked = await page.evaluate(() => window.host!.callTool('book_flight', { to: 'Lisbon' }))
    t.same(booked.content, [{ type: 'text', text: 'Booked business to Lisbon, window seat' }])
    t.same((await page.evaluate(() => window.hostLog!)).map((asked) => asked.message), ['Book a flight to Lisbon?', 'Any seat preference?'])
    const card: FrameLocator = page.frameLocator('iframe.view').frameLocator('#view')
    await textIs(card.locator('#title'), 'Booked')
    await textIs(card.locator('#to'), 'Lisbon')
    await textIs(card.locator('#cabin'), 'business')
    await textIs(card.locator('#seat'), 'window')
    await card.locator('#status-button').click()
    await textIs(card.locator('#status'), 'The flight to Lisbon is on time, boarding at gate C13')
    t.same(await page.evaluate(() => window.host!.bridged), [{ name: 'flight_status', arguments: { to: 'Lisbon' }, outcome: 'forwarded' }])
    t.same(await page.evaluate(() => window.host!.errors), [], 'no errors in the host')
    t.same(consoleErrors, [], 'nothing refused: not CORS, not the card\'s policy')
  })
}

const chromiumPath = findChromium()
if (chromiumPath === undefined) {
  const looked = process.env.CHROMIUM_PATH ? `CHROMIUM_PATH=${process.env.CHROMIUM_PATH}` : '/usr/bin/chromium, chromium-browser, google-chrome; or set CHROMIUM_PATH'
  if (process.env.MOCAPI_REQUIRE_SERVERS === '1') {
    t.fail(`chromium is not installed (${looked}), and MOCAPI_REQUIRE_SERVERS=1 requires the views test to run: install chromium`)
  } else {
    t.plan(0, `chromium is not installed (${looked}): the views test needs it (set MOCAPI_REQUIRE_SERVERS=1 to fail instead)`)
  }
} else {
  t.setTimeout(60_000)
  const browser = await launch(t, chromiumPath)
  t.test('a 2025-era session: the view shows the result and bumps through the host, which answers the elicitation', (t) => scenario(t, browser, 'legacy'))
  t.test('2026-07-28: the same, the elicitation coming back in an input_required result', (t) => scenario(t, browser, 'modern'))
  t.test('the demo\'s booking card, in a web host on another origin, 2025 session', (t) => demoCard(t, browser, 'legacy'))
  t.test('the demo\'s booking card, in a web host on another origin, 2026-07-28', (t) => demoCard(t, browser, 'modern'))
}
