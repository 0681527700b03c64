import t, { type Test } from 'tap'
import Fastify, { type FastifyReply } from 'fastify'
import type { AddressInfo } from 'node:net'
import { ErrorCode, McpError, requestedSchema } from '../../lib/index.js'
import { build } from '../helpers.js'
import { run } from './run.js'

// Erase the line, move up, return, set the clipboard, a link whose text hides its target, a
// right-to-left override, an 8-bit CSI, a bell, DEL and a backspace: what a hostile server sends
// to rewrite the question a user is about to confirm.
const EVIL = '\x1b[2K\x1b[1A\r\x1b]52;c;b3duZWQ=\x07\x1b]8;;https://evil.example\x1b\\link\x1b]8;;\x1b\\\u202eevil\u202c\x9b2J\x07\x7f\b'
// How the CLI shows it: each sequence as ␛, each other control as its picture or a \u escape.
const SHOWN = '␛␛␍␛␛link␛\\u202eevil\\u202c␛␇␡␈'
// Appended where the CLI shows a value on one line: a line of the server's own must not appear.
const FAKE = '\nFAKE'
const FAKE_SHOWN = '␊FAKE'
const BIDI = new Set([0x061c, 0x200e, 0x200f, 0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x2028, 0x2029])

/** Any control a terminal acts on, other than newline: C0, DEL, C1, bidi controls and the line separators. */
function isControl (code: number): boolean {
  return (code < 0x20 && code !== 0x0a) || (code >= 0x7f && code <= 0x9f) || BIDI.has(code)
}

function clean (t: Test, output: string, what: string): void {
  t.equal([...output].find((c) => isControl(c.charCodeAt(0))), undefined, `${what}: no control reaches the terminal`)
  t.notMatch(output, /^FAKE/m, `${what}: no line of the server's own`)
}

