/**
 * The 2025-era side of the endpoint: sessions sealed into `Mcp-Session-Id`, `initialize`, the
 * notifications and answers clients POST, and the GET stream. Everything below the transport
 * (dispatch, features, the replay engine) is shared with 2026-07-28.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { CallState, McpContext, type ClientState, type Principal } from '../context.js'
import { ErrorCode, McpError, invalidRequest } from '../errors.js'
import { LIST_CHANGED, type Subscriptions } from '../features/subscriptions.js'
import type { Exchange } from '../legacy/exchange.js'
import type { SessionHub } from '../legacy/hub.js'
import type { Session, SessionCodec } from '../legacy/session.js'
import { legacyError, legacyResult } from '../legacy/shape.js'
import { StreamDelivery } from '../legacy/stream-delivery.js'
import type { Dispatcher } from '../protocol/dispatch.js'
import { checkLegacyMeta, checkLegacyVersion, header, type Message } from '../protocol/envelope.js'
import { LEGACY_VERSIONS, type JsonObject } from '../protocol/wire.js'
import { UNWATCHED } from './calls.js'
import { ReplyChannel, type ChannelLimits, type Lifecycle } from './channel.js'
import type { Call, Era } from './era.js'
import { principalOf } from './principal.js'

const MAX_TIMER_MS = 2 ** 31 - 1

/** The answer to a session id that is not a live session of this caller: the client must start a new one. */
function sessionNotFound (): McpError {
  return new McpError(ErrorCode.InvalidRequest, 'Session not found: it expired, was not issued by this server, or belongs to another caller; start a new session with initialize', { statusCode: 404 })
}

function samePrincipal (a: Principal, b: Principal): boolean {
  return a.value === b.value && a.state === b.state
}

/** The log level a 2025-era client gets notifications from, unless its session set one. */
const DEFAULT_LEGACY_LOG_LEVEL = 'info'

function noop (): void {}

export interface LegacyParts {
  dispatcher: Dispatcher
  sessions: SessionCodec
  hub: SessionHub
  exchange: Exchange
  subscriptions: Subscriptions
  lifecycle: Lifecycle
  limits: ChannelLimits
  principal: ((request: FastifyRequest) => unknown) | undefined
}

export class LegacyTransport implements Era {
  readonly dispatcher: Dispatcher
  readonly #sessions: SessionCodec
  readonly #hub: SessionHub
  readonly #exchange: Exchange
  readonly #subscriptions: Subscriptions
  readonly #lifecycle: Lifecycle
  readonly #limits: ChannelLimits
  readonly #principal: ((request: FastifyRequest) => unknown) | undefined
  readonly #delivery: StreamDelivery

  constructor (parts: LegacyParts) {
    this.dispatcher = parts.dispatcher
    this.#sessions = parts.sessions
    this.#hub = parts.hub
    this.#exchange = parts.exchange
    this.#subscriptions = parts.subscriptions
    this.#lifecycle = parts.lifecycle
    this.#limits = parts.limits
    this.#principal = parts.principal
    this.#delivery = new StreamDelivery(parts.exchange)
  }

