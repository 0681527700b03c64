import t from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import type { AddressInfo } from 'node:net'
import mocapi, { requestedSchema, type MocapiOptions } from '../../lib/index.js'
import { McpClientError, accept, byKind, createTestClient, sampled, textOf } from '../../lib/testing/index.js'
import { KEY, build, capturedLogs } from '../helpers.js'

type Test = Parameters<typeof build>[0]

const confirm = requestedSchema().boolean('confirm')

/** A listening server whose `delete_file` asks with `{ unavailable: 'return' }`, and `strict` without it. */
async function server (t: Test, options: MocapiOptions = {}): Promise<{ url: string, app: FastifyInstance, lines: Array<Record<string, any>> }> {
  const { lines, options: logging } = capturedLogs()
  const app = Fastify(logging)
  await app.register(mocapi, { requestState: { keys: [KEY] }, ...options })
  app.mcp.tool({ name: 'delete_file' }, async (_args, ctx) => {
    const ok = await ctx.elicit('Delete it?', confirm, { unavailable: 'return' })
    if (ok.action === 'unavailable') return { isError: true, content: [{ type: 'text', text: `I could not ask you: ${ok.reason}` }] }
    return ok.action === 'accept' && ok.content.confirm ? 'deleted' : 'kept'
  })
  app.mcp.tool({ name: 'strict' }, async (_args, ctx) => {
    const ok = await ctx.elicit('Delete it?', confirm)
    return ok.action
  })
  app.mcp.tool({ name: 'then_sample' }, async (_args, ctx) => {
    const link = await ctx.elicitUrl('Sign in', 'https://example.com/login', { unavailable: 'return' })
    const reply = await ctx.sample({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 5 })
    return `${link.action} / ${reply.model}`
  })
  app.mcp.tool({ name: 'ask_model' }, async (_args, ctx) => {
    const reply = await ctx.sample({ messages: [{ role: 'user', content: { type: 'text', text: 'hi' } }], maxTokens: 5 }, { unavailable: 'return' })
    const roots = await ctx.listRoots({ unavailable: 'return' })
    return `${'action' in reply ? reply.reason : reply.model} | ${'action' in roots ? roots.action : roots.length}`
  })
  app.mcp.tool({ name: 'odd' }, async (_args, ctx) => {
    await ctx.elicit('Delete it?', confirm, { unavailable: 'yes' as never })
    return 'never'
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  return { url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`, app, lines }
}

for (const version of ['2026-07-28', '2025-11-25'] as const) {
  // The 2025 revisions have no -32021: their clients get -32602 naming the capability.
  const missing = version === '2026-07-28' ? -32021 : -32602
  t.test(`${version}: a client without the capability: unavailable with the option, -32021 without`, async (t) => {
    const { url } = await server(t)
    const client = createTestClient(url, { protocolVersion: version, capabilities: { sampling: {} } })
    const { result } = await client.callTool('delete_file')
    t.equal(result.isError, true)
    t.equal(textOf(result), 'I could not ask you: The client did not declare the elicitation capability (form mode), so nobody was asked')
    await t.rejects(client.callTool('strict'), { code: missing })
  })

  t.test(`${version}: elicitation.disable for one host: it is treated as lacking the capability, logged once`, async (t) => {
    const { url, lines } = await server(t, { elicitation: { disable: (client) => client?.name === 'auto-decliner' } })
    const bad = createTestClient(url, { protocolVersion: version, clientInfo: { name: 'auto-decliner', version: '1.0.0' } })
    for (let i = 0; i < 2; i++) {
      t.equal(textOf((await bad.callTool('delete_file')).result),
        'I could not ask you: The server turned elicitation off for this client (elicitation.disable), so nobody was asked')
    }
    await t.rejects(bad.callTool('strict'), { code: missing })
    const good = createTestClient(url, { protocolVersion: version, clientInfo: { name: 'careful-host', version: '2.0.0' } })
    t.equal(textOf((await good.callTool('delete_file', {}, () => accept({ confirm: true }))).result), 'deleted', 'another host is asked')
    const said = lines.filter((line) => /elicitation is off for this client/.test(line.msg))
    t.equal(said.length, 1, 'said once for the client')
    t.same(said[0].mcp, { client: 'auto-decliner 1.0.0' })
    t.equal(said[0].level, 30)
  })
}

t.test('an unavailable answer is kept in the ledger: the next round replays it', async (t) => {
  const { url } = await server(t)
  const client = createTestClient(url, { capabilities: { sampling: {}, elicitation: { form: {} } } })
  const { result, rounds } = await client.callTool('then_sample', {}, byKind({ sample: () => sampled('ok', 'model-x') }))
  t.equal(textOf(result), 'unavailable / model-x')
  t.equal(rounds.length, 1, 'one round, for the sampling request')
})

t.test('disable: true turns it off for every client; a bad option value is named', async (t) => {
  const { url } = await server(t, { elicitation: { disable: true } })
  const { result } = await createTestClient(url).callTool('delete_file')
  t.match(textOf(result), /elicitation\.disable/)
  const model = await createTestClient(url, { capabilities: { elicitation: {} } }).callTool('ask_model')
  t.equal(textOf(model.result), 'The client did not declare the sampling capability, so nobody was asked | unavailable',
    'sampling and roots: the reason is the missing capability, not the elicitation policy')
  const odd = await createTestClient(url).callTool('odd')
  t.equal(odd.result.isError, true, 'unavailable: anything but \'return\' fails the handler')
  for (const [disable, message] of [['yes', /elicitation\.disable must be true, false or a function of the client's info, got "yes"/], [1, /got 1/]] as const) {
    await t.rejects(async () => { await Fastify().register(mocapi, { requestState: { keys: [KEY] }, elicitation: { disable: disable as never } }) },
      { code: 'FST_MOCAPI_INVALID_OPTION', message })
  }
  await t.rejects(async () => { await Fastify().register(mocapi, { requestState: { keys: [KEY] }, elicitation: { off: true } as never }) },
    { message: /unknown option elicitation\.off/ })
})

t.test('a disable function that throws is logged at error, and elicitation stays on', async (t) => {
  const { url, lines } = await server(t, { elicitation: { disable: () => { throw new Error('policy broke') } } })
  const client = createTestClient(url)
  t.equal(textOf((await client.callTool('delete_file', {}, () => accept({ confirm: false }))).result), 'kept')
  t.ok(lines.some((line) => line.level === 50 && /elicitation\.disable threw/.test(line.msg)))
})

t.test('the log of disabled clients is bounded: past 1024 names it starts over', async (t) => {
  const { url, app, lines } = await server(t, { elicitation: { disable: true } })
  for (let i = 0; i <= 1_024; i++) {
    await createTestClient(url, { clientInfo: { name: `host-${i}`, version: '1' } }).request('tools/call', { name: 'delete_file' })
  }
  await createTestClient(url, { clientInfo: { name: 'host-0', version: '1' } }).request('tools/call', { name: 'delete_file' })
  const said = lines.filter((line) => /elicitation is off/.test(line.msg)).map((line) => line.mcp.client)
  t.equal(said.length, 1_026, 'each new name once, and host-0 again once the set started over')
  t.equal(said.at(-1), 'host-0 1')
  // A 2026-07-28 request may leave clientInfo out.
  await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'delete_file' },
    payload: JSON.stringify({
      jsonrpc: '2.0',
      id: 1,
      method: 'tools/call',
      params: { name: 'delete_file', _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } } },
    }),
  })
  t.equal(lines.filter((line) => /elicitation is off/.test(line.msg)).at(-1)?.mcp.client, '(no clientInfo)')
})

t.test('McpClientError is what -32021 rejects with', async (t) => {
  const { url } = await server(t)
  const error = await createTestClient(url, { capabilities: {} }).callTool('strict').catch((e: unknown) => e)
  t.type(error, McpClientError)
})
