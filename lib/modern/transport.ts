// 2026-07-28 keeps nothing between requests: each carries its version, its client's `_meta` and its requestState.
import type { FastifyReply, FastifyRequest } from 'fastify'
import { CallState, type Delivery } from '../call.js'
import { noop } from '../check.js'
import { McpContext } from '../context.js'
import { headerMismatch, invalidRequest, unsupportedVersion, type McpError } from '../errors.js'
import type { Dispatcher } from '../protocol/dispatch.js'
import { checkModernRequest, header, type Message } from '../protocol/envelope.js'
import {
  LEGACY_VERSIONS, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_SERVER_INFO, PROTOCOL_VERSION,
  type Implementation, type JsonObject,
} from '../protocol/wire.js'
import { UNWATCHED } from '../transport/observers.js'
import { ReplyChannel, type ChannelSettings } from '../transport/channel.js'
import type { Lifecycle } from '../transport/lifecycle.js'
import type { Prepared, Era } from '../transport/era.js'
import type { ElicitationPolicy } from '../elicitation/policy.js'
import { principalOf } from '../transport/principal.js'
import type { FormAnswers } from '../elicitation/answers.js'

interface ModernParts {
  dispatcher: Dispatcher<McpContext>
  delivery: Delivery
  forms: FormAnswers
  lifecycle: Lifecycle
  limits: ChannelSettings
  serverInfo: Implementation
  supportedVersions: readonly string[]
  principal: ((request: FastifyRequest) => unknown) | undefined
  elicitation: ElicitationPolicy
}

export class ModernTransport implements Era {
  readonly dispatcher: Dispatcher<McpContext>
  readonly #parts: ModernParts
  readonly #serverInfoMeta: JsonObject

  constructor (parts: ModernParts) {
    this.dispatcher = parts.dispatcher
    this.#parts = parts
    this.#serverInfoMeta = { [META_SERVER_INFO]: parts.serverInfo }
  }

  prepare (request: FastifyRequest, reply: FastifyReply, message: Message): Prepared | undefined {
    if (message.kind === 'response') throw invalidRequest('Clients must not POST responses to this endpoint')
    if (message.kind === 'notification') {
      reply.code(202).send()
      return undefined
    }
    const parts = this.#parts
    const version = header(request.headers, 'mcp-protocol-version')
    if (version === undefined || version === '') throw headerMismatch('The MCP-Protocol-Version header is required')
    const meta = checkModernRequest(message, request.headers, version)
    // Only server/discover reaches here with another version; no 2025 revision has it, so it is 2026-07-28 alone.
    if (version !== PROTOCOL_VERSION) {
      if (!LEGACY_VERSIONS.includes(version)) throw unsupportedVersion(version, parts.supportedVersions)
      throw unsupportedVersion(version, [PROTOCOL_VERSION],
        `Unsupported protocol version for server/discover: it is a ${PROTOCOL_VERSION} method, which ${version} does not have`)
    }
    const client = parts.elicitation.apply({
      protocolVersion: version,
      capabilities: meta[META_CLIENT_CAPABILITIES],
      info: meta[META_CLIENT_INFO],
      logLevel: meta[META_LOG_LEVEL],
    })
    const channel = new ReplyChannel(reply, message.id, parts.lifecycle, parts.limits, request.log)
    const principal = principalOf(request, parts.principal)
    const call = new CallState(request, message, client, principal, channel, parts.delivery, parts.forms)
    return {
      ctx: new McpContext(call),
      channel,
      era: this,
      sessionId: undefined,
      untrack: noop,
      watch: UNWATCHED
    }
  }

  result (_call: Prepared, result: JsonObject): JsonObject {
    const meta = result._meta
    return {
      resultType: 'complete',
      ...result,
      _meta: meta === undefined ? this.#serverInfoMeta : { ...(meta as JsonObject), ...this.#serverInfoMeta },
    }
  }

  error (_call: Prepared, error: McpError): McpError {
    return error
  }
}
