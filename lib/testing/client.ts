import type { FastifyInstance } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import type { GetPromptResult } from '../features/prompts.js'
import { NAME_FIELDS } from '../protocol/envelope.js'
import { TASKS_EXTENSION as TASKS } from '../protocol/extensions.js'
import { PROTOCOL_VERSION, type CallToolResult, type ClientCapabilities, type InputRequest, type JsonObject } from '../protocol/wire.js'
import { answerFunction, viewOf, type AnswerFunction, type Answers, type InputResponse } from './answers.js'
import { fail, isObject, resultOf } from './errors.js'
import { LegacySession, type ClientDefaults } from './session.js'
import {
  callHeaders, isLegacyVersion, type CallOptions, type Notification, type Outcome, type ReadResourceResult, type Round,
  type TestClientOptions,
} from './types.js'
import { headersOf, httpTransport, injectTransport, readReply, type ReadReply, type Transport } from './transport.js'

export { McpClientError } from './errors.js'
export type {
  CallOptions, CompleteResult, LegacyProtocolVersion, Notification, Outcome, ReadResourceResult, Round,
  TestClientOptions,
} from './types.js'

const MAX_PAGES = 1_000

const DEFAULTS: ClientDefaults = {
  capabilities: { elicitation: { form: {}, url: {} }, sampling: {}, roots: {} },
  clientInfo: { name: 'mocapi-test-client', version: '1.0.0' },
}

/** A tool as `tools/list` shows it. */
export interface ListedTool {
  name: string
  title?: string
  description?: string
  inputSchema: JsonObject
  outputSchema?: JsonObject
  /** With `ui` (and the older flat `ui/resourceUri`) for a tool that links a view. */
  _meta?: JsonObject
  [key: string]: unknown
}

/** A mocapi test client; see `createTestClient`. `V` is the protocol version it speaks. */
export interface TestClient<V extends string = typeof PROTOCOL_VERSION> {
  /** Calls a tool, answering its input requests with `answers`, and resolves with the complete result. */
  callTool (
    name: string,
    args?: JsonObject,
    answers?: Answers,
    options?: CallOptions
  ): Promise<Outcome<CallToolResult, V>>
  /** Gets a prompt, answering its input requests with `answers`. */
  getPrompt (
    name: string,
    args?: Record<string, string>,
    answers?: Answers,
    options?: CallOptions
  ): Promise<Outcome<GetPromptResult, V>>
  /** Reads a resource, answering its input requests with `answers`. */
  readResource (uri: string, answers?: Answers, options?: CallOptions): Promise<Outcome<ReadResourceResult, V>>
  /** Every tool of `tools/list`, following its pages. */
  listTools (options?: CallOptions): Promise<ListedTool[]>
  /**
   * One request, one round trip: the result as the server sent it (`input_required` included). In
   * a 2025 revision, one request of the session: a request the server sends on its stream fails it.
   */
  request (method: string, params?: JsonObject, options?: CallOptions): Promise<JsonObject>
}

// What a header carries unchanged: surrounding whitespace would be trimmed, a sentinel-shaped value decoded.
const PLAIN_HEADER = /^(?:[\x21-\x7e](?:[\t\x20-\x7e]*[\x21-\x7e])?)?$/

export function headerValue (name: string): string {
  const plain = PLAIN_HEADER.test(name) && !(name.startsWith('=?base64?') && name.endsWith('?='))
  return plain ? name : `=?base64?${Buffer.from(name).toString('base64')}?=`
}

class Client implements TestClient<string> {
  readonly #transport: Transport
  readonly #options: TestClientOptions
  readonly #maxRounds: number
  readonly #session: LegacySession | undefined
  readonly #capabilities: ClientCapabilities
  #nextId = 1

  constructor (transport: Transport, options: TestClientOptions) {
    this.#transport = transport
    this.#options = options
    const capabilities = options.capabilities ?? DEFAULTS.capabilities
    this.#capabilities = options.tasks === true
      ? { ...capabilities, extensions: { ...capabilities.extensions, [TASKS]: {} } }
      : capabilities
    this.#maxRounds = options.maxRounds ?? 10
    const version = options.protocolVersion
    if (isLegacyVersion(version)) this.#session = new LegacySession(transport, options, version, DEFAULTS)
  }

