import { noop } from '../check.js'
import type { ClientCapabilities, Implementation, InputRequest, JsonObject } from '../protocol/wire.js'
import { describe, viewOf, type AnswerFunction, type InputRequestView, type InputResponse } from './answers.js'
import {
  callHeaders, type CallOptions, type CompleteResult, type LegacyProtocolVersion, type Notification, type Outcome,
  type Round, type TestClientOptions,
} from './types.js'
import { McpClientError, isObject, resultOf } from './errors.js'
import { headersOf, readReply, type RawReply, type ReadReply, type ServerRequest, type Transport } from './transport.js'

/** The 2025 wire carries no input key, so requests are named as mocapi names them by default. */
const PREFIX: Record<string, string> = { 'elicitation/create': 'elicit', 'sampling/createMessage': 'sample', 'roots/list': 'roots' }

function refusal (read: ReadReply, what: string, rounds: Round[]): McpClientError | undefined {
  if (read.status < 300) return undefined
  const error = isObject(read.message) && isObject(read.message.error) ? read.message.error : undefined
  const said = typeof error?.message === 'string' ? error.message : read.text.slice(0, 200)
  return new McpClientError(`the server refused ${what}: HTTP ${read.status}${said === '' ? '' : `: ${said}`}`,
    { code: typeof error?.code === 'number' ? error.code : undefined, data: error?.data, status: read.status, rounds })
}

interface OpenRound {
  number: number
  round: Round
  queue: Array<{ id: string | number, view: InputRequestView }>
  /** Once no answer is left unsent, the next request opens a new round. */
  unsent: number
}

type Post = (message: object) => Promise<RawReply>

/** A round is the requests that arrive before the client has sent every answer of the one before. */
class LegacyCall {
  readonly rounds: Round[] = []
  readonly notifications: Notification[] = []
  roundTrips = 1
  readonly #post: Post
  readonly #answer: AnswerFunction
  readonly #options: TestClientOptions
  readonly #label: string
  readonly #maxRounds: number
  readonly #posts: Array<Promise<void>> = []
  #asked = 0
  #open: OpenRound | undefined
  #reply: RawReply | undefined
  #failure: { error: unknown } | undefined

  constructor (post: Post, answer: AnswerFunction, options: TestClientOptions, label: string) {
    this.#post = post
    this.#answer = answer
    this.#options = options
    this.#label = label
    this.#maxRounds = options.maxRounds ?? 10
  }

  /** A failure aborts the reply: its requests, and so the failures, come after it. */
  attach (reply: RawReply): void {
    this.#reply = reply
  }

  notify (message: Record<string, unknown>): void {
    this.notifications.push(message as Notification)
    this.#options.onNotification?.(message as Notification)
  }

  request (request: ServerRequest): void {
    if (this.#failure !== undefined) return
    if (request.method === 'ping') return this.#send(request.id, {}, 'the answer to ping')
    let view: InputRequestView
    try {
      view = viewOf(`${PREFIX[request.method] ?? 'request'}-${++this.#asked}`, { method: request.method, params: request.params } as InputRequest)
    } catch (error) {
      return this.fail(error)
    }
    let open = this.#open
    if (open === undefined || open.unsent === 0) {
      if (this.rounds.length === this.#maxRounds) return this.fail(new Error(`${this.#label} still needs input after ${this.#maxRounds} rounds (maxRounds)`))
      open = { number: this.rounds.length + 1, round: { inputRequests: {}, inputResponses: {} }, queue: [], unsent: 0 }
      this.#open = open
      this.rounds.push(open.round)
      // The round's other requests were written with this one: they are read before the answers start.
      setImmediate((round: OpenRound) => { this.#answerRound(round) }, open)
    }
    open.round.inputRequests[view.key] = view.request
    open.queue.push({ id: request.id, view })
    open.unsent++
  }

  async #answerRound (open: OpenRound): Promise<void> {
    try {
      this.#options.onRound?.(open.number, open.round.inputRequests)
      while (open.queue.length > 0 && this.#failure === undefined) {
        const { id, view } = open.queue.shift() as OpenRound['queue'][number]
        const response: InputResponse = await this.#answer(view)
        if (this.#failure !== undefined) return
        open.round.inputResponses[view.key] = response
        this.#send(id, response, `the answer to ${describe(view)}`)
        open.unsent--
      }
    } catch (error) {
      this.fail(error)
    }
  }

  #send (id: string | number, result: object, what: string): void {
    this.roundTrips++
    this.#posts.push(this.#post({ jsonrpc: '2.0', id, result }).then(async (raw) => {
      const error = refusal(await readReply(raw, noop), what, this.rounds)
      if (error !== undefined) this.fail(error)
    }, (error: unknown) => this.fail(error)))
  }

