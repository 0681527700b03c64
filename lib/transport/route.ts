// The MCP endpoint, in a context of its own so its error handler applies to it alone.
import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { ScopeChallenge } from '../features/scopes.js'
import {
  ElicitationLedgerMismatchError, ErrorCode, InvalidRequestStateError, McpError, headerMismatch, internalError,
  invalidRequest, messageOf, parseError, unsupportedVersion,
} from '../errors.js'
import { describe } from '../check.js'
import { header, idOf, readMessage, type Message } from '../protocol/envelope.js'
import { LEGACY_VERSIONS, META_PROTOCOL_VERSION, PROTOCOL_VERSION, type JsonObject } from '../protocol/wire.js'
import type { CallObserver } from './observers.js'
import { sendClosing, type Lifecycle } from './lifecycle.js'
import type { Era, LegacyEra, Prepared } from './era.js'
import { checkOrigin } from './hosts.js'
import { kCallState, kPrepared } from '../symbols.js'
import type { ProtectedResource } from './oauth.js'
import type { Receipts, Replay } from '../receipts/receipts.js'

// Codes for a token that fails verification: 401, though `@fastify/jwt` gives some no status. Bad options,
// keys and signing are the server's own failures (500, logged).
const TOKEN_FAILURES: ReadonlySet<unknown> = new Set([
  'FAST_JWT_INACTIVE',
  'FAST_JWT_EXPIRED',
  'FAST_JWT_MALFORMED',
  'FAST_JWT_INVALID_TYPE',
  'FAST_JWT_INVALID_ALGORITHM',
  'FAST_JWT_INVALID_CRIT_HEADER',
  'FAST_JWT_INVALID_CLAIM_TYPE',
  'FAST_JWT_INVALID_CLAIM_VALUE',
  'FAST_JWT_MISSING_REQUIRED_CLAIM',
  'FAST_JWT_INVALID_PAYLOAD',
  'FAST_JWT_INVALID_SIGNATURE',
  'FAST_JWT_MISSING_SIGNATURE',
  'FAST_JWT_VERIFY_ERROR',
  // get-jwks, behind @fastify/jwt: a token naming a key its issuer does not publish, or an issuer not allowed.
  'JWK_NOT_FOUND',
  'DOMAIN_NOT_ALLOWED',
])

/** Errors of mocapi, body parsing and the app's hooks (whose 4xx stand) as JSON-RPC; handlers' never get here. */
function toMcpError (error: unknown): McpError {
  if (error instanceof McpError) return error
  const fastify = (typeof error === 'object' && error !== null ? error : {}) as Partial<FastifyError>
  const status = typeof fastify.statusCode === 'number' ? fastify.statusCode : TOKEN_FAILURES.has(fastify.code) ? 401 : 500
  if (fastify.code === 'FST_ERR_CTP_EMPTY_JSON_BODY') return parseError('Parse error: the body is empty')
  if (fastify.code === 'FST_ERR_CTP_INVALID_JSON_BODY') return parseError()
  if (status === 413) return invalidRequest('The request body is larger than the server accepts', 413)
  if (status === 415) return invalidRequest('The request body must be application/json', 415)
  if (status >= 400 && status < 500) return invalidRequest(messageOf(error), status)
  return internalError()
}

interface RouteParts {
  path: string
  bodyLimit: number
  allowedOrigins: readonly string[] | undefined
  allowedHosts: ReadonlySet<string>
  supportedVersions: readonly string[]
  observer: CallObserver
  modern: Era
  legacy: LegacyEra | undefined
  lifecycle: Lifecycle
  protectedResource: ProtectedResource | undefined
  receipts: Receipts | undefined
}

/** By the spec: a message with no version header, session id or `initialize` is modern (and refused for it). */
function isLegacy (message: Message, headers: FastifyRequest['headers'], supported: readonly string[]): boolean {
  if (message.kind === 'request' && message.method === 'server/discover') return false
  const version = header(headers, 'mcp-protocol-version')
  if (version === PROTOCOL_VERSION) return false
  if (version !== undefined && version !== '') {
    if (LEGACY_VERSIONS.includes(version)) return true
    // The spec's order: a header that differs from `_meta`'s version is a mismatch before it is unsupported.
    const named = message.kind === 'response' ? undefined : (message.params._meta as JsonObject | undefined)?.[META_PROTOCOL_VERSION]
    if (typeof named === 'string' && named !== version) {
      throw headerMismatch(`The MCP-Protocol-Version header (${describe(version.slice(0, 40))}) does not match ` +
        `params._meta["${META_PROTOCOL_VERSION}"] (${describe(named.slice(0, 40))})`)
    }
    throw unsupportedVersion(version, supported)
  }
  if (header(headers, 'mcp-session-id') !== undefined) return true
  return message.kind === 'request' && message.method === 'initialize'
}