  callTool (
    name: string,
    args?: JsonObject,
    answers?: Answers,
    options?: CallOptions
  ): Promise<Outcome<CallToolResult, string>> {
    return this.#interactive('tools/call', args === undefined ? { name } : { name, arguments: args }, answers, options)
  }

  getPrompt (
    name: string,
    args?: Record<string, string>,
    answers?: Answers,
    options?: CallOptions
  ): Promise<Outcome<GetPromptResult, string>> {
    return this.#interactive('prompts/get', args === undefined ? { name } : { name, arguments: args }, answers, options)
  }

  readResource (uri: string, answers?: Answers, options?: CallOptions): Promise<Outcome<ReadResourceResult, string>> {
    return this.#interactive('resources/read', { uri }, answers, options)
  }

  async listTools (options?: CallOptions): Promise<ListedTool[]> {
    const tools: ListedTool[] = []
    let cursor: unknown
    let pages = 0
    do {
      // A server that hands out cursors forever is cut off.
      if (++pages > MAX_PAGES) throw new Error(`tools/list still had more after ${MAX_PAGES} pages`)
      const result = await this.request('tools/list', cursor === undefined ? {} : { cursor }, options)
      tools.push(...result.tools as ListedTool[])
      cursor = result.nextCursor
    } while (typeof cursor === 'string')
    return tools
  }

  async request (method: string, params: JsonObject = {}, options: CallOptions = {}): Promise<JsonObject> {
    if (this.#session !== undefined) {
      return (await this.#session.call<JsonObject>(method, params, answerFunction(undefined), options, method)).result
    }
    return resultOf(await this.#exchange(method, params, options, []), [])
  }

  #interactive<R> (
    method: string,
    target: JsonObject,
    given: Answers | undefined,
    options: CallOptions = {}
  ): Promise<Outcome<R, string>> {
    const answer = answerFunction(given)
    const label = `${method} ${JSON.stringify(target.name ?? target.uri)}`
    // The result's type depends on the version, which the public TestClient<V> carries.
    const outcome = this.#session !== undefined
      ? this.#session.call<R>(method, target, answer, options, label)
      : this.#rounds<R>(method, target, answer, options, label)
    return outcome as Promise<unknown> as Promise<Outcome<R, string>>
  }

  async #rounds<R> (
    method: string,
    target: JsonObject,
    answer: AnswerFunction,
    options: CallOptions,
    label: string
  ): Promise<Outcome<R>> {
    const rounds: Round[] = []
    const notifications: Notification[] = []
    let retry: JsonObject = {}
    for (;;) {
      const result = resultOf(await this.#exchange(method, { ...target, ...retry }, options, notifications), rounds)
      if (result.resultType === 'complete') {
        return { result: result as Outcome<R>['result'], rounds, roundTrips: rounds.length + 1, notifications }
      }
      if (result.resultType === 'task' && typeof result.taskId === 'string') {
        return this.#follow<R>(result, answer, options, label, rounds, notifications)
      }
      if (result.resultType !== 'input_required') {
        throw new Error(`${method} answered a result with resultType ${JSON.stringify(result.resultType)}; a 2026-07-28 server sends "complete", "input_required" or, to a client with the tasks extension, "task"`)
      }
      const inputResponses = await this.#answer(result, answer, rounds, label)
      retry = {}
      if (Object.keys(inputResponses).length > 0) retry.inputResponses = inputResponses
      if (result.requestState !== undefined) retry.requestState = result.requestState
    }
  }

  async #answer (
    asking: JsonObject,
    answer: AnswerFunction,
    rounds: Round[],
    label: string
  ): Promise<Record<string, InputResponse>> {
    if (rounds.length === this.#maxRounds) {
      throw new Error(`${label} still needs input after ${this.#maxRounds} rounds (maxRounds)`)
    }
    const inputRequests = (asking.inputRequests ?? {}) as Record<string, InputRequest>
    this.#options.onRound?.(rounds.length + 1, inputRequests)
    const inputResponses: Record<string, InputResponse> = {}
    for (const [key, request] of Object.entries(inputRequests)) {
      inputResponses[key] = await answer(viewOf(key, request))
    }
    rounds.push({ inputRequests, inputResponses })
    return inputResponses
  }

