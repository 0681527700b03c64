import { parseArgs } from 'node:util'
import { PROTOCOL_VERSION } from '../lib/protocol/wire.js'
import { LEGACY_PROTOCOL_VERSIONS } from '../lib/testing/types.js'

export const USAGE = `Usage:
  mocapi call <url> <tool> [--arg key=value ...] [--arg key:=json ...] [--args-json '{...}']
                           [--idempotency-key K] [--token T] [--protocol-version V] [--json] [--yes]
  mocapi read <url> <resource uri> [--token T] [--protocol-version V] [--json] [--yes]
  mocapi prompt <url> <prompt> [--arg key=value ...] [--token T] [--protocol-version V] [--json] [--yes]
  mocapi tools <url> [--token T] [--protocol-version V] [--json]
  mocapi resources <url> [--token T] [--protocol-version V] [--json]    (resources, then templates)
  mocapi prompts <url> [--token T] [--protocol-version V] [--json]
  mocapi skills <url> [--token T] [--protocol-version V] [--json]       (agent skills; read their files with read)
  mocapi events <url> [--token T] [--protocol-version V] [--json]       (event types: name, delivery, description)
  mocapi events <url> <event> [--args JSON] [--arg key=value ...] [--follow poll|stream] [--cursor C] [--max N]
                              [--token T] [--protocol-version V]

Calls a tool of an MCP 2026-07-28 server at <url> (its endpoint, such as http://127.0.0.1:3000/mcp),
asking each elicitation's questions on the terminal, round after round, and prints the result. A tool
that runs as a task (the tasks extension) is followed to its end: its status on stderr, its questions
asked the same way.

  --arg key=value     a string argument; key:=value takes JSON (numbers, booleans, arrays, objects)
  --args-json JSON    the arguments as one JSON object (--arg entries are applied on top); --args JSON too
  --idempotency-key K sent as the Idempotency-Key header: the same command again with the same K gets the
                      first run's reply from a mocapi server instead of running the tool twice
  --token T           sent as "Authorization: Bearer T" (default: the MOCAPI_TOKEN variable)
  --protocol-version V  2026-07-28 (the default), or a 2025 revision (2025-11-25, 2025-06-18,
                      2025-03-26) to be a client of that era: a session opened with initialize,
                      whose questions arrive on the call's stream
  --json              print the final result as one JSON line; questions and rounds stay on stderr
  --yes               never ask: take defaults, skip optional fields, accept links; a required
                      field without a default stops the command with an error that names it
  -h, --help          show this help

read and prompt ask their questions the same way; a prompt's arguments are strings (--arg key=value).

events <url> <event> follows one event type (the events extension) until Ctrl-C: each occurrence is printed
as one JSON line {eventId, timestamp, data}, and the cursor to resume from goes to stderr.
  --follow poll       events/poll again and again (the default): at once while the server has more, else
                      after its nextPollMs, at least 1000 ms
  --follow stream     hold one events/stream open (2026-07-28 only)
  --cursor C          start after this cursor (a cursor printed earlier) instead of now
  --max N             stop after N occurrences

In a form, an empty answer takes the [default] or skips an optional field; !decline and !cancel
answer the whole form. Exit status: 0 done, 1 the tool or the server failed, 2 bad usage.`

interface Target { url: URL, token: string | undefined, version: string, json: boolean }

export type Command =
  | { command: 'help' }
  | Target & { command: 'tools' }
  | Target & { command: 'resources' }
  | Target & { command: 'prompts' }
  | Target & { command: 'skills' }
  | Target & { command: 'events', follow: EventFollow | undefined }
  | Target & { command: 'call', yes: boolean, tool: string, args: Record<string, unknown>, idempotencyKey: string | undefined }
  | Target & { command: 'read', yes: boolean, uri: string }
  | Target & { command: 'prompt', yes: boolean, prompt: string, args: Record<string, string> }

/** What `mocapi events <url> <event>` follows, and how. */
export interface EventFollow {
  name: string
  args: Record<string, unknown>
  mode: 'poll' | 'stream'
  cursor: string | undefined
  max: number | undefined
}

const VERSIONS: readonly string[] = [PROTOCOL_VERSION, ...LEGACY_PROTOCOL_VERSIONS]

/** A command line that does not make sense; the message says why. */
export class UsageError extends Error {
  constructor (message: string) {
    super(message)
    this.name = 'UsageError'
  }
}

function json (text: string, what: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    throw new UsageError(`${what} is not valid JSON: ${text}`)
  }
}

function endpoint (text: string | undefined): URL {
  if (text === undefined) throw new UsageError('missing <url>')
  const url = URL.canParse(text) ? new URL(text) : undefined
  if (url === undefined || (url.protocol !== 'http:' && url.protocol !== 'https:')) throw new UsageError(`<url> must be an http(s) URL, got ${text}`)
  return url
}

/** The tool arguments of `--args-json` and the `--arg` entries on top of it. */
function toolArgs (argsJson: string | undefined, entries: string[], option: string): Record<string, unknown> {
  const base = argsJson === undefined ? {} : json(argsJson, option)
  if (typeof base !== 'object' || base === null || Array.isArray(base)) throw new UsageError(`${option} must be a JSON object`)
  const args: Record<string, unknown> = { ...base }
  for (const entry of entries) {
    const equals = entry.indexOf('=')
    if (equals <= 0) throw new UsageError(`--arg takes key=value or key:=json, got ${entry}`)
    const raw = entry[equals - 1] === ':'
    const key = entry.slice(0, raw ? equals - 1 : equals)
    if (key === '') throw new UsageError(`--arg takes key=value or key:=json, got ${entry}`)
    args[key] = raw ? json(entry.slice(equals + 1), `--arg ${key}`) : entry.slice(equals + 1)
  }
  return args
}

