/**
 * The mocapi test client: calls tools, prompts and resources of an MCP 2026-07-28 server, and
 * drives the `input_required` rounds with the answers a test gives, until the result is complete.
 */
import type { FastifyInstance } from 'fastify'
import type { GetPromptResult } from '../features/prompts.js'
import type { ResourceContents } from '../features/resources.js'
import type { CallToolResult, ClientCapabilities, Implementation, InputRequest, JsonObject } from '../protocol/wire.js'
import { answerFunction, viewOf, type Answers, type InputResponse } from './answers.js'
import { httpTransport, injectTransport, readReply, type ReadReply, type Transport } from './transport.js'

const PROTOCOL_VERSION = '2026-07-28'

/** Options of `createTestClient`. */
export interface TestClientOptions {
  /** Declared on every request. Default: every kind of input (elicitation form and url, sampling, roots). */
  capabilities?: ClientCapabilities
  /** Default `{ name: 'mocapi-test-client', version: '1.0.0' }`. */
  clientInfo?: Implementation
  /** Sent in `_meta` and the `MCP-Protocol-Version` header. Default `2026-07-28`. */
  protocolVersion?: string
  /**
   * Extra HTTP headers on every request. They win over the client's own (`content-type`, `accept`, the `mcp-*`
   * headers, `authorization` from `token`), whatever their case, and `host` is sent as given, to an app and to a URL.
   */
  headers?: Record<string, string>
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string
  /** The endpoint's path, for Fastify apps. Default `/mcp`. */
  path?: string
  /** How many `input_required` results one call may take before it fails. Default 10. */
  maxRounds?: number
  /** Called with each notification of a streamed reply, as it arrives. */
  onNotification?: (notification: Notification) => void
  /** Called on each `input_required` result, before its requests are answered; `round` counts from 1. */
  onRound?: (round: number, inputRequests: Record<string, InputRequest>) => void
}

/** Per-call additions: `_meta` fields (say `progressToken`) and HTTP headers (which win over the client's `headers`). */
export interface CallOptions {
  meta?: JsonObject
  headers?: Record<string, string>
}

/** A JSON-RPC notification the server streamed during a request (progress, log messages). */
export interface Notification {
  jsonrpc: '2.0'
  method: string
  params?: JsonObject
  [key: string]: unknown
}

/** One `input_required` round: what the server asked, and what the client answered. */
export interface Round {
  inputRequests: Record<string, InputRequest>
  inputResponses: Record<string, InputResponse>
}

/** The complete result of a call, and how it got there. */
export interface Outcome<R> {
  result: R & { resultType: 'complete', _meta?: JsonObject }
  /** One entry per `input_required` result, in order. */
  rounds: Round[]
  /** HTTP requests made: `rounds.length + 1`. */
  roundTrips: number
  /** Notifications of every round trip, in order. */
  notifications: Notification[]
}

/** The result of `resources/read`. */
export interface ReadResourceResult {
  contents: ResourceContents[]
  ttlMs?: number
  cacheScope?: 'public' | 'private'
}

/** A tool as `tools/list` shows it. */
export interface ListedTool {
  name: string
  title?: string
  description?: string
  inputSchema: JsonObject
  outputSchema?: JsonObject
  [key: string]: unknown
}

/** A JSON-RPC error the server answered with, or a reply that was not JSON-RPC at all. */
export class McpClientError extends Error {
  /** The JSON-RPC error code; undefined when the reply was not JSON-RPC (say, a 401 from an auth hook). */
  readonly code: number | undefined
  /** The JSON-RPC `error.data`, or the body of a reply that was not JSON-RPC. */
  readonly data: unknown
  /** The HTTP status of the reply. */
  readonly status: number
  /** The rounds completed before the error. */
  readonly rounds: Round[]

  constructor (message: string, fields: { code?: number, data?: unknown, status: number, rounds: Round[] }) {
    super(message)
    this.name = 'McpClientError'
    this.code = fields.code
    this.data = fields.data
    this.status = fields.status
    this.rounds = fields.rounds
  }
}