  async #follow<R> (
    created: JsonObject,
    answer: AnswerFunction,
    options: CallOptions,
    label: string,
    rounds: Round[],
    notifications: Notification[]
  ): Promise<Outcome<R>> {
    const o = this.#options
    const taskId = created.taskId as string
    const timeout = o.taskTimeout ?? 60_000
    const deadline = Date.now() + timeout
    let roundTrips = rounds.length + 1
    let task = created
    for (;;) {
      const interval = o.taskPollInterval ?? (typeof task.pollIntervalMs === 'number' ? task.pollIntervalMs : 0)
      if (Date.now() + interval > deadline) {
        throw new Error(`${label}: task ${taskId} is still ${String(task.status)} after ${timeout} ms (taskTimeout)`)
      }
      await sleep(interval)
      task = resultOf(await this.#exchange('tasks/get', { taskId }, options, notifications), rounds)
      roundTrips++
      o.onTask?.(task)
      switch (task.status) {
        case 'completed':
          return { result: task.result as Outcome<R>['result'], rounds, roundTrips, notifications, taskId }
        case 'failed': {
          const error = isObject(task.error) ? task.error : {}
          const said = typeof error.message === 'string' ? error.message : 'the server gave no error'
          return fail(`${label}: task ${taskId} failed: ${said}`, { code: error.code as number | undefined, data: error.data, status: 200, rounds })
        }
        case 'cancelled':
          throw new Error(`${label}: task ${taskId} was cancelled`)
        case 'input_required': {
          const inputResponses = await this.#answer(task, answer, rounds, label)
          resultOf(await this.#exchange('tasks/update', { taskId, inputResponses }, options, notifications), rounds)
          roundTrips++
          break
        }
        case 'working':
          break
        default:
          throw new Error(`${label}: task ${taskId} has status ${JSON.stringify(task.status)}, which the tasks extension does not know`)
      }
    }
  }

  async #exchange (
    method: string,
    params: JsonObject,
    options: CallOptions,
    notifications: Notification[]
  ): Promise<ReadReply> {
    const o = this.#options
    const version = o.protocolVersion ?? PROTOCOL_VERSION
    const headers: Record<string, string> = {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': version,
      'mcp-method': method,
    }
    const name = params[NAME_FIELDS[method]]
    if (typeof name === 'string') headers['mcp-name'] = headerValue(name)
    const meta = {
      'io.modelcontextprotocol/protocolVersion': version,
      'io.modelcontextprotocol/clientCapabilities': this.#capabilities,
      'io.modelcontextprotocol/clientInfo': o.clientInfo ?? DEFAULTS.clientInfo,
      ...options.meta,
    }
    const body = JSON.stringify({ jsonrpc: '2.0', id: this.#nextId++, method, params: { ...params, _meta: meta } })
    const raw = await this.#transport(headersOf(headers, o.token, o.headers, callHeaders(options)), body)
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

function roundRobin (transports: Transport[]): Transport {
  let next = 0
  return (headers, body) => {
    const transport = transports[next]
    next = (next + 1) % transports.length
    return transport(headers, body)
  }
}

/**
 * A client of an MCP 2026-07-28 server: a Fastify app (through `inject`, no port) or the URL of its endpoint (over
 * HTTP, JSON and event-stream replies alike). Given several apps or URLs, or a mix, it sends each HTTP request to the
 * next in turn, so the rounds of one call land on different nodes as behind a round-robin load balancer; the apps
 * must share their `requestState` keys. `createTestClient([appA, appB])`.
 *
 * With `protocolVersion: '2025-11-25'` (or `2025-06-18`, `2025-03-26`) it is a client of that revision instead, which
 * opens a session and answers the requests the server sends on a call's stream (see
 * `TestClientOptions.protocolVersion`). That works through `inject` too, its reply read as it is written (Fastify's
 * light-my-request 6.2 or later); several nodes must share a bus that carries the answers between them.
 */
export function createTestClient<V extends string = typeof PROTOCOL_VERSION> (
  target: TestTarget | readonly TestTarget[],
  options: TestClientOptions<V> = {}
): TestClient<V> {
  const targets: readonly TestTarget[] = Array.isArray(target) ? target : [target as TestTarget]
  if (targets.length === 0) throw new TypeError('createTestClient needs at least one Fastify app or URL')
  return new Client(roundRobin(targets.map((one) => transportOf(one, options.path ?? '/mcp'))), options) as unknown as TestClient<V>
}
