/**
 * `mocapi events <url>`: the server's event types (the events extension, `io.modelcontextprotocol/events`), and
 * `mocapi events <url> <event>`: one type followed by polling or over a held stream, each occurrence a JSON line.
 */
import { request as httpRequest, type IncomingMessage } from 'node:http'
import { request as httpsRequest } from 'node:https'
import { setTimeout as sleep } from 'node:timers/promises'
import { McpClientError, type TestClient } from '../lib/testing/client.js'
import { isObject, resultOf } from '../lib/testing/errors.js'
import { EventStreamParser, headersOf } from '../lib/testing/transport.js'
import { PROTOCOL_VERSION, type JsonObject } from '../lib/protocol/wire.js'
import type { Command, EventFollow } from './args.js'
import type { Io } from './main.js'
import { printableJson, printableLine } from './sanitize.js'
import type { Terminal } from './terminal.js'

type EventsCommand = Extract<Command, { command: 'events' }>

/** The fewest ms between two polls, whatever `nextPollMs` says (the extension's advice to clients). */
export const POLL_FLOOR_MS = 1_000

/** The most occurrences one poll asks for: the cap mocapi serves. */
const MAX_BATCH = 1_000

/** The most pages of `events/list` followed: a server that hands out cursors forever is cut off. */
const MAX_PAGES = 1_000

/** The Unsupported error of the events extension: the type does not offer that delivery. */
const UNSUPPORTED = -32026

function shown (value: unknown): string {
  return printableLine(String(value))
}

/** An event type as one line of `mocapi events <url>`: `name(arg: type)  [poll push]  description`. */
export function eventTypeLine (type: JsonObject): string {
  const schema = isObject(type.inputSchema) ? type.inputSchema : {}
  const properties = isObject(schema.properties) ? schema.properties : {}
  const required = Array.isArray(schema.required) ? schema.required : []
  const args = Object.entries(properties).map(([name, property]) =>
    `${shown(name)}${required.includes(name) ? '' : '?'}: ${shown(isObject(property) ? property.type ?? 'any' : 'any')}`)
  const delivery = Array.isArray(type.delivery) ? type.delivery.map(shown).join(' ') : ''
  const description = typeof type.description === 'string' ? `  ${shown(type.description)}` : ''
  return `${shown(type.name)}(${args.join(', ')})  [${delivery}]${description}`
}

/** One occurrence as the JSON line `mocapi events` prints. */
export function occurrenceLine (occurrence: JsonObject): string {
  return printableJson({ eventId: occurrence.eventId, timestamp: occurrence.timestamp, data: occurrence.data })
}

async function listTypes (client: TestClient<string>, command: EventsCommand, io: Io): Promise<number> {
  const types: JsonObject[] = []
  let cursor: unknown
  let pages = 0
  do {
    if (++pages > MAX_PAGES) throw new Error(`events/list still had more after ${MAX_PAGES} pages`)
    const result = await client.request('events/list', cursor === undefined ? {} : { cursor })
    if (Array.isArray(result.events)) types.push(...result.events.filter(isObject))
    cursor = result.nextCursor
  } while (typeof cursor === 'string')
  io.stdout.write(command.json ? `${printableJson({ events: types })}\n` : types.map((type) => `${eventTypeLine(type)}\n`).join(''))
  return 0
}

/** Prints occurrences and says each new cursor on stderr; counts toward `--max`. */
class Printer {
  readonly #io: Io
  readonly #terminal: Terminal
  readonly #max: number
  #cursor: unknown
  count = 0

  constructor (io: Io, terminal: Terminal, follow: EventFollow) {
    this.#io = io
    this.#terminal = terminal
    this.#max = follow.max ?? Infinity
    this.#cursor = follow.cursor
  }

  get done (): boolean {
    return this.count >= this.#max
  }

  /** How many more occurrences `--max` allows. */
  get left (): number {
    return this.#max - this.count
  }

  occurrence (occurrence: JsonObject): void {
    this.#io.stdout.write(`${occurrenceLine(occurrence)}\n`)
    this.count++
  }

  cursor (cursor: unknown): void {
    if (cursor === this.#cursor || cursor === undefined) return
    this.#cursor = cursor
    this.#terminal.say(cursor === null ? 'cursor: none (this event type keeps no history to resume from)' : `cursor: ${shown(cursor)}`)
  }

  truncated (): void {
    this.#terminal.say('truncated: some occurrences since the cursor are no longer kept by the server, and were skipped')
  }
}

/** `events/poll` again and again: at once while `hasMore`, else after `nextPollMs` (at least POLL_FLOOR_MS). */
async function poll (client: TestClient<string>, follow: EventFollow, printer: Printer, stop: AbortSignal): Promise<void> {
  let cursor: unknown = follow.cursor ?? null
  while (!printer.done && !stop.aborted) {
    const params: JsonObject = { name: follow.name, arguments: follow.args, cursor }
    if (follow.max !== undefined) params.maxEvents = Math.min(printer.left, MAX_BATCH)
    const result = await client.request('events/poll', params)
    if (result.truncated === true) printer.truncated()
    const events = Array.isArray(result.events) ? result.events.filter(isObject) : []
    for (const occurrence of events.slice(0, printer.left)) printer.occurrence(occurrence)
    cursor = result.cursor ?? null
    printer.cursor(cursor)
    if (result.hasMore === true || printer.done) continue
    const wait = Math.max(POLL_FLOOR_MS, typeof result.nextPollMs === 'number' ? result.nextPollMs : 0)
    await sleep(wait, undefined, { signal: stop }).catch(() => {})
  }
}

/** POSTs the `events/stream` request; the reply's body is read by the caller, and `stop` ends it. */
function openStream (command: EventsCommand, follow: EventFollow, stop: AbortSignal): Promise<IncomingMessage> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'events/stream',
    params: {
      name: follow.name,
      arguments: follow.args,
      cursor: follow.cursor ?? null,
      _meta: {
        'io.modelcontextprotocol/protocolVersion': PROTOCOL_VERSION,
        'io.modelcontextprotocol/clientCapabilities': {},
        'io.modelcontextprotocol/clientInfo': { name: 'mocapi-cli', version: '1.0.0' },
      },
    },
  })
  const headers = headersOf({
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': PROTOCOL_VERSION,
    'mcp-method': 'events/stream',
    'content-length': String(Buffer.byteLength(body)),
  }, command.token)
  const send = command.url.protocol === 'https:' ? httpsRequest : httpRequest
  return new Promise((resolve, reject) => {
    const request = send(command.url, { method: 'POST', headers, signal: stop }, resolve)
    request.on('error', reject)
    request.end(body)
  })
}