/** A mocapi test client; see `createTestClient`. */
export interface TestClient {
  /** Calls a tool, answering its input requests with `answers`, and resolves with the complete result. */
  callTool (name: string, args?: JsonObject, answers?: Answers, options?: CallOptions): Promise<Outcome<CallToolResult>>
  /** Gets a prompt, answering its input requests with `answers`. */
  getPrompt (name: string, args?: Record<string, string>, answers?: Answers, options?: CallOptions): Promise<Outcome<GetPromptResult>>
  /** Reads a resource, answering its input requests with `answers`. */
  readResource (uri: string, answers?: Answers, options?: CallOptions): Promise<Outcome<ReadResourceResult>>
  /** Every tool of `tools/list`, following its pages. */
  listTools (options?: CallOptions): Promise<ListedTool[]>
  /** One request, one round trip: the result as the server sent it (`input_required` included). */
  request (method: string, params?: JsonObject, options?: CallOptions): Promise<JsonObject>
}

const NAMED: Record<string, string> = { 'tools/call': 'name', 'prompts/get': 'name', 'resources/read': 'uri' }

function isObject (value: unknown): value is JsonObject {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}

// Printable ASCII, inner spaces and tabs: what a header carries as it is. Surrounding whitespace
// would be trimmed on the way, and a value shaped like the sentinel would be decoded.
const PLAIN_HEADER = /^(?:[\x21-\x7e](?:[\t\x20-\x7e]*[\x21-\x7e])?)?$/

/** An `Mcp-Name` value: plain when it survives as it is, else `=?base64?…?=`. */
export function headerValue (name: string): string {
  const plain = PLAIN_HEADER.test(name) && !(name.startsWith('=?base64?') && name.endsWith('?='))
  return plain ? name : `=?base64?${Buffer.from(name).toString('base64')}?=`
}

/** The result of a reply, or the McpClientError it stands for. */
function resultOf (reply: ReadReply, rounds: Round[]): JsonObject {
  const message = reply.message
  if (isObject(message) && isObject(message.error)) {
    const { code, message: text, data } = message.error
    return fail(String(text), { code: code as number, data, status: reply.status, rounds })
  }
  if (isObject(message) && message.jsonrpc === '2.0' && isObject(message.result)) return message.result
  const said = isObject(message) && typeof message.message === 'string' ? message.message : reply.text.slice(0, 200)
  return fail(`HTTP ${reply.status}: ${said === '' ? 'the reply holds no JSON-RPC response' : said}`, { data: message, status: reply.status, rounds })
}

function fail (message: string, fields: ConstructorParameters<typeof McpClientError>[1]): never {
  throw new McpClientError(message, fields)
}

class Client implements TestClient {
  readonly #transport: Transport
  readonly #options: TestClientOptions
  readonly #maxRounds: number
  #nextId = 1

  constructor (transport: Transport, options: TestClientOptions) {
    this.#transport = transport
    this.#options = options
    this.#maxRounds = options.maxRounds ?? 10
  }

  callTool (name: string, args?: JsonObject, answers?: Answers, options?: CallOptions): Promise<Outcome<CallToolResult>> {
    return this.#interactive('tools/call', args === undefined ? { name } : { name, arguments: args }, answers, options)
  }

  getPrompt (name: string, args?: Record<string, string>, answers?: Answers, options?: CallOptions): Promise<Outcome<GetPromptResult>> {
    return this.#interactive('prompts/get', args === undefined ? { name } : { name, arguments: args }, answers, options)
  }

  readResource (uri: string, answers?: Answers, options?: CallOptions): Promise<Outcome<ReadResourceResult>> {
    return this.#interactive('resources/read', { uri }, answers, options)
  }

  async listTools (options?: CallOptions): Promise<ListedTool[]> {
    const tools: ListedTool[] = []
    let cursor: unknown
    do {
      const result = await this.request('tools/list', cursor === undefined ? {} : { cursor }, options)
      tools.push(...result.tools as ListedTool[])
      cursor = result.nextCursor
    } while (typeof cursor === 'string')
    return tools
  }