export async function mcpRoutes (fastify: FastifyInstance, parts: RouteParts): Promise<void> {
  const { modern, legacy, lifecycle, protectedResource, observer } = parts
  // The call of a request rides on the request under a decorated symbol (bench/README.md#call-symbol).
  const calls = {
    get: (request: FastifyRequest): Prepared | undefined => (request as unknown as Holder)[kPrepared] ?? undefined,
    set: (request: FastifyRequest, call: Prepared): void => { (request as unknown as Holder)[kPrepared] = call },
  }

  function eraOf (request: FastifyRequest, message: Message): Era {
    if (!isLegacy(message, request.headers, parts.supportedVersions)) return modern
    if (legacy !== undefined) return legacy
    const asked = message.kind === 'request' && message.method === 'initialize' ? message.params.protocolVersion : undefined
    throw unsupportedVersion(header(request.headers, 'mcp-protocol-version') ?? asked ?? '2025-03-26', parts.supportedVersions)
  }

  // The hooks are synchronous: each async hook costs the request extra promise ticks.
  function onRequest (request: FastifyRequest, _reply: FastifyReply, done: (error?: Error) => void): void {
    try {
      checkOrigin(request, parts.allowedOrigins, parts.allowedHosts)
    } catch (error) {
      return done(error as Error)
    }
    done()
  }

  function preHandler (request: FastifyRequest, reply: FastifyReply, done: (error?: Error) => void): void {
    let prepared
    try {
      const body = request.body
      if (legacy !== undefined && Array.isArray(body)) {
        prepared = legacy.batch(request, reply, body, (call) => respond(call, request, reply))
      } else {
        const message = readMessage(body)
        prepared = eraOf(request, message).prepare(request, reply, message)
      }
    } catch (error) {
      return done(error as Error)
    }
    if (prepared instanceof Promise) {
      prepared.then(undefined, done)
      return
    }
    if (prepared !== undefined) {
      prepared.watch = observer.begin(request, prepared.ctx)
      calls.set(request, prepared)
      request.mcp = prepared.ctx
    }
    done()
  }

  async function handler (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    const call = calls.get(request) as Prepared
    const state = call.ctx[kCallState]
    let receipt
    try {
      receipt = parts.receipts?.of(state)
      if (receipt !== undefined) {
        // A duplicate that waits for its first is a slow reply as a handler's is: past the heartbeat, a stream.
        const replay = await receipt.claim(state, () => call.channel.signal, () => { call.channel.handlerStarted() })
        if (replay !== undefined) return replayed(call, replay, reply)
      }
    } catch (error) {
      return fail(error, request, reply)
    }
    let message: JsonObject
    let status = 200
    let taskId: string | undefined
    try {
      const result = await run(call)
      if (result.resultType === 'task') taskId = result.taskId as string
      message = { jsonrpc: '2.0', id: call.ctx.id, result: completed(call, result, reply) }
    } catch (error) {
      const mcpError = errorOf(error, request, reply, call)
      message = { jsonrpc: '2.0', id: idOf(request.body), error: mcpError.toJSON() }
      status = mcpError.statusCode
    }
    const [json, sent] = call.channel.serialize(message, status)
    if (receipt !== undefined) {
      await receipt.settle(state, { json, status: sent, taskId }, state.ran || taskId !== undefined)
    }
    return call.channel.send(json, sent)
  }

  /** A duplicate gets its first's reply, under its own id, and says so while its headers are not sent. */
  function replayed (call: Prepared, replay: Replay, reply: FastifyReply): FastifyReply | undefined {
    call.untrack()
    call.watch.ended({ outcome: 'replayed', round: 0 }, reply)
    reply.header('idempotent-replayed', 'true')
    return call.channel.send(replay.json, replay.status)
  }

  async function respond (call: Prepared, request: FastifyRequest, reply: FastifyReply): Promise<object> {
    call.watch = observer.begin(request, call.ctx)
    let result: JsonObject
    try {
      result = await run(call)
    } catch (error) {
      return { jsonrpc: '2.0', id: call.ctx.id, error: errorOf(error, request, reply, call).toJSON() }
    }
    return { jsonrpc: '2.0', id: call.ctx.id, result: completed(call, result, reply) }
  }

  function run (call: Prepared): Promise<JsonObject> {
    const { ctx, watch } = call
    const { dispatcher } = call.era
    return (watch.within === undefined
      ? dispatcher.dispatch(ctx)
      : watch.within(() => dispatcher.dispatch(ctx))) as Promise<JsonObject>
  }

  function completed (call: Prepared, result: JsonObject, reply: FastifyReply): JsonObject {
    call.untrack()
    const outcome = result.isError === true ? 'tool_error' : result.resultType === 'input_required' ? 'input_required' : 'complete'
    call.watch.ended({ outcome, round: call.ctx[kCallState].round }, reply)
    return call.era.result(call, result, reply)
  }

  function fail (error: unknown, request: FastifyRequest, reply: FastifyReply): FastifyReply | undefined {
    const call = calls.get(request)
    const mcpError = errorOf(error, request, reply, call)
    const payload = { jsonrpc: '2.0', id: idOf(request.body), error: mcpError.toJSON() }
    if (call !== undefined) return call.channel.finish(payload, mcpError.statusCode)
    return sendClosing(reply, lifecycle).code(mcpError.statusCode).send(payload)
  }

  function errorOf (error: unknown, request: FastifyRequest, reply: FastifyReply, call?: Prepared): McpError {
    let mcpError = toMcpError(error)
    const method = call?.ctx.method
    if (error instanceof InvalidRequestStateError) {
      request.log.warn({ mcp: { method, reason: error.reason } }, 'mocapi refused a requestState')
    } else if (error instanceof ElicitationLedgerMismatchError) {
      request.log.warn({ mcp: { method, ordinal: error.ordinal, part: error.part } }, 'mocapi: a replayed handler asked for other input than the ledger holds')
    } else if (mcpError.statusCode >= 500) {
      request.log.error({ err: error }, 'mocapi internal error')
    }
    if (error instanceof ScopeChallenge) reply.header('www-authenticate', error.header(protectedResource?.metadataUrl(request)))
    else if (mcpError.statusCode === 401) protectedResource?.challenge(request, reply)
    if (call !== undefined) {
      call.untrack()
      mcpError = call.era.error(call, mcpError)
      call.watch.ended({ outcome: 'error', round: call.ctx[kCallState].round, code: mcpError.code, message: mcpError.message }, reply)
    }
    return mcpError
  }

  async function get (request: FastifyRequest, reply: FastifyReply): Promise<FastifyReply | undefined> {
    if (legacy === undefined || header(request.headers, 'mcp-session-id') === undefined) return notAllowed(reply)
    legacy.stream(request, reply)
    return undefined
  }

  /** The spec lets a server refuse DELETE with 405: a sealed session cannot be revoked without a store. */
  async function notAllowed (reply: FastifyReply): Promise<FastifyReply> {
    return reply.code(405).header('allow', legacy !== undefined ? 'GET, POST' : 'POST').send({
      jsonrpc: '2.0',
      id: null,
      error: {
        code: ErrorCode.InvalidRequest,
        message: legacy !== undefined
          ? 'Method not allowed: the MCP endpoint takes POST, and GET for a 2025-era session\'s stream'
          : 'Method not allowed: the MCP endpoint accepts POST only',
      },
    })
  }

  fastify.decorateRequest(kPrepared, null)
  // Replies are serialized before they are sent (ReplyChannel.finish): an app's reply serializer must not run twice.
  fastify.setReplySerializer((payload) => typeof payload === 'string' ? payload : JSON.stringify(payload))
  fastify.setErrorHandler((error, request, reply) => fail(error, request, reply))
  fastify.removeContentTypeParser('text/plain')
  fastify.route({ method: 'POST', url: parts.path, bodyLimit: parts.bodyLimit, onRequest, preHandler, handler })
  fastify.route({ method: 'GET', url: parts.path, onRequest, handler: get })
  fastify.route({ method: 'DELETE', url: parts.path, onRequest, handler: async (_request, reply) => notAllowed(reply) })
}

interface Holder { [kPrepared]: Prepared | null }
