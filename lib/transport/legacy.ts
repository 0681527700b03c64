/**
 * The 2025-era side of the endpoint: sessions sealed into `Mcp-Session-Id`, `initialize`, the
 * notifications and answers clients POST, and the GET stream. Everything below the transport
 * (dispatch, features, the replay engine) is shared with 2026-07-28.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { McpContext, type ClientState } from '../context.js'
import { McpError, invalidRequest } from '../errors.js'
import { LIST_CHANGED, type Subscriptions } from '../features/subscriptions.js'
import type { Exchange } from '../legacy/exchange.js'
import type { SessionHub } from '../legacy/hub.js'
import type { Session, SessionCodec } from '../legacy/session.js'
import type { ResolvedOptions } from '../options.js'
import { checkLegacyMeta, header, type Message } from '../protocol/envelope.js'
import { LEGACY_VERSIONS } from '../protocol/wire.js'
import type { ReplyChannel } from './channel.js'
import { principalOf, type Principal } from './principal.js'

const MAX_TIMER_MS = 2 ** 31 - 1

/** The answer to a session id that is not a live session of this caller: the client must start a new one. */
export function sessionNotFound (): McpError {
  return new McpError(-32600, 'Session not found: it expired, was not issued by this server, or belongs to another caller; start a new session with initialize', { statusCode: 404 })
}

function samePrincipal (a: Principal, b: Principal): boolean {
  return a.value === b.value && a.state === b.state
}

/** The log level a 2025-era client gets notifications from, unless its session set one. */
export const DEFAULT_LEGACY_LOG_LEVEL = 'info'

/** What `prepare` made of a 2025-era POST: a request to dispatch, or a reply already sent. */
export type Prepared =
  | { kind: 'request', ctx: McpContext, sessionId: string | undefined }
  | { kind: 'answered' }

export interface LegacyParts {
  options: ResolvedOptions
  sessions: SessionCodec
  hub: SessionHub
  exchange: Exchange
  subscriptions: Subscriptions
}

export class LegacyTransport {
  readonly #options: ResolvedOptions
  readonly #sessions: SessionCodec
  readonly #hub: SessionHub
  readonly #exchange: Exchange
  readonly #subscriptions: Subscriptions

  constructor (parts: LegacyParts) {
    this.#options = parts.options
    this.#sessions = parts.sessions
    this.#hub = parts.hub
    this.#exchange = parts.exchange
    this.#subscriptions = parts.subscriptions
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
   * Reads a 2025-era POST: a request becomes a context; a notification or an answer is taken and
   * answered 202. Only an answer waits, for its delivery: it gives a promise that settles once its
   * reply is sent. Everything else is prepared at once.
   */
  prepare (request: FastifyRequest, reply: FastifyReply, message: Message, headerVersion: string | undefined,
    channel: (id: string | number) => ReplyChannel): Prepared | Promise<void> {
    const principal = principalOf(request, this.#options.principal)
    if (message.kind === 'request') checkLegacyMeta(message.params)
    if (message.kind === 'request' && message.method === 'initialize') {
      const requested = message.params.protocolVersion
      // The spec's negotiation: the version asked for when served, else the newest served.
      const version = typeof requested === 'string' && LEGACY_VERSIONS.includes(requested) ? requested : LEGACY_VERSIONS[0]
      const session = this.#sessions.create(principal, version, message.params.capabilities, message.params.clientInfo)
      const ctx = new McpContext(request, message, this.#client(version, session), principal, channel(message.id))
      return { kind: 'request', ctx, sessionId: this.#sessions.seal(session) }
    }
    const session = this.#session(request, principal, headerVersion)
    if (message.kind === 'notification') {
      const requestId = message.params.requestId
      if (message.method === 'notifications/cancelled' && session !== undefined && (typeof requestId === 'string' || typeof requestId === 'number')) {
        this.#hub.cancel(session.id, requestId)
      }
      reply.code(202).send()
      return { kind: 'answered' }
    }
    if (message.kind === 'response') return this.#answer(reply, message, session, principal)
    // A legacy request without a session came with a 2025 version header: that is how it was told apart.
    const version = session?.version ?? headerVersion as string
    const ctx = new McpContext(request, message, this.#client(version, session), principal, channel(message.id))
    return { kind: 'request', ctx, sessionId: undefined }
  }

  /** Delivers a client's answer to the request of its session that waits for it, wherever that runs. */
  async #answer (reply: FastifyReply, message: Message & { kind: 'response' }, session: Session | undefined, principal: Principal): Promise<void> {
    const delivery = await this.#exchange.answer(message, { session: session?.id ?? '', principal: principal.value })
    if (delivery === 'accepted') reply.code(202).send()
    else {
      reply.code(400).send({
        jsonrpc: '2.0',
        error: { code: -32600, message: 'No request of this session waits for this answer: it was answered, timed out, or its server is gone' },
      })
    }
  }

  /** Lets `notifications/cancelled` reach a request of a session while it runs here. */
  track (ctx: McpContext, session: string | undefined, channel: ReplyChannel): () => void {
    if (session === undefined) return () => {}
    return this.#hub.addRequest(session, ctx.id, () => channel.abort('the client cancelled the request'))
  }

  /**
   * A GET with a session: a stream of list changes and of updates to the resources the session
   * subscribed to, from this node, until the client leaves, the session expires or the server closes.
   */
  stream (request: FastifyRequest, channel: ReplyChannel): void {
    const principal = principalOf(request, this.#options.principal)
    // The route serves GET here only with a session id, so there is a session or a 404.
    const session = this.#session(request, principal, header(request.headers, 'mcp-protocol-version')) as Session
    const accept = header(request.headers, 'accept') ?? ''
    if (!accept.includes('text/event-stream')) throw invalidRequest('A GET stream needs Accept: text/event-stream', 406)
    const ctx = new McpContext(request, { id: 0, method: 'GET', params: {} }, this.#client(session.version, session), principal, channel)
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