  async request (method: string, params: JsonObject = {}, options: CallOptions = {}): Promise<JsonObject> {
    return resultOf(await this.#exchange(method, params, options, []), [])
  }

  async #interactive<R> (method: string, target: JsonObject, given: Answers | undefined, options: CallOptions = {}): Promise<Outcome<R>> {
    const answer = answerFunction(given)
    const rounds: Round[] = []
    const notifications: Notification[] = []
    let retry: JsonObject = {}
    for (;;) {
      const result = resultOf(await this.#exchange(method, { ...target, ...retry }, options, notifications), rounds)
      if (result.resultType === 'complete') {
        return { result: result as Outcome<R>['result'], rounds, roundTrips: rounds.length + 1, notifications }
      }
      if (result.resultType !== 'input_required') {
        throw new Error(`${method} answered a result with resultType ${JSON.stringify(result.resultType)}; a 2026-07-28 server sends "complete" or "input_required"`)
      }
      if (rounds.length === this.#maxRounds) {
        throw new Error(`${method} ${JSON.stringify(target.name ?? target.uri)} still needs input after ${this.#maxRounds} rounds (maxRounds)`)
      }
      const inputRequests = (result.inputRequests ?? {}) as Record<string, InputRequest>
      this.#options.onRound?.(rounds.length + 1, inputRequests)
      const inputResponses: Record<string, InputResponse> = {}
      for (const [key, request] of Object.entries(inputRequests)) inputResponses[key] = await answer(viewOf(key, request))
      rounds.push({ inputRequests, inputResponses })
      retry = {}
      if (Object.keys(inputResponses).length > 0) retry.inputResponses = inputResponses
      if (result.requestState !== undefined) retry.requestState = result.requestState
    }
  }

  /** Sends one request and reads its reply, collecting the notifications it streams. */
  async #exchange (method: string, params: JsonObject, options: CallOptions, notifications: Notification[]): Promise<ReadReply> {
    const o = this.#options
    const version = o.protocolVersion ?? PROTOCOL_VERSION
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': version,
      'mcp-method': method,
    }
    const name = params[NAMED[method]]
    if (typeof name === 'string') headers['mcp-name'] = headerValue(name)
    if (o.token !== undefined) headers.authorization = `Bearer ${o.token}`
    const meta = {
      'io.modelcontextprotocol/protocolVersion': version,
      'io.modelcontextprotocol/clientCapabilities': o.capabilities ?? { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} },
      'io.modelcontextprotocol/clientInfo': o.clientInfo ?? { name: 'mocapi-test-client', version: '1.0.0' },
      ...options.meta,
    }
    for (const given of [o.headers, options.headers]) {
      for (const [header, value] of Object.entries(given ?? {})) headers[header.toLowerCase()] = value
    }
    const body = JSON.stringify({ jsonrpc: '2.0', id: this.#nextId++, method, params: { ...params, _meta: meta } })
    const raw = await this.#transport(headers, body)
    return readReply(raw, (message) => {
      notifications.push(message as Notification)
      o.onNotification?.(message as Notification)
    })
  }
}

/** Where a test client sends requests: a Fastify app (through `inject`, no port) or the URL of an endpoint. */
export type TestTarget = FastifyInstance | string | URL

function transportOf (target: TestTarget, path: string): Transport {
  if (typeof target === 'string' || target instanceof URL) return httpTransport(new URL(target))
  if (typeof target?.inject !== 'function') throw new TypeError(`createTestClient takes Fastify apps and URLs, got ${String(target)}`)
  return injectTransport(target, path)
}

/** Each request to the next transport in turn, as a round-robin load balancer does. */
function roundRobin (transports: Transport[]): Transport {
  let next = 0
  return (headers, body) => {
    const transport = transports[next]
    next = (next + 1) % transports.length
    return transport(headers, body)
  }
}

/**
 * A client of an MCP 2026-07-28 server: a Fastify app (reached through `inject`, no port) or the
 * URL of its endpoint (over HTTP, JSON and event-stream replies alike). Given several apps or URLs,
 * or a mix, it sends each HTTP request to the next one in turn, so the rounds of one call land on
 * different nodes, as behind a round-robin load balancer; the apps must share their
 * `requestState` keys. `createTestClient([appA, appB])`.
 */
export function createTestClient (target: TestTarget | readonly TestTarget[], options: TestClientOptions = {}): TestClient {
  const targets: readonly TestTarget[] = Array.isArray(target) ? target : [target as TestTarget]
  if (targets.length === 0) throw new TypeError('createTestClient needs at least one Fastify app or URL')
  return new Client(roundRobin(targets.map((one) => transportOf(one, options.path ?? '/mcp'))), options)
}