  /**
   * The session a request names, checked against its caller and its version header: undefined
   * when it names none; a 404 when the id is not a live session of this caller.
   */
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
    if (session === undefined) return { protocolVersion: version, capabilities: {}, info: undefined, logLevel: DEFAULT_LEGACY_LOG_LEVEL }
    return {
      protocolVersion: session.version,
      capabilities: session.capabilities,
      info: session.info,
      logLevel: this.#hub.levelOf(session.id) ?? DEFAULT_LEGACY_LOG_LEVEL,
      session: session.id,
      sessionExpiresAt: session.expiresAt,
    }
  }

  /**
   * Reads a 2025-era POST: a request becomes a call; a notification or an answer is taken and
   * answered 202. Only an answer waits, for its delivery: it gives a promise that settles once its
   * reply is sent.
   */
  prepare (request: FastifyRequest, reply: FastifyReply, message: Message): Call | undefined | Promise<void> {
    const principal = principalOf(request, this.#principal)
    const headerVersion = header(request.headers, 'mcp-protocol-version')
    if (message.kind === 'request') checkLegacyMeta(message.params)
    if (message.kind === 'request' && message.method === 'initialize') {
      if (headerVersion !== undefined && headerVersion !== '') checkLegacyVersion(message.params, headerVersion, 'the MCP-Protocol-Version header')
      const requested = message.params.protocolVersion
      // The spec's negotiation: the version asked for when served, else the newest served.
      const version = typeof requested === 'string' && LEGACY_VERSIONS.includes(requested) ? requested : LEGACY_VERSIONS[0]
      const session = this.#sessions.create(principal, version, message.params.capabilities, message.params.clientInfo)
      return this.#call(request, reply, message, this.#client(version, session), principal, this.#sessions.seal(session))
    }
    const session = this.#session(request, principal, headerVersion)
    if (message.kind === 'notification') {
      const requestId = message.params.requestId
      if (message.method === 'notifications/cancelled' && session !== undefined && (typeof requestId === 'string' || typeof requestId === 'number')) {
        this.#hub.cancel(session.id, requestId)
      }
      reply.code(202).send()
      return undefined
    }
    if (message.kind === 'response') return this.#answer(reply, message, session, principal)
    // A legacy request without a session came with a 2025 version header: that is how it was told apart.
    const version = session?.version ?? headerVersion as string
    checkLegacyVersion(message.params, version, headerVersion === undefined ? 'the session\'s version' : 'the MCP-Protocol-Version header')
    return this.#call(request, reply, message, this.#client(version, session), principal, undefined)
  }

  /** A call of a request; one of a session can be cancelled by `notifications/cancelled` while it runs here. */
  #call (request: FastifyRequest, reply: FastifyReply, message: Message & { kind: 'request' }, client: ClientState, principal: Principal,
    sessionId: string | undefined): Call {
    const channel = new ReplyChannel(reply, message.id, this.#lifecycle, this.#limits, request.log)
    const ctx = new McpContext(request, message, new CallState(client, principal, channel, this.#delivery))
    const untrack = client.session === undefined
      ? noop
      : this.#hub.addRequest(client.session, ctx.id, () => channel.abort('the client cancelled the request'))
    return { ctx, channel, era: this, sessionId, untrack, watch: UNWATCHED }
  }

  /** A result in the shape of the 2025 revisions; an `initialize` sends back the session it opened. */
  result (call: Call, result: JsonObject, reply: FastifyReply): JsonObject {
    if (call.sessionId !== undefined) reply.header('mcp-session-id', call.sessionId)
    return legacyResult(call.ctx.method, result)
  }

  error (call: Call, error: McpError): McpError {
    return legacyError(call.ctx.method, error)
  }

  /** Delivers a client's answer to the request of its session that waits for it, wherever that runs. */
  async #answer (reply: FastifyReply, message: Message & { kind: 'response' }, session: Session | undefined, principal: Principal): Promise<void> {
    const delivery = await this.#exchange.answer(message, { session: session?.id ?? '', principal: principal.value })
    if (delivery === 'accepted') reply.code(202).send()
    else {
      reply.code(400).send({
        jsonrpc: '2.0',
        error: { code: ErrorCode.InvalidRequest, message: 'No request of this session waits for this answer: it was answered, timed out, or its server is gone' },
      })
    }
  }

  /**
   * A GET with a session: a stream of list changes and of updates to the resources the session
   * subscribed to, from this node, until the client leaves, the session expires or the server closes.
   */
  stream (request: FastifyRequest, reply: FastifyReply): void {
    const channel = new ReplyChannel(reply, 0, this.#lifecycle, this.#limits, request.log)
    const principal = principalOf(request, this.#principal)
    // The route serves GET here only with a session id, so there is a session or a 404.
    const session = this.#session(request, principal, header(request.headers, 'mcp-protocol-version')) as Session
    const accept = header(request.headers, 'accept') ?? ''
    if (!accept.includes('text/event-stream')) throw invalidRequest('A GET stream needs Accept: text/event-stream', 406)
    const ctx = new McpContext(request, { id: 0, method: 'GET', params: {} },
      new CallState(this.#client(session.version, session), principal, channel, this.#delivery))
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
