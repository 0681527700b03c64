import type { FastifyReply, FastifyRequest } from 'fastify'
import type { ElicitationPolicy } from '../elicitation/policy.js'
import { CallState, eitherAborts, type NotificationStream, type Principal } from '../call.js'
import { MAX_TIMER_MS, noop } from '../check.js'
import { McpContext } from '../context.js'
import { ErrorCode, McpError, invalidRequest } from '../errors.js'
import { LIST_CHANGED, type Subscriptions } from '../features/subscriptions.js'
import type { Exchange } from './exchange.js'
import type { SessionHub } from './hub.js'
import type { Session, SessionCodec } from './session.js'
import { legacyError, legacyResult } from './shape.js'
import type { StreamDelivery } from './stream-delivery.js'
import type { Dispatcher } from '../protocol/dispatch.js'
import { batchRefused, checkClientInfo, checkLegacyMeta, checkLegacyVersion, header, idOf, readMessage, type Message } from '../protocol/envelope.js'
import { LEGACY_VERSIONS, type ClientState, type JsonObject } from '../protocol/wire.js'
import { UNWATCHED } from '../transport/observers.js'
import { ReplyChannel, type ChannelSettings } from '../transport/channel.js'
import type { Lifecycle } from '../transport/lifecycle.js'
import type { LegacyEra, Prepared, Respond } from '../transport/era.js'
import { principalOf } from '../transport/principal.js'
import type { FormAnswers } from '../elicitation/answers.js'

function sessionNotFound (): McpError {
  return new McpError(ErrorCode.InvalidRequest, 'Session not found: it expired, was not issued by this server, or belongs to another caller; start a new session with initialize', { statusCode: 404 })
}

function samePrincipal (a: Principal, b: Principal): boolean {
  return a.value === b.value && a.state === b.state
}

/** The one revision whose POST may be a batch: 2025-06-18 removed them. */
const BATCH_VERSION = '2025-03-26'

const NOT_AWAITED = Object.freeze({
  jsonrpc: '2.0',
  error: { code: ErrorCode.InvalidRequest, message: 'No request of this session waits for this answer: it was answered, timed out, or its server is gone' },
})

/** One batch request's stream on the batch's reply; its own signal lets `notifications/cancelled` end it alone. */
class BatchStream implements NotificationStream {
  readonly #channel: ReplyChannel
  readonly #cancel = new AbortController()
  #signal: AbortSignal | undefined
  #over = false

  constructor (channel: ReplyChannel) {
    this.#channel = channel
  }

  notify (message: object): boolean {
    return !this.#over && this.#channel.notify(message)
  }

  get signal (): AbortSignal {
    return (this.#signal ??= eitherAborts(this.#channel.signal, this.#cancel.signal))
  }

  get aborted (): boolean {
    return this.#channel.aborted || this.#cancel.signal.aborted
  }

  handlerStarted (): void {
    this.#channel.handlerStarted()
  }

  abort (reason: string): void {
    this.#cancel.abort(new DOMException(reason, 'AbortError'))
  }

  end (): void {
    this.#over = true
  }
}

const DEFAULT_LEGACY_LOG_LEVEL = 'info'

interface LegacyParts {
  dispatcher: Dispatcher<McpContext>
  sessions: SessionCodec
  hub: SessionHub
  exchange: Exchange
  delivery: StreamDelivery
  forms: FormAnswers
  subscriptions: Subscriptions
  lifecycle: Lifecycle
  limits: ChannelSettings
  batchSize: number
  principal: ((request: FastifyRequest) => unknown) | undefined
  elicitation: ElicitationPolicy
}

export class LegacyTransport implements LegacyEra {
  readonly dispatcher: Dispatcher<McpContext>
  readonly #sessions: SessionCodec
  readonly #hub: SessionHub
  readonly #exchange: Exchange
  readonly #subscriptions: Subscriptions
  readonly #lifecycle: Lifecycle
  readonly #limits: ChannelSettings
  readonly #batchSize: number
  readonly #principal: ((request: FastifyRequest) => unknown) | undefined
  readonly #delivery: StreamDelivery
  readonly #forms: FormAnswers
  readonly #elicitation: ElicitationPolicy

  constructor (parts: LegacyParts) {
    this.dispatcher = parts.dispatcher
    this.#elicitation = parts.elicitation
    this.#sessions = parts.sessions
    this.#hub = parts.hub
    this.#exchange = parts.exchange
    this.#subscriptions = parts.subscriptions
    this.#lifecycle = parts.lifecycle
    this.#limits = parts.limits
    this.#batchSize = parts.batchSize
    this.#principal = parts.principal
    this.#delivery = parts.delivery
    this.#forms = parts.forms
  }