/** What one message of the stream means: go on, or the stream's end (its exit status). */
function streamed (message: unknown, printer: Printer, terminal: Terminal, status: number): number | undefined {
  if (!isObject(message)) return undefined
  if (!('method' in message)) {
    // The final JSON-RPC result or error: the server ended the stream.
    resultOf({ status, message, text: '' }, [])
    terminal.say('mocapi: the server ended the stream; resume with --cursor and the last cursor')
    return 1
  }
  const params = isObject(message.params) ? message.params : {}
  switch (message.method) {
    case 'notifications/events/active':
      if (params.truncated === true) printer.truncated()
      printer.cursor(params.cursor)
      return undefined
    case 'notifications/events/event':
      printer.occurrence(params)
      printer.cursor(params.cursor)
      return printer.done ? 0 : undefined
    case 'notifications/events/heartbeat':
      printer.cursor(params.cursor)
      return undefined
    case 'notifications/events/error':
    case 'notifications/events/terminated': {
      const error = isObject(params.error) ? params.error : {}
      const code = typeof error.code === 'number' ? `error ${error.code}: ` : ''
      const ended = message.method === 'notifications/events/terminated'
      terminal.say(`mocapi: ${ended ? 'the subscription was terminated' : 'the server reports'}: ${code}${shown(error.message ?? 'no message')}`)
      return ended ? 1 : undefined
    }
    default:
      return undefined
  }
}

/** One `events/stream` held until `--max`, Ctrl-C, or the server ends it. */
async function stream (command: EventsCommand, follow: EventFollow, printer: Printer, terminal: Terminal, stop: AbortSignal): Promise<number> {
  const local = new AbortController()
  const abort = (): void => local.abort()
  stop.addEventListener('abort', abort)
  try {
    const reply = await openStream(command, follow, local.signal)
    reply.setEncoding('utf8')
    const type = reply.headers['content-type'] ?? ''
    if (!type.startsWith('text/event-stream')) {
      let text = ''
      for await (const chunk of reply) text += chunk
      const message = type.startsWith('application/json') ? parseJson(text) : undefined
      resultOf({ status: reply.statusCode as number, message, text }, [])
      terminal.say('mocapi: the server answered without opening a stream')
      return 1
    }
    const parser = new EventStreamParser()
    for await (const chunk of reply as AsyncIterable<string>) {
      for (const message of parser.push(chunk)) {
        const end = streamed(message, printer, terminal, 200)
        if (end !== undefined) return end
      }
    }
    terminal.say('mocapi: the stream closed; resume with --cursor and the last cursor')
    return 1
  } catch (error) {
    if (!stop.aborted || error instanceof McpClientError) throw error
  } finally {
    stop.removeEventListener('abort', abort)
    local.abort()
  }
  // Ctrl-C cut the request or the stream short: a clean stop.
  return 0
}

function parseJson (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** Follows one event type until `--max`, Ctrl-C (SIGINT), or the server ends it. */
async function followType (client: TestClient<string>, command: EventsCommand, follow: EventFollow, io: Io, terminal: Terminal): Promise<number> {
  const printer = new Printer(io, terminal, follow)
  const stop = new AbortController()
  const interrupt = (): void => stop.abort()
  process.once('SIGINT', interrupt)
  terminal.say(`following ${shown(follow.name)} by ${follow.mode}${follow.max === undefined ? '' : ` (at most ${follow.max})`}; Ctrl-C stops`)
  try {
    const status = follow.mode === 'poll'
      ? (await poll(client, follow, printer, stop.signal), 0)
      : await stream(command, follow, printer, terminal, stop.signal)
    if (stop.signal.aborted) terminal.say(`stopped after ${printer.count} ${printer.count === 1 ? 'occurrence' : 'occurrences'}`)
    return status
  } finally {
    process.removeListener('SIGINT', interrupt)
  }
}

/** For a follow the server refused as Unsupported: where to see what the type offers. */
export function eventsHint (command: Command, error: unknown): string | undefined {
  if (command.command !== 'events' || command.follow === undefined) return undefined
  if (!(error instanceof McpClientError) || error.code !== UNSUPPORTED) return undefined
  return `hint: ${shown(command.follow.name)} may not offer ${command.follow.mode}; mocapi events <url> lists what each type offers`
}

/** `mocapi events <url> [event]`. */
export function events (client: TestClient<string>, command: EventsCommand, io: Io, terminal: Terminal): Promise<number> {
  return command.follow === undefined ? listTypes(client, command, io) : followType(client, command, command.follow, io, terminal)
}