  /** Only the first failure counts; it closes the reply, as a client that gives up does. */
  fail (error: unknown): void {
    if (this.#failure !== undefined) return
    this.#failure = { error }
    this.#reply?.abort()
  }

  async settle (): Promise<void> {
    await Promise.all(this.#posts)
    if (this.#failure !== undefined) throw this.#failure.error
  }
}

export interface ClientDefaults {
  capabilities: ClientCapabilities
  clientInfo: Implementation
}

export class LegacySession {
  readonly #transport: Transport
  readonly #options: TestClientOptions
  readonly #requested: LegacyProtocolVersion
  readonly #defaults: ClientDefaults
  #version: string
  #id: string | undefined
  #opened: Promise<void> | undefined
  #nextId = 1

  constructor (
    transport: Transport,
    options: TestClientOptions,
    version: LegacyProtocolVersion,
    defaults: ClientDefaults
  ) {
    this.#transport = transport
    this.#options = options
    this.#requested = version
    this.#version = version
    this.#defaults = defaults
  }

  #open (): Promise<void> {
    this.#opened ??= this.#initialize().catch((error: unknown) => {
      this.#opened = undefined
      throw error
    })
    return this.#opened
  }

  async #initialize (): Promise<void> {
    const o = this.#options
    const params = {
      protocolVersion: this.#requested,
      capabilities: o.capabilities ?? this.#defaults.capabilities,
      clientInfo: o.clientInfo ?? this.#defaults.clientInfo
    }
    const reply = await this.#transport(this.#headers({}, false), JSON.stringify({ jsonrpc: '2.0', id: this.#nextId++, method: 'initialize', params }))
    const result = resultOf(await readReply(reply, noop), [])
    // The server's choice among the versions it serves, which every later request names.
    if (typeof result.protocolVersion === 'string') this.#version = result.protocolVersion
    this.#id = reply.sessionId
    const ack = await this.#transport(this.#headers({}, true), JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }))
    const error = refusal(await readReply(ack, noop), 'notifications/initialized', [])
    if (error !== undefined) throw error
  }

  #headers (call: CallOptions, session: boolean): Record<string, string> {
    const base: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
    if (session) {
      base['mcp-protocol-version'] = this.#version
      if (this.#id !== undefined) base['mcp-session-id'] = this.#id
    }
    return headersOf(base, this.#options.token, this.#options.headers, callHeaders(call))
  }

  async call<R> (
    method: string,
    params: JsonObject,
    answer: AnswerFunction,
    options: CallOptions,
    label: string
  ): Promise<Outcome<R, LegacyProtocolVersion>> {
    await this.#open()
    const call = new LegacyCall((message) => this.#transport(this.#headers(options, true), JSON.stringify(message)),
      answer, this.#options, label)
    const body = { jsonrpc: '2.0', id: this.#nextId++, method, params: options.meta === undefined ? params : { ...params, _meta: options.meta } }
    const reply = await this.#transport(this.#headers(options, true), JSON.stringify(body))
    call.attach(reply)
    let read: ReadReply | undefined
    try {
      read = await readReply(reply, (message) => call.notify(message), (request) => call.request(request))
    } catch (error) {
      call.fail(error)
    }
    await call.settle()
    const result = resultOf(read as ReadReply, call.rounds) as CompleteResult<R, LegacyProtocolVersion>
    return { result, rounds: call.rounds, roundTrips: call.roundTrips, notifications: call.notifications }
  }
}
