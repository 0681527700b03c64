import t from 'tap'
import { USAGE, UsageError, parseCommand } from '../../cli/args.js'

const URL_TEXT = 'http://127.0.0.1:3000/mcp'

t.test('call: arguments as strings, JSON, or one JSON object underneath', async (t) => {
  const command = parseCommand(['call', URL_TEXT, 'book', '--arg', 'to=Lisbon', '--arg', 'seats:=2', '--arg', 'note=a=b',
    '--args-json', '{"to":"Oslo","direct":true}', '--arg', 'tags:=["x"]', '--json', '-y'], {})
  t.same(command, {
    command: 'call',
    url: new URL(URL_TEXT),
    token: undefined,
    version: '2026-07-28',
    json: true,
    yes: true,
    tool: 'book',
    args: { to: 'Lisbon', direct: true, seats: 2, note: 'a=b', tags: ['x'] },
    idempotencyKey: undefined,
  })
  t.match(parseCommand(['call', URL_TEXT, 'book', '--idempotency-key', 'order-1'], {}), { idempotencyKey: 'order-1' })
  for (const bad of ['', 'a b', 'x'.repeat(256)]) {
    t.throws(() => parseCommand(['call', URL_TEXT, 'book', '--idempotency-key', bad], {}),
      new UsageError('--idempotency-key takes 1 to 255 printable ASCII characters without spaces'))
  }
  t.match(parseCommand(['call', URL_TEXT, 'book'], {}), { args: {}, json: false, yes: false })
})

t.test('read, prompt, resources and prompts', async (t) => {
  t.same(parseCommand(['read', URL_TEXT, 'notes://today', '--yes'], {}),
    { command: 'read', url: new URL(URL_TEXT), token: undefined, version: '2026-07-28', json: false, yes: true, uri: 'notes://today' })
  t.match(parseCommand(['prompt', URL_TEXT, 'greet', '--arg', 'who=Ada', '--args-json', '{"tone":"warm"}'], {}),
    { command: 'prompt', prompt: 'greet', args: { who: 'Ada', tone: 'warm' } })
  t.match(parseCommand(['resources', URL_TEXT, '--json'], {}), { command: 'resources', json: true })
  t.match(parseCommand(['prompts', URL_TEXT], {}), { command: 'prompts' })
})

t.test('the token comes from --token, else MOCAPI_TOKEN', async (t) => {
  t.match(parseCommand(['call', URL_TEXT, 'x', '--token', 'abc'], { MOCAPI_TOKEN: 'env' }), { token: 'abc' })
  t.match(parseCommand(['call', URL_TEXT, 'x'], { MOCAPI_TOKEN: 'env' }), { token: 'env' })
  t.match(parseCommand(['tools', URL_TEXT, '--json'], { MOCAPI_TOKEN: 'env' }), { command: 'tools', token: 'env', json: true })
})

t.test('the protocol version: 2026-07-28, or a 2025 revision', async (t) => {
  t.match(parseCommand(['call', URL_TEXT, 'x'], {}), { version: '2026-07-28' })
  t.match(parseCommand(['call', URL_TEXT, 'x', '--protocol-version', '2025-06-18'], {}), { version: '2025-06-18' })
  t.match(parseCommand(['tools', URL_TEXT, '--protocol-version', '2025-11-25'], {}), { command: 'tools', version: '2025-11-25' })
  t.throws(() => parseCommand(['tools', URL_TEXT, '--protocol-version', '2024-11-05'], {}),
    new UsageError('--protocol-version must be one of 2026-07-28, 2025-11-25, 2025-06-18, 2025-03-26, got 2024-11-05'))
})

t.test('help', async (t) => {
  t.same(parseCommand(['--help'], {}), { command: 'help' })
  t.same(parseCommand(['call', '-h'], {}), { command: 'help' })
  t.match(USAGE, /mocapi call <url> <tool>/)
})

