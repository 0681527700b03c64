import t from 'tap'
import Fastify from 'fastify'
import { spawn, spawnSync } from 'node:child_process'
import type { AddressInfo } from 'node:net'
import { McpError, requestedSchema } from '../../lib/index.js'
import { blockText, contentsText, notificationText, processIo, skillLine, toolLine, typeHint } from '../../cli/main.js'
import { build } from '../helpers.js'
import { run } from './run.js'

type Test = Parameters<typeof build>[0]

// The `mocapi` command run from source, as bin/mocapi.js runs it from dist; "mocapi" stands in for the script name.
const ENTRY = ['--input-type=module', '-e', `import { main, processIo } from ${JSON.stringify(new URL('../../cli/main.js', import.meta.url).href)}
process.exitCode = await main(process.argv.slice(2), processIo())`, 'mocapi']

const trip = requestedSchema()
  .boolean('confirm', { title: 'Confirm the booking' })
  .choose('cabin', [{ value: 'economy', title: 'Economy' }, { value: 'business', title: 'Business' }], { default: 'economy' })
const seat = requestedSchema()
  .choose('seat', ['window', 'aisle'], { title: 'Seat' })
  .integer('bags', { minimum: 0, maximum: 2, optional: true })

/** A listening travel server; resolves with its endpoint URL. */
async function server (t: Test): Promise<string> {
  const app = await build(t, {}, (app) => {
    app.addHook('onRequest', async (request, reply) => {
      if (request.headers['x-deny'] !== undefined || (request.headers.authorization ?? 'Bearer ok') !== 'Bearer ok') {
        return reply.code(401).send({ statusCode: 401, error: 'Unauthorized', message: 'Bad token' })
      }
    })
    app.mcp.tool({
      name: 'book',
      description: 'Books a flight',
      inputSchema: { type: 'object', properties: { to: { type: 'string' }, class: { enum: ['eco', 'biz'] } }, required: ['to'] },
    }, async (args: { to: string }, ctx) => {
      ctx.progress(1, 2, 'checking')
      const first = await ctx.elicit(`Book a flight to ${args.to}?`, trip)
      if (first.action !== 'accept' || !first.content.confirm) return `Nothing booked (${first.action})`
      const second = await ctx.elicit('Where do you sit?', seat)
      const where = second.action === 'accept' ? `${second.content.seat}, ${second.content.bags ?? 0} bags` : second.action
      return `Booked ${first.content.cabin} to ${args.to}: ${where}`
    })
    app.mcp.tool({ name: 'login' }, async (_args, ctx) => {
      const answer = await ctx.elicitUrl('Sign in to your airline', 'https://example.com/login')
      return `login ${answer.action}`
    })
    app.mcp.tool({ name: 'pair' }, async (_args, ctx) => {
      const [name, email] = await Promise.all([
        ctx.elicit('Your name?', requestedSchema().string('name'), { key: 'name' }),
        ctx.elicit('Your email?', requestedSchema().string('email', { format: 'email' }), { key: 'email' }),
      ])
      return name.action === 'accept' && email.action === 'accept' ? `${name.content.name} <${email.content.email}>` : 'no'
    })
    app.mcp.tool({ name: 'broken' }, () => ({ content: [{ type: 'text', text: 'it broke' }], isError: true }))
    app.mcp.tool({ name: 'data' }, () => ({ content: [], structuredContent: { a: 1 } }))
    app.mcp.tool({ name: 'quiet' }, () => ({ content: [] }))
    let tickets = 0
    app.mcp.tool({ name: 'ticket' }, () => `ticket #${++tickets}`)
    app.mcp.tool({ name: 'blocks' }, () => ({
      content: [
        { type: 'text', text: 'hi' },
        { type: 'image', data: 'AAAA', mimeType: 'image/png' },
        { type: 'resource_link', uri: 'file:///a', name: 'a' },
        { type: 'resource', resource: { uri: 'file:///b', text: 'inline' } },
        { type: 'resource', resource: { uri: 'file:///c', blob: 'AAAA' } },
      ],
    }))
    app.mcp.tool({ name: 'sampler' }, async (_args, ctx) => (await ctx.sample({ messages: [], maxTokens: 5 })).model)
    app.mcp.tool({
      name: 'export',
      inputSchema: { type: 'object', properties: { month: { type: 'string' } }, required: ['month'] } as const,
      task: { support: 'optional', pollInterval: 30 },
    }, async (args, ctx) => {
      await new Promise((resolve) => setTimeout(resolve, 10))
      ctx.progress(1, 2, 'querying')
      const send = await ctx.elicit(`Send ${args.month} to finance?`, requestedSchema().boolean('send', { title: 'Send it' }))
      await new Promise((resolve) => setTimeout(resolve, 150))
      return send.action === 'accept' && send.content.send ? `sent ${args.month}` : 'kept'
    })
    app.mcp.resource({ uri: 'notes://today', name: 'today', description: 'Today\'s notes' }, async (_uri, ctx) => {
      const answer = await ctx.elicit('Unlock the notes?', requestedSchema().boolean('unlock', { title: 'Unlock' }))
      return answer.action === 'accept' && answer.content.unlock ? 'Buy milk' : 'locked'
    })
    app.mcp.resource({ uri: 'files://logo', name: 'logo', mimeType: 'image/png' }, () => Buffer.from([1, 2, 3]))
    app.mcp.resourceTemplate({ uriTemplate: 'users://{id}', name: 'user', description: 'A user' }, (uri, vars) => `user ${vars.id}`)
    app.mcp.prompt({ name: 'greet', description: 'Greets someone', arguments: [{ name: 'who', required: true }, { name: 'tone' }] },
      async (args, ctx) => {
        const answer = await ctx.elicit(`Greet ${args.who} formally?`, requestedSchema().boolean('formal', { title: 'Formal' }))
        return answer.action === 'accept' && answer.content.formal ? `Good day, ${args.who}.` : `Hi ${args.who}!`
      })
    app.mcp.tool({
      name: 'count',
      inputSchema: { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] } as const,
    }, (args) => `counted ${args.n}`)
    app.mcp.tool({ name: 'doomed', task: { support: 'required', pollInterval: 0 } }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 5))
      throw new McpError(-32603, 'the export broke')
    })
    app.mcp.tool({ name: 'upgrade' }, async (_args, ctx) => {
      const answer = await ctx.elicit('Upgrade?', requestedSchema().boolean('ok', { default: true }).integer('bags', { optional: true }))
      return answer.action === 'accept' ? `upgrade ${answer.content.ok}, ${answer.content.bags ?? 0} bags` : answer.action
    })
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  return `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`
}

