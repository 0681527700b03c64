import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { McpContext } from '../context.js'
import { InvalidRequestStateError, McpError, internalError, invalidRequest, parseError } from '../errors.js'
import type { ReplayEngine } from '../mrtr/replay.js'
import type { ResolvedOptions } from '../options.js'
import type { Dispatcher, MethodSpec } from '../protocol/dispatch.js'
import { idOf, readMessage, readRequest } from '../protocol/envelope.js'
import { META_SERVER_INFO, type JsonObject } from '../protocol/wire.js'
import { ReplyChannel, sendClosing, type Lifecycle } from './channel.js'
import type { ProtectedResource } from './oauth.js'

const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]', '::1'])

function hostnameOf (hostHeader: string): string {
  const host = hostHeader.toLowerCase()
  if (host.startsWith('[')) return host.slice(0, host.indexOf(']') + 1)
  const colon = host.indexOf(':')
  return colon === -1 ? host : host.slice(0, colon)
}

// The address a connection arrived on: 127.0.0.0/8, ::1, or IPv4 loopback seen by a dual-stack socket.
const LOOPBACK_ADDRESS = /^(?:127\.|::1$|::ffff:127\.)/

function isLoopbackAddress (address: string | undefined): boolean {
  return LOOPBACK_ADDRESS.test(address ?? '')
}

function forbidden (message: string): McpError {
  return invalidRequest(message, 403)
}

/** Turns any error raised while serving the endpoint into a JSON-RPC error. */
function toMcpError (error: FastifyError): McpError {
  if (error instanceof McpError) return error
  const status = error.statusCode ?? 500
  if (error.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || (status === 400 && error instanceof SyntaxError)) return parseError()
  if (status >= 500) return internalError()
  if (status === 413) return invalidRequest('The request body is larger than the server accepts', 413)
  if (status === 415) return invalidRequest('The request body must be application/json', 415)
  return invalidRequest(error.message, status)
}

/**
 * The MCP endpoint: POST only, one JSON-RPC message per request, stateless. It is registered
 * in its own encapsulated context so its error handler applies to it alone.
 */
export function mcpRoutes (options: ResolvedOptions, dispatcher: Dispatcher, engine: ReplayEngine, lifecycle: Lifecycle, protectedResource?: ProtectedResource) {
  const serverInfoMeta = { [META_SERVER_INFO]: options.serverInfo }

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
      if (!ok) throw forbidden('Origin not allowed')
    }
    if (isLoopbackAddress(request.socket.localAddress)) {
      const host = request.headers.host
      const name = host === undefined ? '' : hostnameOf(host)
      if (!LOOPBACK_HOSTS.has(name) && !options.allowedHosts.has(name)) throw forbidden('Host not allowed')
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
    let notification
    try {
      notification = prepare(request, reply)
    } catch (error) {
      return done(error as Error)
    }
    if (notification) reply.code(202).send()
    else done()
  }

  /** Reads the envelope and fills `request.mcp`; true when the message is a notification. */
  function prepare (request: FastifyRequest, reply: FastifyReply): boolean {
    const body = request.body
    const message = readMessage(body)
    if (message.notification) return true
    const spec = dispatcher.lookup(message.method)
    const envelope = readRequest(body as JsonObject, request.headers, spec.nameField)
    dispatcher.checkParams(envelope.method, spec, envelope.params)
    // A principal function that returns undefined means an anonymous caller, like null.
    const principal = options.principal(request) ?? null
    const token = envelope.params.requestState
    let restored
    if (typeof token === 'string') {
      try {
        restored = engine.restore(token, envelope.method, envelope.params, principal)
      } catch (error) {
        request.log.debug({ reason: (error as InvalidRequestStateError).reason }, 'mocapi refused a requestState')
        throw error
      }
    }
    const ctx = new McpContext(request, envelope, principal, restored, new ReplyChannel(reply, lifecycle))
    ctx.spec = spec
    request.mcp = ctx
    return false
  }

  async function handler (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const ctx = request.mcp as McpContext
    const channel = ctx.sink as ReplyChannel
    let result: JsonObject
    try {
      result = await (ctx.spec as MethodSpec).run(ctx) as JsonObject
    } catch (error) {
      // A streaming reply is hijacked: Fastify counts it as sent and would only log the error.
      if (channel.streaming) return errorHandler(error as FastifyError, request, reply)
      throw error
    }
    const meta = result._meta
    const stamped = {
      resultType: 'complete',
      ...result,
      _meta: meta === undefined ? serverInfoMeta : { ...(meta as JsonObject), ...serverInfoMeta },
    }
    return channel.finish({ jsonrpc: '2.0', id: ctx.id, result: stamped }, 200)
  }

  function errorHandler (error: FastifyError, request: FastifyRequest, reply: FastifyReply): FastifyReply | undefined {
    const mcpError = toMcpError(error)
    if (mcpError.statusCode >= 500) request.log.error({ err: error }, 'mocapi internal error')
    if (mcpError.statusCode === 401) protectedResource?.challenge(request, reply)
    const payload = { jsonrpc: '2.0', id: idOf(request.body), error: mcpError.toJSON() }
    const channel = request.mcp?.sink as ReplyChannel | undefined
    if (channel !== undefined) return channel.finish(payload, mcpError.statusCode)
    return sendClosing(reply, lifecycle).code(mcpError.statusCode).send(payload)
  }

  return async function routes (fastify: FastifyInstance): Promise<void> {
    fastify.setErrorHandler(errorHandler)
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