  #session (request: FastifyRequest, principal: Principal, headerVersion: string | undefined): Session | undefined {
    const id = header(request.headers, 'mcp-session-id')
    if (id === undefined) return undefined
    const session = this.#sessions.open(id)
    if (session === undefined || !samePrincipal(session.principal, principal)) throw sessionNotFound()
    if (headerVersion !== undefined && headerVersion !== session.version) {
      throw invalidRequest(`The MCP-Protocol-Version header (${headerVersion.slice(0, 40)}) is not the version of this session (${session.version})`)
    }
    return session
  }

  #client (version: string, session: Session | undefined): ClientState {
    if (session === undefined) {
      return { protocolVersion: version, capabilities: {}, info: undefined, logLevel: DEFAULT_LEGACY_LOG_LEVEL }
    }
    return this.#elicitation.apply({
      protocolVersion: session.version,
      capabilities: session.capabilities,
      info: session.info,
      logLevel: this.#hub.levelOf(session.id) ?? DEFAULT_LEGACY_LOG_LEVEL,
      session: session.id,
      sessionExpiresAt: session.expiresAt,
    })
  }

  /** A request becomes a call; a notification or answer gets 202 (an answer's promise settles once that is sent). */
  prepare (request: FastifyRequest, reply: FastifyReply, message: Message): Prepared | undefined | Promise<void> {
    const principal = principalOf(request, this.#principal)
    const headerVersion = header(request.headers, 'mcp-protocol-version')
    if (message.kind === 'request') checkLegacyMeta(message.params)
    if (message.kind === 'request' && message.method === 'initialize') {
      if (headerVersion !== undefined && headerVersion !== '') checkLegacyVersion(message.params, headerVersion, 'the MCP-Protocol-Version header')
      const requested = message.params.protocolVersion
      // The spec's negotiation: the version asked for when served, else the newest served.
      const version = typeof requested === 'string' && LEGACY_VERSIONS.includes(requested) ? requested : LEGACY_VERSIONS[0]
      checkClientInfo(message.params.clientInfo, 'params.clientInfo')
      const session = this.#sessions.create(principal, version, message.params.capabilities, message.params.clientInfo)
      const client = this.#client(version, session)
      return this.#call(request, reply, message, client, principal, this.#sessions.seal(session))
    }
    const session = this.#session(request, principal, headerVersion)
    if (message.kind === 'notification') {
      this.#notified(message, session)
      reply.code(202).send()
      return undefined
    }
    if (message.kind === 'response') return this.#answer(reply, message, session, principal)
    // A legacy request without a session came with a 2025 version header: that is how it was told apart.
    const version = session?.version ?? headerVersion as string
    checkLegacyVersion(message.params, version, headerVersion === undefined ? 'the session\'s version' : 'the MCP-Protocol-Version header')
    return this.#call(request, reply, message, this.#client(version, session), principal, undefined)
  }

  /** A malformed message gets its error in its place; 202 when nothing needs an answer (400 if no request). */
  batch (request: FastifyRequest, reply: FastifyReply, body: unknown[], respond: Respond): Promise<void> {
    const headerVersion = header(request.headers, 'mcp-protocol-version')
    if (headerVersion !== undefined && headerVersion !== BATCH_VERSION) throw batchRefused()
    const principal = principalOf(request, this.#principal)
    const session = this.#session(request, principal, headerVersion)
    const version = session?.version ?? headerVersion
    if (version !== BATCH_VERSION) throw batchRefused()
    if (body.length === 0) throw invalidRequest('A batch must hold at least one message')
    if (body.length > this.#batchSize) {
      throw invalidRequest(`A batch may hold at most ${this.#batchSize} messages (limits.batchSize); this one holds ${body.length}`)
    }
    const client = this.#client(version, session)
    // What each message is answered with, in order: a response, an error, or nothing (a notification, a taken answer).
    const slots: Array<object | Promise<object | undefined>> = []
    let channel: ReplyChannel | undefined
    for (const element of body) {
      let message: Message
      try {
        message = readMessage(element)
        if (message.kind === 'request') {
          checkLegacyMeta(message.params)
          if (message.method === 'initialize') throw invalidRequest('initialize must not be part of a batch: send it alone')
          checkLegacyVersion(message.params, version, headerVersion === undefined ? 'the session\'s version' : 'the MCP-Protocol-Version header')
        }
      } catch (error) {
        slots.push({ jsonrpc: '2.0', id: idOf(element), error: (error as McpError).toJSON() })
        continue
      }
      if (message.kind === 'notification') this.#notified(message, session)
      else if (message.kind === 'response') slots.push(this.#handOver(message, session, principal))
      else {
        channel ??= new ReplyChannel(reply, null, this.#lifecycle, this.#limits, request.log)
        slots.push(respond(this.#member(request, message, client, principal, channel)))
      }
    }
    return Promise.all(slots).then((settled) => {
      const responses = settled.filter((response) => response !== undefined)
      if (channel !== undefined) channel.finish(responses, 200)
      else if (responses.length === 0) reply.code(202).send()
      else reply.code(400).send(responses)
    })
  }

  /** `notifications/cancelled` reaches the request it names, wherever it runs. */
  #notified (message: Message & { kind: 'notification' }, session: Session | undefined): void {
    const requestId = message.params.requestId
    if (message.method === 'notifications/cancelled' && session !== undefined && (typeof requestId === 'string' || typeof requestId === 'number')) {
      this.#hub.cancel(session.id, requestId)
    }
  }

  #member (request: FastifyRequest, message: Message & { kind: 'request' }, client: ClientState, principal: Principal, channel: ReplyChannel): Prepared {
    const stream = new BatchStream(channel)
    const ctx = new McpContext(new CallState(request, message, client, principal, stream, this.#delivery, this.#forms))
    const forget = client.session === undefined
      ? noop
      : this.#hub.addRequest(client.session, ctx.id, () => stream.abort('the client cancelled the request'))
    const untrack = (): void => {
      forget()
      stream.end()
    }
    return { ctx, channel, era: this, sessionId: undefined, untrack, watch: UNWATCHED }
  }

  #call (request: FastifyRequest, reply: FastifyReply, message: Message & { kind: 'request' }, client: ClientState, principal: Principal,
    sessionId: string | undefined): Prepared {
    const channel = new ReplyChannel(reply, message.id, this.#lifecycle, this.#limits, request.log)
    const ctx = new McpContext(new CallState(request, message, client, principal, channel, this.#delivery, this.#forms))
    const untrack = client.session === undefined
      ? noop
      : this.#hub.addRequest(client.session, ctx.id, () => channel.abort('the client cancelled the request'))
    return { ctx, channel, era: this, sessionId, untrack, watch: UNWATCHED }
  }

  result (call: Prepared, result: JsonObject, reply: FastifyReply): JsonObject {
    if (call.sessionId !== undefined) reply.header('mcp-session-id', call.sessionId)
    return legacyResult(call.ctx.method, result)
  }

  error (call: Prepared, error: McpError): McpError {
    return legacyError(error)
  }

  async #answer (reply: FastifyReply, message: Message & { kind: 'response' }, session: Session | undefined, principal: Principal): Promise<void> {
    const refused = await this.#handOver(message, session, principal)
    if (refused === undefined) reply.code(202).send()
    else reply.code(400).send(refused)
  }

  /** Hands a client's answer to its waiting request, wherever that runs: undefined once taken, else the error. */
  async #handOver (message: Message & { kind: 'response' }, session: Session | undefined, principal: Principal): Promise<object | undefined> {
    const receipt = await this.#exchange.answer(message, { session: session?.id ?? '', principal: principal.value })
    return receipt === 'accepted' ? undefined : NOT_AWAITED
  }

  stream (request: FastifyRequest, reply: FastifyReply): void {
    const channel = new ReplyChannel(reply, 0, this.#lifecycle, this.#limits, request.log)
    const principal = principalOf(request, this.#principal)
    // The route serves GET here only with a session id, so there is a session or a 404.
    const session = this.#session(request, principal, header(request.headers, 'mcp-protocol-version')) as Session
    const accept = header(request.headers, 'accept') ?? ''
    if (!accept.includes('text/event-stream')) throw invalidRequest('A GET stream needs Accept: text/event-stream', 406)
    const ctx = new McpContext(new CallState(request, { id: 0, method: 'GET', params: {} },
      this.#client(session.version, session), principal, channel, this.#delivery, this.#forms))
    const { listener, ended } = this.#subscriptions.stream(ctx, { lists: new Set(['tools', 'prompts', 'resources']), uris: new Set() }, (event) => event.kind === 'resource'
      ? { jsonrpc: '2.0', method: 'notifications/resources/updated', params: { uri: event.uri } }
      : { jsonrpc: '2.0', method: LIST_CHANGED[event.kind] }, channel)
    const forget = this.#hub.addStream(session.id, listener)
    channel.open()
    // Past its expiry the session's requests get 404: its stream ends then too (a timer holds at most 2^31 - 1 ms).
    const expiry = setTimeout(listener.end, Math.min(Math.max(0, session.expiresAt - Date.now()), MAX_TIMER_MS))
    expiry.unref()
    ended.then(() => {
      clearTimeout(expiry)
      forget()
      channel.end()
    })
  }
}