t.test('usage errors say what is wrong', async (t) => {
  const cases: Array<[string[], string]> = [
    [[], 'missing command'],
    [['ring', URL_TEXT], 'unknown command ring'],
    [['call'], 'missing <url>'],
    [['call', 'localhost:3000'], '<url> must be an http(s) URL, got localhost:3000'],
    [['call', 'not a url'], '<url> must be an http(s) URL, got not a url'],
    [['call', URL_TEXT], 'missing <tool>'],
    [['call', URL_TEXT, 'book', 'to=Lisbon'], 'unexpected to=Lisbon (arguments go in --arg key=value)'],
    [['tools', URL_TEXT, 'extra'], 'unexpected extra'],
    [['tools'], 'missing <url>'],
    [['read', URL_TEXT], 'missing <resource uri>'],
    [['read', URL_TEXT, 'notes://a', 'notes://b'], 'unexpected notes://b'],
    [['prompt', URL_TEXT], 'missing <prompt>'],
    [['prompt', URL_TEXT, 'greet', 'who=Ada'], 'unexpected who=Ada (arguments go in --arg key=value)'],
    [['prompt', URL_TEXT, 'greet', '--args-json', '{"n":2}'], 'a prompt\'s arguments are strings: --arg n=<text>, got 2'],
    [['resources', URL_TEXT, 'extra'], 'unexpected extra'],
    [['call', URL_TEXT, 'book', '--arg', 'to'], '--arg takes key=value or key:=json, got to'],
    [['call', URL_TEXT, 'book', '--arg', '=x'], '--arg takes key=value or key:=json, got =x'],
    [['call', URL_TEXT, 'book', '--arg', ':=1'], '--arg takes key=value or key:=json, got :=1'],
    [['call', URL_TEXT, 'book', '--arg', 'n:=one'], '--arg n is not valid JSON: one'],
    [['call', URL_TEXT, 'book', '--args-json', '{'], '--args-json is not valid JSON: {'],
    [['call', URL_TEXT, 'book', '--args-json', '[1]'], '--args-json must be a JSON object'],
    [['call', URL_TEXT, 'book', '--args-json', 'null'], '--args-json must be a JSON object'],
  ]
  for (const [argv, message] of cases) t.throws(() => parseCommand(argv, {}), new UsageError(message), argv.join(' '))
  t.throws(() => parseCommand(['call', URL_TEXT, 'x', '--bogus'], {}), { name: 'UsageError', message: /Unknown option '--bogus'/ })
  t.throws(() => parseCommand(['call', URL_TEXT, 'x', '--token'], {}), { name: 'UsageError', message: /--token/ })
})

t.test('events: list the types, or follow one by poll or stream', async (t) => {
  t.same(parseCommand(['events', URL_TEXT], {}),
    { command: 'events', url: new URL(URL_TEXT), token: undefined, version: '2026-07-28', json: false, follow: undefined })
  t.match(parseCommand(['events', URL_TEXT, '--json', '--protocol-version', '2025-11-25'], {}), { json: true, version: '2025-11-25' })
  t.same(parseCommand(['events', URL_TEXT, 'incident.created'], {}), {
    command: 'events',
    url: new URL(URL_TEXT),
    token: undefined,
    version: '2026-07-28',
    json: false,
    follow: { name: 'incident.created', args: {}, mode: 'poll', cursor: undefined, max: undefined },
  })
  t.match(parseCommand(['events', URL_TEXT, 'incident.created', '--args', '{"service":"api"}', '--arg', 'level:=2',
    '--follow', 'stream', '--cursor', 'c1', '--max', '3'], {}),
  { follow: { name: 'incident.created', args: { service: 'api', level: 2 }, mode: 'stream', cursor: 'c1', max: 3 } })
  t.match(parseCommand(['events', URL_TEXT, 'x', '--args-json', '{"a":1}', '--protocol-version', '2025-06-18'], {}),
    { follow: { args: { a: 1 }, mode: 'poll' } }, 'poll in a 2025 revision')
  t.match(parseCommand(['call', URL_TEXT, 'book', '--args', '{"to":"Oslo"}'], {}), { args: { to: 'Oslo' } }, '--args is --args-json')
  const cases: Array<[string[], string]> = [
    [['events'], 'missing <url>'],
    [['events', URL_TEXT, 'a', 'b'], 'unexpected b (arguments go in --args JSON or --arg key=value)'],
    [['events', URL_TEXT, 'a', '--follow', 'webhook'], '--follow takes poll or stream, got webhook'],
    [['events', URL_TEXT, 'a', '--follow', 'stream', '--protocol-version', '2025-11-25'],
      '--follow stream speaks 2026-07-28; with --protocol-version 2025-11-25, follow with --follow poll'],
    [['events', URL_TEXT, 'a', '--max', '0'], '--max takes a positive whole number, got 0'],
    [['events', URL_TEXT, 'a', '--max', '1.5'], '--max takes a positive whole number, got 1.5'],
    [['events', URL_TEXT, 'a', '--max', 'ten'], '--max takes a positive whole number, got ten'],
    [['events', URL_TEXT, 'a', '--cursor', ''], '--cursor takes a cursor the server gave (leave it out to start from now)'],
    [['events', URL_TEXT, 'a', '--args', '[]'], '--args must be a JSON object'],
    [['events', URL_TEXT, 'a', '--args', '{'], '--args is not valid JSON: {'],
    [['events', URL_TEXT, 'a', '--args', '{}', '--args-json', '{}'], '--args and --args-json are the same option: give one'],
    [['call', URL_TEXT, 'book', '--follow', 'poll'], '--follow is an option of mocapi events <url> <event>'],
    [['tools', URL_TEXT, '--max', '2'], '--max is an option of mocapi events <url> <event>'],
    [['tools', URL_TEXT, '--cursor', 'c'], '--cursor is an option of mocapi events <url> <event>'],
  ]
  for (const [argv, message] of cases) t.throws(() => parseCommand(argv, {}), new UsageError(message), argv.join(' '))
  t.match(USAGE, /mocapi events <url> <event> \[--args JSON\]/)
})
