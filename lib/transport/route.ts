/**
 * The MCP endpoint, read top to bottom:
 *
 *   onRequest   Origin and Host checks
 *   preHandler  the JSON-RPC message; notifications answered 202; the era's envelope (headers,
 *               `_meta`, version); the caller's principal; the context, `request.mcp`
 *   handler     `dispatch(ctx)`: the method's lookup, params check and run; the result shaped
 *               for the era, as JSON or as the last event of a stream
 *   errors      anything thrown on the way becomes a JSON-RPC error with its HTTP status
 *
 * It is registered in its own encapsulated context so its error handler applies to it alone.
 */
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { McpContext, clientOf } from '../context.js'
import {
  ElicitationLedgerMismatchError, InvalidRequestStateError, McpError, headerMismatch, internalError, invalidRequest, parseError,
  unsupportedVersion,
} from '../errors.js'
import { messageOf } from '../features/failures.js'
import type { ResolvedOptions } from '../options.js'
import { legacyError, legacyResult } from '../legacy/shape.js'
import type { Dispatcher } from '../protocol/dispatch.js'
import { checkModernRequest, header, idOf, readMessage, type Message } from '../protocol/envelope.js'
import {
  LEGACY_VERSIONS, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_SERVER_INFO, PROTOCOL_VERSION, type JsonObject,
} from '../protocol/wire.js'
import type { CallObserver, CallWatch } from './calls.js'
import { ReplyChannel, sendClosing, type Lifecycle } from './channel.js'
import type { LegacyTransport } from './legacy.js'
import type { ProtectedResource } from './oauth.js'
import { LOOPBACK_HOSTS, hostnameOf, isKnownHost, isLoopbackAddress } from './hosts.js'
import { principalOf } from './principal.js'

/**
 * Turns any error raised while serving the endpoint into a JSON-RPC error. Handlers' errors never
 * get here (each feature maps its own); what does comes from mocapi, from Fastify reading the
 * body, or from the app's own hooks, whose 4xx (an auth check's 401, a rate limit's 429) stand.
 */
