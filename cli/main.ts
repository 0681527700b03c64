/**
 * `mocapi`: try an MCP 2026-07-28 server by hand. `mocapi call <url> <tool>` calls a tool and asks
 * the questions of each elicitation on the terminal until the result is complete (following a task-capable tool's
 * task, polled at its pollIntervalMs, its questions asked the same way); with
 * `--protocol-version 2025-11-25` (or another 2025 revision), as a client of that era.
 */
import type { Readable, Writable } from 'node:stream'
import { McpClientError, createTestClient, type ListedTool, type Notification, type TestClient } from '../lib/testing/client.js'
import type { AnswerFunction } from '../lib/testing/answers.js'
import type { ContentBlock, JsonObject } from '../lib/protocol/wire.js'
import { USAGE, parseCommand, type Command } from './args.js'
import { events, eventsHint } from './events.js'
import { askForm, askUrl, type Asker } from './form.js'
import { printableJson, printableLine, printableText } from './sanitize.js'
import { Terminal } from './terminal.js'

/** Where the CLI reads and writes; the process's own streams by default. */
export interface Io {
  stdin: Readable
  stdout: Writable
  stderr: Writable
  env: Record<string, string | undefined>
}

const CLIENT_INFO = { name: 'mocapi-cli', version: '1.0.0' }

/** A server-supplied value on one line; every server string the CLI shows goes through here or printableText. */
function shown (value: unknown): string {
  return printableLine(String(value))
}

/** The text of a content block, or one line saying what it is. */
export function blockText (block: ContentBlock): string {
  switch (block.type) {
    case 'text': return printableText(block.text)
    case 'image':
    case 'audio': return `[${block.type} ${shown(block.mimeType)}]`
    case 'resource_link': return `[link ${shown(block.name)}: ${shown(block.uri)}]`
    default: return 'text' in block.resource ? printableText(block.resource.text) : `[resource ${shown(block.resource.uri)}]`
  }
}

/** A notification as one line of stderr. */
export function notificationText (notification: Notification): string {
  const params = notification.params ?? {}
  if (notification.method === 'notifications/progress') {
    const total = params.total === undefined ? '' : `/${shown(params.total)}`
    return `progress ${shown(params.progress)}${total}${params.message === undefined ? '' : ` ${shown(params.message)}`}`
  }
  if (notification.method === 'notifications/message') {
    const data = typeof params.data === 'string' ? shown(params.data) : printableJson(params.data ?? null)
    return `[${shown(params.level)}]${params.logger === undefined ? '' : ` ${shown(params.logger)}:`} ${data}`
  }
  return shown(notification.method)
}

/** A tool as one line of `mocapi tools`: `name(arg: type, opt?: type) description`. */
export function toolLine (tool: ListedTool): string {
  const properties = (tool.inputSchema.properties ?? {}) as Record<string, JsonObject>
  const required = (tool.inputSchema.required ?? []) as string[]
  const args = Object.entries(properties).map(([name, schema]) => {
    const type = Array.isArray(schema.enum) ? schema.enum.map((v) => printableJson(v)).join(' | ') : shown(schema.type ?? 'any')
    return `${shown(name)}${required.includes(name) ? '' : '?'}: ${type}`
  })
  return `${shown(tool.name)}(${args.join(', ')})${tool.description === undefined ? '' : `  ${shown(tool.description)}`}`
}

/** For an error result that refused an argument given as a string: how to send it typed. */
export function typeHint (content: readonly ContentBlock[], args: Record<string, unknown>): string | undefined {
  for (const block of content) {
    if (block.type !== 'text') continue
    const refused = /arguments\.([A-Za-z0-9_$-]+) must be (number|integer|boolean|array|object|null)\b/.exec(block.text)
    if (refused === null || typeof args[refused[1]] !== 'string') continue
    const [, name, type] = refused
    return `hint: ${shown(name)} was sent as a string; --arg ${shown(name)}:=${shown(args[name])} sends it as JSON (the tool wants ${type === 'integer' || type === 'array' || type === 'object' ? 'an' : 'a'} ${type})`
  }
  return undefined
}

/** A task as one line of stderr: its status, and its status message when it has one. */
export function taskLine (task: JsonObject): string {
  const message = task.statusMessage === undefined ? '' : `: ${shown(task.statusMessage)}`
  return `task ${shown(task.status)}${message}`
}