/** A mocapi server whose tool author is hostile: every text it may choose carries escape sequences. */
async function mocapiServer (t: Test): Promise<string> {
  const app = await build(t, {}, (app) => {
    app.addHook('onRequest', async (request, reply) => {
      if (request.headers.authorization === 'Bearer evil') return reply.code(401).send({ statusCode: 401, error: 'Unauthorized', message: `Who are you?${EVIL}${FAKE}` })
    })
    app.mcp.tool({
      name: 'pay\u202etxt.exe',
      description: `Pays a bill${EVIL}${FAKE}`,
      inputSchema: { type: 'object', properties: { [`to${EVIL}${FAKE}`]: { type: 'string' }, plan: { enum: [`gold${EVIL}`, 'basic'] } } },
    }, async (_args, ctx) => {
      ctx.progress(1, 2, `checking${EVIL}${FAKE}`)
      const form = await ctx.elicit(`Pay 10 EUR?${EVIL}\nThe second line`, requestedSchema()
        .boolean('confirm', { title: `Confirm${EVIL}${FAKE}`, description: `Described${EVIL}\nover two lines` })
        .choose('plan', [{ value: `gold${EVIL}`, title: `Gold${EVIL}${FAKE}` }, { value: `basic${EVIL}`, title: `Basic${EVIL}` }], { default: `gold${EVIL}` })
        .string('note', { default: `note${EVIL}${FAKE}` }))
      if (form.action !== 'accept') return 'not paid'
      const link = await ctx.elicitUrl(`Sign in${EVIL}`, `https://example.com/${EVIL}${FAKE}`)
      return {
        content: [
          { type: 'text', text: `Paid${EVIL}\nThe second line` },
          { type: 'text', text: form.content.plan === `gold${EVIL}` ? 'the choice went back as the server sent it' : 'the choice changed' },
          { type: 'image', data: 'AAAA', mimeType: `image/png${EVIL}${FAKE}` },
          { type: 'resource_link', uri: `file:///${EVIL}`, name: `receipt${EVIL}${FAKE}` },
          { type: 'resource', resource: { uri: `file:///${EVIL}${FAKE}`, blob: 'AAAA' } },
          { type: 'resource', resource: { uri: 'file:///r', text: `inline${EVIL}` } },
          { type: 'text', text: `link ${link.action}` },
        ],
      }
    })
    app.mcp.tool({ name: 'refuse' }, () => { throw new McpError(ErrorCode.InvalidParams, `Refused${EVIL}${FAKE}`, { data: { why: EVIL } }) })
    app.mcp.tool({ name: 'structured' }, () => ({ content: [], structuredContent: { text: EVIL } }))
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`
}

function stream (reply: FastifyReply, messages: object[]): void {
  reply.hijack()
  reply.raw.writeHead(200, { 'content-type': 'text/event-stream' })
  reply.raw.end(messages.map((message) => `data: ${JSON.stringify(message)}\n\n`).join(''))
}

/** A hand-written endpoint sending what mocapi itself never would: log notifications, odd input requests, HTML errors. */
async function rawServer (t: Test): Promise<string> {
  const app = Fastify()
  app.post('/mcp', async (request, reply) => {
    const { id, params } = request.body as { id: number, params: { name: string } }
    if (params.name === 'logs') {
      return stream(reply, [
        { jsonrpc: '2.0', method: 'notifications/message', params: { level: `info${EVIL}${FAKE}`, logger: `db${EVIL}${FAKE}`, data: `${EVIL}${FAKE}` } },
        { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'error', data: { text: `${EVIL}${FAKE}` } } },
        { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'mocapi-cli', progress: `1${EVIL}${FAKE}`, total: `2${EVIL}` } },
        { jsonrpc: '2.0', method: `notifications/${EVIL}${FAKE}` },
        { jsonrpc: '2.0', id, result: { resultType: 'complete', content: [{ type: 'text', text: 'logged' }] } },
      ])
    }
    if (params.name === 'asks') {
      return { jsonrpc: '2.0', id, result: { resultType: 'input_required', inputRequests: { [`k${EVIL}${FAKE}`]: { method: `roots/list${EVIL}${FAKE}`, params: {} } } } }
    }
    return reply.code(500).type('text/html').send(`<h1>${EVIL}${FAKE}</h1>`)
  })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`
}

t.test('a form, a link and a result from a hostile tool reach the terminal defused', async (t) => {
  const url = await mocapiServer(t)
  const { code, stdout, stderr } = await run(['call', url, 'pay\u202etxt.exe'], ['y', '', '', 'y'])
  t.equal(code, 0)
  clean(t, stdout, 'stdout')
  clean(t, stderr, 'stderr')
  t.equal(stderr, [
    `progress 1/2 checking${SHOWN}${FAKE_SHOWN}`,
    'round 1: 1 question',
    `Pay 10 EUR?${SHOWN}`,
    'The second line',
    '  (!decline to decline, !cancel to cancel)',
    `  Described${SHOWN}`,
    '  over two lines',
    `  Confirm${SHOWN}${FAKE_SHOWN} (y/n): y`,
    `    1) Gold${SHOWN}${FAKE_SHOWN}`,
    `    2) Basic${SHOWN}`,
    `  plan (1-2) [Gold${SHOWN}${FAKE_SHOWN}]: `,
    `  note [note${SHOWN}${FAKE_SHOWN}]: `,
    `progress 1/2 checking${SHOWN}${FAKE_SHOWN}`,
    'round 2: 1 question',
    `Sign in${SHOWN}`,
    `  open: https://example.com/${SHOWN}${FAKE_SHOWN}`,
    '  Did you open it? (y/n, !cancel) [y]: y',
    `progress 1/2 checking${SHOWN}${FAKE_SHOWN}`,
    '',
  ].join('\n'))
  t.equal(stdout, [
    `Paid${SHOWN}`,
    'The second line',
    'the choice went back as the server sent it',
    `[image image/png${SHOWN}${FAKE_SHOWN}]`,
    `[link receipt${SHOWN}${FAKE_SHOWN}: file:///${SHOWN}]`,
    `[resource file:///${SHOWN}${FAKE_SHOWN}]`,
    `inline${SHOWN}`,
    'link accept',
    '',
  ].join('\n'))
})

t.test('--json keeps every value, with the controls written as JSON escapes', async (t) => {
  const url = await mocapiServer(t)
  const { code, stdout, stderr } = await run(['call', url, 'pay\u202etxt.exe', '--json'], ['y', '', '', 'y'])
  t.equal(code, 0)
  clean(t, stdout, 'stdout')
  clean(t, stderr, 'stderr')
  t.equal(JSON.parse(stdout).content[0].text, `Paid${EVIL}\nThe second line`, 'the value is the one the server sent')
  const refused = await run(['call', url, 'refuse', '--json'])
  clean(t, refused.stdout, 'stdout')
  t.same(JSON.parse(refused.stdout).error, { code: -32602, message: `Refused${EVIL}${FAKE}`, data: { why: EVIL }, status: 200 })
  const tools = await run(['tools', url, '--json'])
  clean(t, tools.stdout, 'stdout')
  t.equal(JSON.parse(tools.stdout)[0].name, 'pay\u202etxt.exe')
})

t.test('tool names, descriptions, argument names and choices in mocapi tools', async (t) => {
  const url = await mocapiServer(t)
  const { code, stdout } = await run(['tools', url])
  t.equal(code, 0)
  clean(t, stdout, 'stdout')
  t.equal(stdout.split('\n')[0],
    `pay\\u202etxt.exe(to${SHOWN}${FAKE_SHOWN}?: string, plan?: "gold\\u001b[2K\\u001b[1A\\r\\u001b]52;c;b3duZWQ=\\u0007\\u001b]8;;https://evil.example\\u001b\\\\link\\u001b]8;;\\u001b\\\\\\u202eevil\\u202c\\u009b2J\\u0007\\u007f\\b" | "basic")  Pays a bill${SHOWN}${FAKE_SHOWN}`)
})

t.test('errors, structured content, log and progress notifications, odd requests and HTML pages', async (t) => {
  const url = await mocapiServer(t)
  const refused = await run(['call', url, 'refuse'])
  t.same(refused, { code: 1, stdout: '', stderr: `mocapi: error -32602: Refused${SHOWN}${FAKE_SHOWN}\n` })
  const denied = await run(['call', url, 'refuse', '--token', 'evil'])
  clean(t, denied.stderr, 'a 401')
  t.match(denied.stderr, `mocapi: HTTP 401: Who are you?${SHOWN}${FAKE_SHOWN}`)
  const structured = await run(['call', url, 'structured'])
  t.equal(structured.stdout, '{\n  "text": "\\u001b[2K\\u001b[1A\\r\\u001b]52;c;b3duZWQ=\\u0007\\u001b]8;;https://evil.example\\u001b\\\\link\\u001b]8;;\\u001b\\\\\\u202eevil\\u202c\\u009b2J\\u0007\\u007f\\b"\n}\n')

  const raw = await rawServer(t)
  const logs = await run(['call', raw, 'logs'])
  clean(t, logs.stderr, 'notifications')
  t.equal(logs.stderr, [
    `[info${SHOWN}${FAKE_SHOWN}] db${SHOWN}${FAKE_SHOWN}: ${SHOWN}${FAKE_SHOWN}`,
    '[error] {"text":"\\u001b[2K\\u001b[1A\\r\\u001b]52;c;b3duZWQ=\\u0007\\u001b]8;;https://evil.example\\u001b\\\\link\\u001b]8;;\\u001b\\\\\\u202eevil\\u202c\\u009b2J\\u0007\\u007f\\b\\nFAKE"}',
    `progress 1${SHOWN}${FAKE_SHOWN}/2${SHOWN}`,
    `notifications/${SHOWN}${FAKE_SHOWN}`,
    '',
  ].join('\n'))
  const asks = await run(['call', raw, 'asks'])
  clean(t, asks.stderr, 'an input request the CLI cannot answer')
  t.equal(asks.code, 1)
  t.match(asks.stderr, /^round 1: 1 question\nmocapi: input request "k␛/)
  const html = await run(['call', raw, 'html'])
  t.same(html, { code: 1, stdout: '', stderr: `mocapi: HTTP 500: <h1>${SHOWN}${FAKE_SHOWN}</h1>\n` })
})
