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
import { McpContext, roundOf } from '../context.js'
import {
  ElicitationLedgerMismatchError, InvalidRequestStateError, McpError, headerMismatch, internalError, invalidRequest, parseError,
  unsupportedVersion,
} from '../errors.js'
import { messageOf } from '../features/failures.js'
import type { ResolvedOptions } from '../options.js'
import type { Dispatcher } from '../protocol/dispatch.js'
import { checkModernRequest, header, idOf, readMessage } from '../protocol/envelope.js'
import {
  META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_SERVER_INFO, PROTOCOL_VERSION, type JsonObject,
} from '../protocol/wire.js'
import { ReplyChannel, sendClosing, type Lifecycle } from './channel.js'
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
  if (fastify.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || (status === 400 && error instanceof SyntaxError)) return parseError()
  if (status === 413) return invalidRequest('The request body is larger than the server accepts', 413)
  if (status === 415) return invalidRequest('The request body must be application/json', 415)
  if (status >= 400 && status < 500) return invalidRequest(messageOf(error), status)
  return internalError()
}

/** Whether a logger writes info lines (Fastify's logger: false has no levels). */
function infoEnabled (log: FastifyRequest['log']): boolean {
  const enabled = (log as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled
  return typeof enabled === 'function' && enabled.call(log, 'info')
}

/** The target a call names, short enough for a log line. */
function targetOf (ctx: McpContext): string | undefined {
  const target = ctx.params.name ?? ctx.params.uri
  return typeof target === 'string' ? target.slice(0, 200) : undefined
}

/** One info line per call: what was called, which round, how it ended, how long it took. */
function logCall (request: FastifyRequest, reply: FastifyReply, outcome: string, code?: number): void {
  const ctx = request.mcp
  if (ctx === null || !infoEnabled(request.log)) return
  const round = roundOf(ctx)
  request.log.info({
    mcp: { method: ctx.method, name: targetOf(ctx), round: round === 0 ? undefined : round, outcome, code, durationMs: Math.round(reply.elapsedTime * 100) / 100 },
  }, 'mcp call')
}

/** What the endpoint is made of: the options, the method table, and the replies it has open. */
export interface Endpoint {
  options: ResolvedOptions
  modern: Dispatcher
  lifecycle: Lifecycle
  protectedResource: ProtectedResource | undefined
}

export function mcpRoutes (endpoint: Endpoint) {
  const { options, modern, lifecycle, protectedResource } = endpoint
  const serverInfoMeta = { [META_SERVER_INFO]: options.serverInfo }
  const channelLimits = { maxBufferedBytes: options.limits.streamBufferBytes }
  // Route-local: the reply channel of each request that got a context.
  const channels = new WeakMap<FastifyRequest, ReplyChannel>()

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
      if (!ok) throw invalidRequest(`Origin not allowed: ${origin} is not in the allowedOrigins option`, 403)
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
    let answered
    try {
      answered = prepare(request, reply)
    } catch (error) {
      return done(error as Error)
    }
    if (!answered) done()
  }

  /** Reads the message and fills `request.mcp`; true when the reply is already sent (a notification). */
  function prepare (request: FastifyRequest, reply: FastifyReply): boolean {
    const message = readMessage(request.body)
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
    channels.set(request, channel)
    request.mcp = new McpContext(request, message, client, principalOf(request, options.principal), channel)
    return false
  }

  async function handler (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const ctx = request.mcp as McpContext
    let result: JsonObject
    try {
      result = await modern.dispatch(ctx) as JsonObject
    } catch (error) {
      return fail(error, request, reply)
    }
    const meta = result._meta
    const stamped = {
      resultType: 'complete',
      ...result,
      _meta: meta === undefined ? serverInfoMeta : { ...(meta as JsonObject), ...serverInfoMeta },
    }
    logCall(request, reply, result.isError === true ? 'tool_error' : stamped.resultType as string)
    return channelOf(request).finish({ jsonrpc: '2.0', id: ctx.id, result: stamped }, 200)
  }

  function channelOf (request: FastifyRequest): ReplyChannel {
    return channels.get(request) as ReplyChannel
  }

  function fail (error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply | undefined {
    const mcpError = toMcpError(error)
    const method = request.mcp?.method
    if (error instanceof InvalidRequestStateError) {
      request.log.warn({ mcp: { method, reason: error.reason } }, 'mocapi refused a requestState')
    } else if (error instanceof ElicitationLedgerMismatchError) {
      request.log.warn({ mcp: { method, ordinal: error.ordinal, part: error.part } }, 'mocapi: a replayed handler asked for other input than the ledger holds')
    } else if (mcpError.statusCode >= 500) {
      request.log.error({ err: error }, 'mocapi internal error')
    }
    if (mcpError.statusCode === 401) protectedResource?.challenge(request, reply)
    logCall(request, reply, 'error', mcpError.code)
    const payload = { jsonrpc: '2.0', id: idOf(request.body), error: mcpError.toJSON() }
    const channel = channels.get(request)
    if (channel !== undefined) return channel.finish(payload, mcpError.statusCode)
    return sendClosing(reply, lifecycle).code(mcpError.statusCode).send(payload)
  }

  return async function routes (fastify: FastifyInstance): Promise<void> {
    fastify.setErrorHandler((error, request, reply) => fail(error, request, reply))
    fastify.removeContentTypeParser('text/plain')
    fastify.route({
      method: 'POST',
      url: options.path,
      bodyLimit: options.bodyLimit,
      onRequest,
      preHandler,
      handler,
    })
    fastify.route({
      method: ['GET', 'DELETE'],
      url: options.path,
      onRequest,
      handler: async (request, reply) => reply.code(405).header('allow', 'POST').send({
        jsonrpc: '2.0', id: null, error: { code: -32600, message: 'Method not allowed: the MCP endpoint accepts POST only' },
      }),
    })
  }
}