/** The longest the CLI follows a task: a day (Ctrl-C stops it sooner). */
const TASK_TIMEOUT = 24 * 3_600_000

/** What to do about a 401: send a token, or a better one. */
function credentialsHint (token: string | undefined): string {
  return token === undefined
    ? ' — the server wants credentials: pass --token <bearer token> (or set MOCAPI_TOKEN); for a development token ' +
      'signed with your app\'s JWT secret, see docs/deploy.md#a-token-for-development'
    : ' — the server refused the bearer token (from --token, or MOCAPI_TOKEN)'
}

/** The line that reports a failed command; `token` is the one sent, if any. */
export function failureLine (error: unknown, token: string | undefined): string {
  const code = error instanceof McpClientError && error.code !== undefined ? `error ${error.code}: ` : ''
  const hint = error instanceof McpClientError && error.status === 401 ? credentialsHint(token) : ''
  return `mocapi: ${code}${shown((error as Error).message)}${hint}`
}

/** Answers what the CLI can answer: forms and links, on the terminal. */
function terminalAnswers (asker: Asker, yes: boolean): AnswerFunction {
  return (request) => {
    if (request.kind === 'elicit') return askForm(asker, request, { yes })
    if (request.kind === 'elicitUrl') return askUrl(asker, request, { yes })
    throw new Error(`the server asked for ${request.request.method} (input request "${request.key}"), which mocapi call does not offer`)
  }
}

async function run (command: Exclude<Command, { command: 'help' }>, io: Io, terminal: Terminal): Promise<number> {
  let lastTask = ''
  const client = createTestClient(command.url, {
    token: command.token,
    protocolVersion: command.version,
    clientInfo: CLIENT_INFO,
    capabilities: { elicitation: { form: {}, url: {} } },
    tasks: true,
    taskTimeout: TASK_TIMEOUT,
    onNotification: (notification) => terminal.say(notificationText(notification)),
    onTask: (task) => {
      // Said when it changes, not on every poll.
      const line = taskLine(task)
      if (line !== lastTask) terminal.say(line)
      lastTask = line
    },
    onRound: (round, requests) => {
      const count = Object.keys(requests).length
      terminal.say(`round ${round}: ${count} ${count === 1 ? 'question' : 'questions'}`)
    },
  })
  if (command.command === 'events') return events(client, command, io, terminal)
  if (command.command === 'tools') {
    const tools = await client.listTools()
    io.stdout.write(command.json ? `${printableJson(tools)}\n` : tools.map((tool) => `${toolLine(tool)}\n`).join(''))
    return 0
  }
  if (command.command === 'skills') {
    const skills = await listAll(client, 'skills/list', 'skills')
    io.stdout.write(command.json ? `${printableJson({ skills })}\n` : skills.map((skill) => `${skillLine(skill)}\n`).join(''))
    return 0
  }
  if (command.command === 'resources' || command.command === 'prompts') {
    const lists = command.command === 'prompts'
      ? { prompts: await listAll(client, 'prompts/list', 'prompts') }
      : { resources: await listAll(client, 'resources/list', 'resources'), resourceTemplates: await listAll(client, 'resources/templates/list', 'resourceTemplates') }
    if (command.json) {
      io.stdout.write(`${printableJson(lists)}\n`)
    } else {
      const lines = Object.values(lists).flat().map(listedLine)
      io.stdout.write(lines.map((line) => `${line}\n`).join(''))
    }
    return 0
  }
  const answers = terminalAnswers(terminal, command.yes)
  if (command.command === 'read') {
    const { result } = await client.readResource(command.uri, answers)
    io.stdout.write(command.json ? `${printableJson(result)}\n` : result.contents.map((contents) => `${contentsText(contents)}\n`).join(''))
    return cutShort(terminal, 0)
  }
  if (command.command === 'prompt') {
    const { result } = await client.getPrompt(command.prompt, command.args, answers)
    io.stdout.write(command.json
      ? `${printableJson(result)}\n`
      : result.messages.map((message) => `${shown(message.role)}: ${blockText(message.content)}\n`).join(''))
    return cutShort(terminal, 0)
  }
  const { result } = await client.callTool(command.tool, command.args, answers,
    { meta: { progressToken: 'mocapi-cli' }, idempotencyKey: command.idempotencyKey })
  if (command.json) {
    io.stdout.write(`${printableJson(result)}\n`)
  } else {
    const lines = result.content.map(blockText)
    if (lines.length === 0 &&
      result.structuredContent !== undefined) lines.push(printableJson(result.structuredContent, 2))
    io.stdout.write(lines.map((line) => `${line}\n`).join(''))
  }
  const hint = result.isError === true ? typeHint(result.content, command.args) : undefined
  if (hint !== undefined) terminal.say(hint)
  return cutShort(terminal, result.isError === true ? 1 : 0)
}