/** Runs the CLI as its own process, writing `lines` to its stdin one at a time. */
function spawned (argv: string[], lines: string[] = []): Promise<{ code: number | null, stdout: string, stderr: string }> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [...process.execArgv, ...ENTRY, ...argv], { stdio: 'pipe' })
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => { stdout += chunk })
    child.stderr.setEncoding('utf8').on('data', (chunk: string) => {
      stderr += chunk
      // answer each prompt as it shows, as a person would
      if (/: $/.test(stderr) && lines.length > 0) child.stdin.write(`${lines.shift()}\n`)
      if (lines.length === 0) child.stdin.end()
    })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, stdout, stderr }))
  })
}

t.test('a call with two rounds: prompts, a re-ask, the result on stdout', async (t) => {
  const url = await server(t)
  const { code, stdout, stderr } = await run(['call', url, 'book', '--arg', 'to=Lisbon'], ['maybe', 'yes', '', '3', 'aisle', '5', '1'])
  t.equal(code, 0)
  t.equal(stdout, 'Booked economy to Lisbon: aisle, 1 bags\n')
  t.equal(stderr, [
    'progress 1/2 checking',
    'round 1: 1 question',
    'Book a flight to Lisbon?',
    '  (!decline to decline, !cancel to cancel)',
    '  Confirm the booking (y/n): maybe',
    '  ! answer y or n',
    '  Confirm the booking (y/n): yes',
    '    1) Economy',
    '    2) Business',
    '  cabin (1-2) [Economy]: ',
    'progress 1/2 checking',
    'round 2: 1 question',
    'Where do you sit?',
    '  (!decline to decline, !cancel to cancel)',
    '    1) window',
    '    2) aisle',
    '  Seat (1-2): 3',
    '  ! choose a number from 1 to 2',
    '  Seat (1-2): aisle',
    '  bags (integer, 0-2, optional): 5',
    '  ! must be at most 2',
    '  bags (integer, 0-2, optional): 1',
    'progress 1/2 checking',
    '',
  ].join('\n'))
})