function toMcpError (error: unknown): McpError {
  if (error instanceof McpError) return error
  const fastify = (typeof error === 'object' && error !== null ? error : {}) as Partial<FastifyError>
  const status = typeof fastify.statusCode === 'number' ? fastify.statusCode : 500
  if (fastify.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return parseError('Parse error: the body is empty')
  if (fastify.code === 'FST_ERR_CTP_INVALID_JSON_BODY') return parseError()
  if (status === 413) return invalidRequest('The request body is larger than the server accepts', 413)
  if (status === 415) return invalidRequest('The request body must be application/json', 415)
  if (status >= 400 && status < 500) return invalidRequest(messageOf(error), status)
  return internalError()
}

/** What the endpoint is made of: the options, the method tables of both eras, and the replies it has open. */
export interface Endpoint {
  options: ResolvedOptions
  /** Told of each call's beginning and end: the log line, tracing. */
  observer: CallObserver
  modern: Dispatcher
  legacy: { dispatcher: Dispatcher, transport: LegacyTransport }
  lifecycle: Lifecycle
  protectedResource: ProtectedResource | undefined
}

/** Which revision a request speaks. */
type Era = 'modern' | 'legacy'

/**
 * The era of a message, by the rules of the spec: `server/discover` or a 2026-07-28 version
 * header is modern; a 2025 version header, `initialize` or a session id is legacy; a request with
 * no header of either kind is modern (and refused for lacking the header). Any other version is
 * -32022, naming every version served.
 */
function eraOf (message: Message, headers: FastifyRequest['headers'], supported: readonly string[]): Era {
  if (message.kind === 'request' && message.method === 'server/discover') return 'modern'
  const version = header(headers, 'mcp-protocol-version')
  if (version === PROTOCOL_VERSION) return 'modern'
  if (version !== undefined && version !== '') {
    if (LEGACY_VERSIONS.includes(version)) return 'legacy'
    throw unsupportedVersion(version, supported)
  }
  if (header(headers, 'mcp-session-id') !== undefined) return 'legacy'
  return message.kind === 'request' && message.method === 'initialize' ? 'legacy' : 'modern'
}

/** What the route keeps of a request it serves: its reply channel, and what it does once done. */
interface Call {
  channel: ReplyChannel
  era: Era
  /** The id of the session an `initialize` opened, sent back in its `Mcp-Session-Id`. */
  sessionId: string | undefined
  untrack: () => void
  /** What the observers do with the call. */
  watch: CallWatch
}

export function mcpRoutes (endpoint: Endpoint) {
  const { options, modern, legacy, lifecycle, protectedResource, observer } = endpoint
  const serverInfoMeta = { [META_SERVER_INFO]: options.serverInfo }
  const channelLimits = { maxBufferedBytes: options.limits.streamBufferBytes }
  // The call of a request that got a context rides on the request under a decorated symbol: a
  // WeakMap keyed by requests made every garbage collection trace thousands of ephemerons, and
  // cost a third of the throughput of a plain tools/call.
  const calls = {
    get: (request: FastifyRequest): Call | undefined => (request as unknown as CallHolder)[kCall] ?? undefined,
    set: (request: FastifyRequest, call: Call): void => { (request as unknown as CallHolder)[kCall] = call },
  }

  function checkOrigin (request: FastifyRequest): void {
    const origin = request.headers.origin
    if (origin !== undefined) {
      const allowed = options.allowedOrigins
      let ok = allowed !== undefined && (allowed.includes('*') || allowed.includes(origin))
      if (!ok && allowed === undefined) {
        try {
          ok = LOOPBACK_HOSTS.has(new URL(origin).hostname)
        } catch {
          ok = false
        }
      }
      if (!ok) throw invalidRequest(`Origin not allowed: ${origin.slice(0, 200)} is not in the allowedOrigins option`, 403)
    }
    if (isLoopbackAddress(request.socket.localAddress)) {
      const name = hostnameOf(request.headers.host)
      if (!isKnownHost(name, options.allowedHosts)) {
        throw invalidRequest(`Host not allowed: ${JSON.stringify(name.slice(0, 200))} reached a loopback address; list it in the allowedHosts option`, 403)
      }
    }
  }

  // The hooks are synchronous on purpose: each async hook costs the request extra promise ticks.
  function onRequest (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void {
    try {
      checkOrigin(request)
    } catch (error) {
      return done(error as Error)
    }
    done()
  }

  function preHandler (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void): void {
    let prepared
    try {
      const message = readMessage(request.body)
      if (eraOf(message, request.headers, options.supportedVersions) === 'modern') {
        if (!prepareModern(request, reply, message)) done()
        return
      }
      if (!options.legacy) throw refuseLegacy(request, message)
      prepared = prepareLegacy(request, reply, message)
    } catch (error) {
      return done(error as Error)
    }
    if (prepared === false) done()
    else if (prepared !== true) prepared.then(undefined, done)
  }

  /** The refusal of a 2025-era request when the app serves 2026-07-28 only. */
  function refuseLegacy (request: FastifyRequest, message: Message): McpError {
    const asked = message.kind === 'request' && message.method === 'initialize' ? message.params.protocolVersion : undefined
    return unsupportedVersion(header(request.headers, 'mcp-protocol-version') ?? asked ?? '2025-03-26', options.supportedVersions)
  }

  /** Reads a 2026-07-28 message and fills `request.mcp`; true when the reply is already sent (a notification). */
  function prepareModern (request: FastifyRequest, reply: FastifyReply, message: Message): boolean {
    if (message.kind === 'response') throw invalidRequest('Clients must not POST responses to this endpoint')
    if (message.kind === 'notification') {
      reply.code(202).send()
      return true
    }
    const version = header(request.headers, 'mcp-protocol-version')
    if (version === undefined || version === '') throw headerMismatch('The MCP-Protocol-Version header is required')
    const meta = checkModernRequest(message, request.headers, version)
    if (version !== PROTOCOL_VERSION) throw unsupportedVersion(version, options.supportedVersions)
    const client = {
      protocolVersion: version,
      capabilities: meta[META_CLIENT_CAPABILITIES],
      info: meta[META_CLIENT_INFO],
      logLevel: meta[META_LOG_LEVEL],
    }
    const channel = new ReplyChannel(reply, message.id, lifecycle, channelLimits, request.log)
    const ctx = new McpContext(request, message, client, principalOf(request, options.principal), channel)
    calls.set(request, { channel, era: 'modern', sessionId: undefined, untrack: noop, watch: observer.begin(request, ctx) })
    request.mcp = ctx
    return false
  }

  /**
   * Reads a 2025-era message: a request fills `request.mcp`. True when the reply is already sent;
   * for a client's answer, which waits for its delivery, a promise that settles once it is.
   */
  function prepareLegacy (request: FastifyRequest, reply: FastifyReply, message: Message): boolean | Promise<void> {
    let channel: ReplyChannel | undefined
    const prepared = legacy.transport.prepare(request, reply, message, header(request.headers, 'mcp-protocol-version'), (id) => {
      channel = new ReplyChannel(reply, id, lifecycle, channelLimits, request.log)
      return channel
    })
    if (prepared instanceof Promise) return prepared
    if (prepared.kind === 'answered') return true
    const ctx = prepared.ctx
    const untrack = legacy.transport.track(ctx, clientOf(ctx).session, channel as ReplyChannel)
    calls.set(request, { channel: channel as ReplyChannel, era: 'legacy', sessionId: prepared.sessionId, untrack, watch: observer.begin(request, ctx) })
    request.mcp = ctx
    return false
  }

  async function handler (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const ctx = request.mcp as McpContext
    const call = calls.get(request) as Call
    const dispatcher = call.era === 'modern' ? modern : legacy.dispatcher
    const watch = call.watch
    let result: JsonObject
    try {
      result = await (watch.within === undefined ? dispatcher.dispatch(ctx) : watch.within(() => dispatcher.dispatch(ctx))) as JsonObject
    } catch (error) {
      return fail(error, request, reply)
    }
    call.untrack()
    watch.ended({ outcome: result.isError === true ? 'tool_error' : result.resultType === 'input_required' ? 'input_required' : 'complete' }, reply)
    if (call.era === 'legacy') {
      if (call.sessionId !== undefined) reply.header('mcp-session-id', call.sessionId)
      return call.channel.finish({ jsonrpc: '2.0', id: ctx.id, result: legacyResult(ctx.method, result) }, 200)
    }
    const meta = result._meta
    const stamped = {
      resultType: 'complete',
      ...result,
      _meta: meta === undefined ? serverInfoMeta : { ...(meta as JsonObject), ...serverInfoMeta },
    }
    return call.channel.finish({ jsonrpc: '2.0', id: ctx.id, result: stamped }, 200)
  }

  function fail (error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply | undefined {
    let mcpError = toMcpError(error)
    const method = request.mcp?.method
    if (error instanceof InvalidRequestStateError) {
      request.log.warn({ mcp: { method, reason: error.reason } }, 'mocapi refused a requestState')
    } else if (error instanceof ElicitationLedgerMismatchError) {
      request.log.warn({ mcp: { method, ordinal: error.ordinal, part: error.part } }, 'mocapi: a replayed handler asked for other input than the ledger holds')
    } else if (mcpError.statusCode >= 500) {
      request.log.error({ err: error }, 'mocapi internal error')
    }
    if (mcpError.statusCode === 401) protectedResource?.challenge(request, reply)
    const call = calls.get(request)
    if (call?.era === 'legacy') {
      call.untrack()
      mcpError = legacyError(method, mcpError)
    }
    call?.watch.ended({ outcome: 'error', code: mcpError.code, message: mcpError.message }, reply)
    const payload = { jsonrpc: '2.0', id: idOf(request.body), error: mcpError.toJSON() }
    if (call !== undefined) return call.channel.finish(payload, mcpError.statusCode)
    return sendClosing(reply, lifecycle).code(mcpError.statusCode).send(payload)
  }

  /** GET: a 2025-era session's stream of changes; without a session, or serving 2026-07-28 only, 405. */
  async function get (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    if (!options.legacy || header(request.headers, 'mcp-session-id') === undefined) return notAllowed(reply)
    const channel = new ReplyChannel(reply, 0, lifecycle, channelLimits, request.log)
    legacy.transport.stream(request, channel)
    return undefined
  }

  /** The spec lets a server refuse DELETE with 405: a sealed session cannot be revoked without a store. */
  async function notAllowed (reply: FastifyReply): Promise<FastifyReply> {
    return reply.code(405).header('allow', options.legacy ? 'GET, POST' : 'POST').send({
      jsonrpc: '2.0',
      id: null,
      error: { code: -32600, message: options.legacy ? 'Method not allowed: the MCP endpoint takes POST, and GET for a 2025-era session\'s stream' : 'Method not allowed: the MCP endpoint accepts POST only' },
    })
  }

  return async function routes (fastify: FastifyInstance): Promise<void> {
    fastify.decorateRequest(kCall, null)
    fastify.setErrorHandler((error, request, reply) => fail(error, request, reply))
    fastify.removeContentTypeParser('text/plain')
    fastify.route({ method: 'POST', url: options.path, bodyLimit: options.bodyLimit, onRequest, preHandler, handler })
    fastify.route({ method: 'GET', url: options.path, onRequest, handler: get })
    fastify.route({ method: 'DELETE', url: options.path, onRequest, handler: async (_request, reply) => notAllowed(reply) })
  }
}

function noop (): void {}

const kCall = Symbol('mocapi.call')
interface CallHolder { [kCall]: Call | null }