/** `--follow`, `--cursor` and `--max` of `mocapi events <url> <event>`. */
function eventFollow (
  name: string,
  values: { follow?: string | undefined, cursor?: string | undefined, max?: string | undefined },
  args: Record<string, unknown>,
  version: string
): EventFollow {
  const mode = values.follow ?? 'poll'
  if (mode !== 'poll' && mode !== 'stream') throw new UsageError(`--follow takes poll or stream, got ${mode}`)
  if (mode === 'stream' && version !== PROTOCOL_VERSION) {
    throw new UsageError(`--follow stream speaks ${PROTOCOL_VERSION}; with --protocol-version ${version}, follow with --follow poll`)
  }
  const max = values.max === undefined ? undefined : Number(values.max)
  if (max !== undefined && !(Number.isSafeInteger(max) && max > 0)) throw new UsageError(`--max takes a positive whole number, got ${values.max}`)
  if (values.cursor === '') throw new UsageError('--cursor takes a cursor the server gave (leave it out to start from now)')
  return { name, args, mode, cursor: values.cursor, max }
}

/** Reads the command line (without `node` and the script). Throws a UsageError. */
export function parseCommand (argv: string[], env: Record<string, string | undefined>): Command {
  let parsed
  try {
    parsed = parseArgs({
      args: argv,
      allowPositionals: true,
      options: {
        arg: { type: 'string', multiple: true, default: [] },
        'args-json': { type: 'string' },
        args: { type: 'string' },
        follow: { type: 'string' },
        cursor: { type: 'string' },
        max: { type: 'string' },
        token: { type: 'string' },
        'idempotency-key': { type: 'string' },
        'protocol-version': { type: 'string', default: '2026-07-28' },
        json: { type: 'boolean', default: false },
        yes: { type: 'boolean', short: 'y', default: false },
        help: { type: 'boolean', short: 'h', default: false },
      },
    })
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
  const { values, positionals } = parsed
  if (values.help) return { command: 'help' }
  const [command, url, ...rest] = positionals
  const token = values.token ?? env.MOCAPI_TOKEN
  const version = values['protocol-version']
  if (!VERSIONS.includes(version)) throw new UsageError(`--protocol-version must be one of ${VERSIONS.join(', ')}, got ${version}`)
  if (values.args !== undefined && values['args-json'] !== undefined) throw new UsageError('--args and --args-json are the same option: give one')
  const argsJson = values.args ?? values['args-json']
  const argsOption = values.args === undefined ? '--args-json' : '--args'
  if (command !== 'events') {
    const misplaced = (['follow', 'cursor', 'max'] as const).find((option) => values[option] !== undefined)
    if (misplaced !== undefined) throw new UsageError(`--${misplaced} is an option of mocapi events <url> <event>`)
  }
  if (command === 'events') {
    const target = endpoint(url)
    const [name, ...extra] = rest
    if (extra.length > 0) throw new UsageError(`unexpected ${extra.join(' ')} (arguments go in --args JSON or --arg key=value)`)
    const follow = name === undefined ? undefined : eventFollow(name, values, toolArgs(argsJson, values.arg, argsOption), version)
    return { command, url: target, token, version, json: values.json, follow }
  }
  if (command === 'tools' || command === 'resources' || command === 'prompts' || command === 'skills') {
    const target = endpoint(url)
    if (rest.length > 0) throw new UsageError(`unexpected ${rest.join(' ')}`)
    return { command, url: target, token, version, json: values.json }
  }
  if (command === 'read') {
    const target = endpoint(url)
    const [uri, ...extra] = rest
    if (uri === undefined) throw new UsageError('missing <resource uri>')
    if (extra.length > 0) throw new UsageError(`unexpected ${extra.join(' ')}`)
    return { command, url: target, token, version, json: values.json, yes: values.yes, uri }
  }
  if (command === 'prompt') {
    const target = endpoint(url)
    const [prompt, ...extra] = rest
    if (prompt === undefined) throw new UsageError('missing <prompt>')
    if (extra.length > 0) throw new UsageError(`unexpected ${extra.join(' ')} (arguments go in --arg key=value)`)
    const args = toolArgs(argsJson, values.arg, argsOption)
    for (const [key, value] of Object.entries(args)) {
      if (typeof value !== 'string') throw new UsageError(`a prompt's arguments are strings: --arg ${key}=<text>, got ${JSON.stringify(value)}`)
    }
    return { command, url: target, token, version, json: values.json, yes: values.yes, prompt, args: args as Record<string, string> }
  }
  if (command === 'call') {
    const target = endpoint(url)
    const [tool, ...extra] = rest
    if (tool === undefined) throw new UsageError('missing <tool>')
    if (extra.length > 0) throw new UsageError(`unexpected ${extra.join(' ')} (arguments go in --arg key=value)`)
    const key = values['idempotency-key']
    if (key !== undefined && !/^[\x21-\x7e]{1,255}$/.test(key)) {
      throw new UsageError('--idempotency-key takes 1 to 255 printable ASCII characters without spaces')
    }
    const args = toolArgs(argsJson, values.arg, argsOption)
    return { command, url: target, token, version, json: values.json, yes: values.yes, tool, args, idempotencyKey: key }
  }
  throw new UsageError(command === undefined ? 'missing command' : `unknown command ${command}`)
}