/** `status`, or 1 when a question met the end of the input (or Ctrl-C), which the CLI then says. */
function cutShort (terminal: Terminal, status: number): number {
  if (!terminal.ended) return status
  terminal.say('mocapi: a question was cut short (end of input or Ctrl-C) and answered cancel')
  return 1
}

/** The most pages of one list the CLI follows: a server that hands out cursors forever is cut off. */
const MAX_PAGES = 1_000

/** Every item of a paginated list. */
async function listAll (client: TestClient<string>, method: string, field: string): Promise<JsonObject[]> {
  const items: JsonObject[] = []
  let cursor: unknown
  let pages = 0
  do {
    if (++pages > MAX_PAGES) throw new Error(`${method} still had more after ${MAX_PAGES} pages`)
    const result = await client.request(method, cursor === undefined ? {} : { cursor })
    if (Array.isArray(result[field])) items.push(...result[field] as JsonObject[])
    cursor = result.nextCursor
  } while (typeof cursor === 'string')
  return items
}

/** A resource, template or prompt as one line: its URI or template or name, then its name and description. */
export function listedLine (item: JsonObject): string {
  const id = item.uri ?? item.uriTemplate ?? item.name
  const name = item.uri !== undefined || item.uriTemplate !== undefined ? `  ${shown(item.name)}` : ''
  const args = Array.isArray(item.arguments)
    ? `(${(item.arguments as JsonObject[]).map((arg) => `${shown(arg.name)}${arg.required === true ? '' : '?'}`).join(', ')})`
    : ''
  return `${shown(id)}${args}${name}${item.description === undefined ? '' : `  ${shown(item.description)}`}`
}

/** A skill as one line: its SKILL.md's URI, its name and description, and how many files of how many bytes. */
export function skillLine (skill: JsonObject): string {
  const frontmatter = (skill.frontmatter ?? {}) as JsonObject
  const files = Array.isArray(skill.resources) ? skill.resources as JsonObject[] : undefined
  const bytes = files?.reduce((sum, file) => sum + (typeof file.size === 'number' ? file.size : 0), 0)
  const size = files === undefined ? '  (files listed on demand)' : `  (${files.length} ${files.length === 1 ? 'file' : 'files'}, ${bytes} bytes)`
  return `${shown(skill.uri)}  ${shown(frontmatter.name)}  ${shown(frontmatter.description)}${size}`
}

/** A resource's contents: its text, or one line saying what the blob is. */
export function contentsText (contents: { uri: string, mimeType?: string, text?: string, blob?: string }): string {
  if (typeof contents.text === 'string') return printableText(contents.text)
  return `[blob ${shown(contents.mimeType ?? 'application/octet-stream')}: ${shown(contents.uri)}]`
}

/** Runs the CLI; resolves with the exit status (0 done, 1 failed, 2 bad usage). */
export async function main (argv: string[], io: Io): Promise<number> {
  let command: Command
  try {
    command = parseCommand(argv, io.env)
  } catch (error) {
    io.stderr.write(`mocapi: ${(error as Error).message}\n\n${USAGE}\n`)
    return 2
  }
  if (command.command === 'help') {
    io.stdout.write(`${USAGE}\n`)
    return 0
  }
  const terminal = new Terminal(io.stdin, io.stderr)
  let status = 1
  try {
    status = await run(command, io, terminal)
  } catch (error) {
    io.stderr.write(`${failureLine(error, command.token)}\n`)
    const hint = eventsHint(command, error)
    if (hint !== undefined) io.stderr.write(`${hint}\n`)
    if (command.json && error instanceof McpClientError) {
      io.stdout.write(`${printableJson({ error: { code: error.code, message: error.message, data: error.data, status: error.status } })}\n`)
    }
  } finally {
    terminal.close()
  }
  return status
}

/** The process's own streams and environment. */
export function processIo (): Io {
  return { stdin: process.stdin, stdout: process.stdout, stderr: process.stderr, env: process.env }
}