t.test('as a 2025-era client: the same questions, asked on the call\'s stream, progress heard once', async (t) => {
  const url = await server(t)
  const { code, stdout, stderr } = await run(['call', url, 'book', '--arg', 'to=Lisbon', '--protocol-version', '2025-11-25'], ['y', '2', 'window', ''])
  t.equal(code, 0)
  t.equal(stdout, 'Booked business to Lisbon: window, 0 bags\n')
  t.match(stderr, /^progress 1\/2 checking\nround 1: 1 question\nBook a flight to Lisbon\?\n[^]*round 2: 1 question\nWhere do you sit\?\n/)
  t.equal(stderr.match(/progress/g)?.length, 1)
  const tools = await run(['tools', url, '--protocol-version', '2025-06-18'])
  t.match(tools.stdout, /^book\(to: string, class\?: "eco" \| "biz"\) {2}Books a flight\n/)
})

t.test('a slow server\'s heartbeat comments are skipped: the call, its question and its result read as without them', async (t) => {
  const app = await build(t, { heartbeat: 100 }, (app) => {
    app.mcp.tool({ name: 'slow' }, async (_args, ctx) => {
      await new Promise((resolve) => setTimeout(resolve, 400))
      const answer = await ctx.elicit('Go on?', requestedSchema().boolean('go', { title: 'Go on' }))
      await new Promise((resolve) => setTimeout(resolve, 400))
      return answer.action === 'accept' && answer.content.go ? 'went on' : 'stopped'
    })
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`
  for (const era of [[], ['--protocol-version', '2025-11-25']]) {
    const { code, stdout, stderr } = await run(['call', url, 'slow', ...era], ['y'])
    t.equal(code, 0, `${era.join(' ') || '2026-07-28'}: exit 0`)
    t.equal(stdout, 'went on\n')
    t.match(stderr, /^round 1: 1 question\nGo on\?\n/)
    t.notMatch(stderr, /keep-alive/)
  }
})

t.test('a tool that runs as a task: followed to its end, its status on stderr, its question asked the same way', async (t) => {
  const url = await server(t)
  const { code, stdout, stderr } = await run(['call', url, 'export', '--arg', 'month=March'], ['y'])
  t.equal(code, 0)
  t.equal(stdout, 'sent March\n')
  t.match(stderr, /^task (working|input_required)/, 'the task shows from the first poll')
  t.match(stderr, /task input_required\nround 1: 1 question\nSend March to finance\?\n[^]* {2}Send it \(y\/n\): y\n/)
  t.match(stderr, /y\ntask working: querying\ntask completed\n$/, 'the pass after the answer, with its status message, then the end')
  const lines = stderr.split('\n').filter((line) => line.startsWith('task '))
  t.same(lines.filter((line, i) => line === lines[i - 1]), [], 'a status is said when it changes, not on every poll')
  const failed = await run(['call', url, 'doomed', '--json'])
  t.equal(failed.code, 1)
  t.match(failed.stderr, /mocapi: error -32603: tools\/call "doomed": task [\w-]+ failed: the export broke\n$/)
  t.match(JSON.parse(failed.stdout), { error: { code: -32603 } })
})

t.test('--idempotency-key: the same command again gets the first run\'s reply, and the tool ran once', async (t) => {
  const url = await server(t)
  const first = await run(['call', url, 'ticket', '--idempotency-key', 'ticket-77'])
  const again = await run(['call', url, 'ticket', '--idempotency-key', 'ticket-77'])
  t.same(first, { code: 0, stdout: 'ticket #1\n', stderr: '' })
  t.same(again, first, 'the first run\'s reply')
  t.same(await run(['call', url, 'ticket', '--idempotency-key', 'ticket-78']), { code: 0, stdout: 'ticket #2\n', stderr: '' }, 'another key runs')
  t.same(await run(['call', url, 'ticket']), { code: 0, stdout: 'ticket #3\n', stderr: '' }, 'no key runs')
})

t.test('--json prints the final result as one JSON line, nothing else on stdout', async (t) => {
  const url = await server(t)
  const { code, stdout, stderr } = await run(['call', url, 'book', '--args-json', '{"to":"Oslo"}', '--json'], ['n', ''])
  t.equal(code, 0)
  const lines = stdout.split('\n')
  t.equal(lines.length, 2)
  t.match(JSON.parse(lines[0]), { resultType: 'complete', content: [{ type: 'text', text: 'Nothing booked (accept)' }] })
  t.match(stderr, /round 1: 1 question/)
})

t.test('--yes asks nothing: defaults are taken, and a required field without one stops the call with an error naming it', async (t) => {
  const url = await server(t)
  for (const version of ['2026-07-28', '2025-11-25']) {
    const taken = await run(['call', url, 'upgrade', '--yes', '--protocol-version', version])
    t.same(taken, { code: 0, stdout: 'upgrade true, 0 bags\n', stderr: 'round 1: 1 question\nUpgrade?\n' }, `${version}: every field has a default or is optional`)
    const stopped = await run(['call', url, 'book', '--arg', 'to=Oslo', '--yes', '--protocol-version', version], ['y', ''])
    t.equal(stopped.code, 1, `${version}: exits 1`)
    t.equal(stopped.stdout, '', `${version}: no result`)
    t.equal(stopped.stderr, 'progress 1/2 checking\nround 1: 1 question\nBook a flight to Oslo?\n' +
      'mocapi: --yes takes only defaults, and the form\'s field "confirm" is required with none: run without --yes to answer it\n',
    `${version}: the field is named, and nothing was asked`)
  }
})

t.test('declining, cancelling, and stdin running out', async (t) => {
  const url = await server(t)
  t.equal((await run(['call', url, 'book', '--arg', 'to=Rome'], ['!decline'])).stdout, 'Nothing booked (decline)\n')
  t.equal((await run(['call', url, 'book', '--arg', 'to=Rome'], ['!cancel'])).stdout, 'Nothing booked (cancel)\n')
  const ended = await run(['call', url, 'book', '--arg', 'to=Rome'], ['y', '2'])
  t.equal(ended.stdout, 'Booked business to Rome: cancel\n', 'the question the input ended in was answered cancel')
  t.equal(ended.code, 1, 'and the CLI says so, exiting 1')
  t.match(ended.stderr, /mocapi: a question was cut short \(end of input or Ctrl-C\) and answered cancel\n$/)
})

t.test('read a resource and get a prompt, their questions asked the same way; list resources, templates and prompts', async (t) => {
  const url = await server(t)
  const read = await run(['read', url, 'notes://today'], ['y'])
  t.equal(read.code, 0)
  t.equal(read.stdout, 'Buy milk\n')
  t.match(read.stderr, /^round 1: 1 question\nUnlock the notes\?\n/)
  t.equal((await run(['read', url, 'users://42'])).stdout, 'user 42\n', 'through a template')
  t.equal((await run(['read', url, 'files://logo'])).stdout, '[blob image/png: files://logo]\n')
  t.match(JSON.parse((await run(['read', url, 'users://7', '--json'])).stdout), { resultType: 'complete', contents: [{ uri: 'users://7', text: 'user 7' }] })
  const missing = await run(['read', url, 'notes://nowhere'])
  t.equal(missing.code, 1)
  t.match(missing.stderr, /^mocapi: error -32602: /)

  const prompt = await run(['prompt', url, 'greet', '--arg', 'who=Ada'], ['n'])
  t.equal(prompt.code, 0)
  t.equal(prompt.stdout, 'user: Hi Ada!\n')
  t.match(JSON.parse((await run(['prompt', url, 'greet', '--arg', 'who=Ada', '--json'], ['y'])).stdout), { messages: [{ role: 'user', content: { text: 'Good day, Ada.' } }] })
  const typed = await run(['prompt', url, 'greet', '--arg', 'who:=1'])
  t.equal(typed.code, 2)
  t.match(typed.stderr, /a prompt's arguments are strings: --arg who=<text>, got 1/)

  const resources = await run(['resources', url])
  t.equal(resources.stdout, 'notes://today  today  Today\'s notes\nfiles://logo  logo\nusers://{id}  user  A user\n')
  t.match(JSON.parse((await run(['resources', url, '--json'])).stdout), { resources: [{ uri: 'notes://today' }, { uri: 'files://logo' }], resourceTemplates: [{ uriTemplate: 'users://{id}' }] })
  t.equal((await run(['prompts', url])).stdout, 'greet(who, tone?)  Greets someone\n')
  const cut = await run(['read', url, 'notes://today'])
  t.equal(cut.code, 1, 'a question the input ended in')
  t.match(cut.stderr, /a question was cut short/)
})

t.test('skills: listed one a line, their files read with read, in both eras', async (t) => {
  const app = await build(t)
  await app.mcp.skills(new URL('../../examples/skills/', import.meta.url))
  await app.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`
  const line = 'skill://trip-checklist/SKILL.md  trip-checklist  Build a packing and paperwork checklist for a trip booked with this travel desk  (2 files, 451 bytes)\n'
  t.equal((await run(['skills', url])).stdout, line)
  t.equal((await run(['skills', url, '--protocol-version', '2025-11-25'])).stdout, line)
  t.match(JSON.parse((await run(['skills', url, '--json'])).stdout), { skills: [{ uri: 'skill://trip-checklist/SKILL.md', resources: [{ digest: /^sha256:[0-9a-f]{64}$/ }, {}] }] })
  t.match((await run(['read', url, 'skill://trip-checklist/checklist.md'])).stdout, /^# Paperwork\n/)
  t.equal(skillLine({ uri: 'skill://x/SKILL.md', frontmatter: { name: 'x', description: 'd' }, resources: 'dynamic' }), 'skill://x/SKILL.md  x  d  (files listed on demand)')
  t.equal(skillLine({ uri: 'skill://x/SKILL.md', frontmatter: { name: 'x', description: 'd' }, resources: [{ uri: 'skill://x/SKILL.md', size: 3 }, { uri: 'skill://x/y' }] }), 'skill://x/SKILL.md  x  d  (2 files, 3 bytes)')
  t.equal(skillLine({ uri: 'skill://x/SKILL.md', frontmatter: { name: 'x', description: 'd' }, resources: [{ uri: 'skill://x/SKILL.md', size: 3 }] }), 'skill://x/SKILL.md  x  d  (1 file, 3 bytes)')
  t.equal(skillLine({ uri: 'skill://x/SKILL.md', resources: [] }), 'skill://x/SKILL.md  undefined  undefined  (0 files, 0 bytes)')
})

t.test('a list that never ends is cut off after 1000 pages', async (t) => {
  const app = Fastify()
  let served = 0
  app.post('/mcp', async (request) => {
    served++
    const body = request.body as { id: number }
    return { jsonrpc: '2.0', id: body.id, result: { resultType: 'complete', prompts: [{ name: `p${served}` }], nextCursor: 'again' } }
  })
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const endless = await run(['prompts', `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`])
  t.equal(endless.code, 1)
  t.equal(endless.stderr, 'mocapi: prompts/list still had more after 1000 pages\n')
  t.equal(served, 1_000)
})

t.test('a typed argument given as a string: the error result, and a hint of key:=json', async (t) => {
  const url = await server(t)
  const refused = await run(['call', url, 'count', '--arg', 'n=10'])
  t.equal(refused.code, 1)
  t.match(refused.stdout, /Invalid arguments: arguments\.n must be integer/)
  t.match(refused.stderr, /^hint: n was sent as a string; --arg n:=10 sends it as JSON \(the tool wants an integer\)\n$/)
  const typed = await run(['call', url, 'count', '--arg', 'n:=10'])
  t.equal(typed.stdout, 'counted 10\n')
  const json = await run(['call', url, 'count', '--args-json', '{"n":"x"}'])
  t.match(json.stderr, /hint: n was sent as a string/)
  const other = await run(['call', url, 'count', '--arg', 'n:=1.5'])
  t.equal(other.stderr, '', 'no hint for a value that was not a string')
})

t.test('two questions in one round', async (t) => {
  const url = await server(t)
  const { code, stdout, stderr } = await run(['call', url, 'pair'], ['Ada', 'ada@', 'ada@example.com'])
  t.equal(code, 0)
  t.equal(stdout, 'Ada <ada@example.com>\n')
  t.equal(stderr, [
    'round 1: 2 questions',
    'Your name?', '  (!decline to decline, !cancel to cancel)', '  name: Ada',
    'Your email?', '  (!decline to decline, !cancel to cancel)', '  email (email): ada@', '  ! must be an email address', '  email (email): ada@example.com',
    '',
  ].join('\n'))
})

t.test('a link: shown, then opened or not', async (t) => {
  const url = await server(t)
  const opened = await run(['call', url, 'login'], ['y'])
  t.equal(opened.stdout, 'login accept\n')
  t.match(opened.stderr, 'Sign in to your airline\n  open: https://example.com/login\n  Did you open it?')
  t.equal((await run(['call', url, 'login'], ['n'])).stdout, 'login decline\n')
  const yes = await run(['call', url, 'login', '--yes'])
  t.equal(yes.stdout, 'login accept\n')
  t.notMatch(yes.stderr, 'Did you open it?')
})

t.test('results: error results exit 1; every kind of block prints', async (t) => {
  const url = await server(t)
  t.same(await run(['call', url, 'broken']), { code: 1, stdout: 'it broke\n', stderr: '' })
  t.same(await run(['call', url, 'data']), { code: 0, stdout: '{\n  "a": 1\n}\n', stderr: '' })
  t.same(await run(['call', url, 'quiet']), { code: 0, stdout: '', stderr: '' })
  t.equal((await run(['call', url, 'blocks'])).stdout, 'hi\n[image image/png]\n[link a: file:///a]\ninline\n[resource file:///c]\n')
})

t.test('server errors exit 1, and --json prints them as one line', async (t) => {
  const url = await server(t)
  const unknown = await run(['call', url, 'nope'])
  t.same(unknown, { code: 1, stdout: '', stderr: 'mocapi: error -32602: Unknown tool: nope\n' })
  const json = await run(['call', url, 'nope', '--json'])
  t.same(JSON.parse(json.stdout), { error: { code: -32602, message: 'Unknown tool: nope', status: 200 } })
  const sampling = await run(['call', url, 'sampler'])
  t.equal(sampling.code, 1)
  t.match(sampling.stderr, 'error -32021: Server requires the sampling client capability')
})

t.test('the token: --token, MOCAPI_TOKEN, and a refusal', async (t) => {
  const url = await server(t)
  const refused = 'mocapi: HTTP 401: Bad token — the server refused the bearer token (from --token, or MOCAPI_TOKEN)\n'
  t.equal((await run(['call', url, 'quiet', '--token', 'ok'])).code, 0)
  t.same(await run(['call', url, 'quiet', '--token', 'bad']), { code: 1, stdout: '', stderr: refused })
  t.same(await run(['tools', url], [], { MOCAPI_TOKEN: 'bad' }), { code: 1, stdout: '', stderr: refused })
})

t.test('a 401 without a token suggests --token', async (t) => {
  const app = await build(t, {}, (app) => {
    app.addHook('onRequest', async (request, reply) => {
      if (request.headers.authorization !== 'Bearer s3cret') return reply.code(401).send({ statusCode: 401, error: 'Unauthorized', message: 'Missing token' })
    })
    app.mcp.tool({ name: 'who' }, () => 'you')
  })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`
  const hint = 'mocapi: HTTP 401: Missing token — the server wants credentials: pass --token <bearer token> (or set MOCAPI_TOKEN); ' +
    'for a development token signed with your app\'s JWT secret, see docs/deploy.md#a-token-for-development\n'
  t.same(await run(['call', url, 'who']), { code: 1, stdout: '', stderr: hint })
  t.same(await run(['tools', url]), { code: 1, stdout: '', stderr: hint })
  const json = await run(['call', url, 'who', '--json'])
  t.equal(json.stderr, hint)
  t.same(JSON.parse(json.stdout), { error: { message: 'HTTP 401: Missing token', data: { statusCode: 401, error: 'Unauthorized', message: 'Missing token' }, status: 401 } })
  t.equal((await run(['call', url, 'who'], [], { MOCAPI_TOKEN: 's3cret' })).stdout, 'you\n')
})

t.test('a server that cannot be reached', async (t) => {
  const app = Fastify()
  await app.listen({ host: '127.0.0.1', port: 0 })
  const port = (app.server.address() as AddressInfo).port
  await app.close()
  const { code, stderr } = await run(['call', `http://127.0.0.1:${port}/mcp`, 'x'])
  t.equal(code, 1)
  t.match(stderr, /^mocapi: connect ECONNREFUSED 127\.0\.0\.1:\d+\n$/)
  const json = await run(['call', `http://127.0.0.1:${port}/mcp`, 'x', '--json'])
  t.equal(json.code, 1)
  t.equal(json.stdout, '', 'only server replies print as JSON')
})

t.test('sampling or roots asked of the CLI anyway fail the call', async (t) => {
  const app = Fastify()
  app.post('/mcp', async (request) => ({
    jsonrpc: '2.0',
    id: (request.body as { id: number }).id,
    result: { resultType: 'input_required', inputRequests: { r: { method: 'roots/list', params: {} } } },
  }))
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  const { code, stderr } = await run(['call', `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`, 'x'])
  t.equal(code, 1)
  t.equal(stderr, 'round 1: 1 question\nmocapi: the server asked for roots/list (input request "r"), which mocapi call does not offer\n')
})

t.test('tools lists the tools, as lines or JSON', async (t) => {
  const url = await server(t)
  const { code, stdout } = await run(['tools', url])
  t.equal(code, 0)
  t.equal(stdout.split('\n')[0], 'book(to: string, class?: "eco" | "biz")  Books a flight')
  t.equal(stdout.split('\n')[1], 'login()')
  const json = await run(['tools', url, '--json'])
  t.match(JSON.parse(json.stdout), [{ name: 'book' }, { name: 'login' }])
})

t.test('help and usage errors', async (t) => {
  const help = await run(['--help'])
  t.equal(help.code, 0)
  t.match(help.stdout, /^Usage:/)
  const bad = await run(['call'])
  t.equal(bad.code, 2)
  t.equal(bad.stdout, '')
  t.match(bad.stderr, /^mocapi: missing <url>\n\nUsage:/)
})

t.test('lines for blocks, notifications and tools', async (t) => {
  t.same(processIo(), { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env })
  t.equal(blockText({ type: 'audio', data: 'AA', mimeType: 'audio/wav' }), '[audio audio/wav]')
  t.equal(contentsText({ uri: 'files://x', blob: 'AAAA' }), '[blob application/octet-stream: files://x]', 'a blob without a mimeType')
  t.equal(typeHint([{ type: 'image', data: 'AA', mimeType: 'image/png' }, { type: 'text', text: 'Invalid arguments: arguments.ok must be boolean' }], { ok: 'yes' }),
    'hint: ok was sent as a string; --arg ok:=yes sends it as JSON (the tool wants a boolean)')
  t.equal(typeHint([{ type: 'text', text: 'Invalid arguments: arguments.tags must be array' }], { tags: 'a' }),
    'hint: tags was sent as a string; --arg tags:=a sends it as JSON (the tool wants an array)')
  t.equal(typeHint([{ type: 'text', text: 'Invalid arguments: arguments.meta must be object' }], { meta: '{}' }), 'hint: meta was sent as a string; --arg meta:={} sends it as JSON (the tool wants an object)')
  t.equal(typeHint([{ type: 'text', text: 'something else broke' }], { ok: 'yes' }), undefined)
  t.equal(notificationText({ jsonrpc: '2.0', method: 'notifications/progress', params: { progress: 3 } }), 'progress 3')
  t.equal(notificationText({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'info', data: 'hi' } }), '[info] hi')
  t.equal(notificationText({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'error', logger: 'db', data: { n: 1 } } }), '[error] db: {"n":1}')
  t.equal(notificationText({ jsonrpc: '2.0', method: 'notifications/message', params: { level: 'debug' } }), '[debug] null')
  t.equal(notificationText({ jsonrpc: '2.0', method: 'notifications/other' }), 'notifications/other')
  t.equal(toolLine({ name: 'x', inputSchema: { type: 'object', properties: { a: {} } } }), 'x(a?: any)')
})

t.test('as its own process: scripted stdin, a re-ask, exit statuses', async (t) => {
  const url = await server(t)
  const booked = await spawned(['call', url, 'book', '--arg', 'to=Bern'], ['y', 'first', '2', '1', ''])
  t.equal(booked.code, 0)
  t.equal(booked.stdout, 'Booked business to Bern: window, 0 bags\n')
  t.match(booked.stderr, '  cabin (1-2) [Economy]: first\n  ! choose a number from 1 to 2\n')
  const json = await spawned(['call', url, 'book', '--arg', 'to=Bern', '--json'], ['!cancel'])
  t.equal(json.code, 0)
  t.same(JSON.parse(json.stdout).content, [{ type: 'text', text: 'Nothing booked (cancel)' }])
  const broken = await spawned(['call', url, 'broken'])
  t.equal(broken.code, 1)
  const usage = await spawned(['call', url])
  t.equal(usage.code, 2)
  t.match(usage.stderr, 'missing <tool>')
})

const hasScript = spawnSync('script', ['--version']).status === 0

/** Runs the CLI on a pseudo-terminal (util-linux `script`), typing each answer once its prompt shows. */
function onTerminal (argv: string[], dialogue: Array<[string, string]>): Promise<{ code: number | null, output: string }> {
  const quote = (arg: string) => `'${arg.replace(/'/g, "'\\''")}'`
  const command = [process.execPath, ...process.execArgv, ...ENTRY, ...argv].map(quote).join(' ')
  return new Promise((resolve, reject) => {
    const child = spawn('script', ['-qec', command, '/dev/null'], { stdio: 'pipe' })
    let output = ''
    let from = 0
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      output += chunk
      const next = dialogue[0]
      const at = next === undefined ? -1 : output.indexOf(next[0], from)
      if (at !== -1) {
        dialogue.shift()
        from = at + next[0].length
        child.stdin.write(next[1])
      }
    })
    child.on('error', reject)
    child.on('close', (code) => resolve({ code, output }))
  })
}

t.test('on a pseudo-terminal: typed answers, a re-ask, and Ctrl-C to cancel', { skip: hasScript ? false : 'needs script(1)' }, async (t) => {
  const url = await server(t)
  const { code, output } = await onTerminal(['call', url, 'book', '--arg', 'to=Porto'], [
    ['Confirm the booking (y/n): ', 'y\r'],
    ['cabin (1-2) [Economy]: ', 'first\r'],
    ['! choose a number from 1 to 2', '2\r'],
    ['Seat (1-2): ', '\x03'],
  ])
  t.equal(code, 1, 'the question Ctrl-C cut short was answered cancel, and the CLI says so')
  t.match(output, 'a question was cut short')
  t.match(output, 'Booked business to Porto: cancel')
})
