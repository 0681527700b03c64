import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { McpContext } from './context.js'
import { Prompts } from './features/prompts.js'
import { McpRegistry } from './features/registry.js'
import { Resources } from './features/resources.js'
import { InProcessBus, Subscriptions, type ChangeEvent, type NotificationBus } from './features/subscriptions.js'
import { Tools } from './features/tools.js'
import { methods } from './methods.js'
import { RequestStateCodec, ephemeralKey, keysFromEnv, parseKeys } from './mrtr/codec.js'
import { ReplayEngine } from './mrtr/replay.js'
import { resolveOptions, type MocapiOptions } from './options.js'
import { ProtectedResource } from './transport/oauth.js'
import { mcpRoutes } from './transport/route.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Registers the tools, prompts and resources the MCP endpoint serves. */
    mcp: McpRegistry
  }
  interface FastifyRequest {
    /** The MCP context of the request; `null` until mocapi's preHandler fills it. */
    mcp: McpContext | null
  }
  interface FastifyContextConfig {
    /** Set by mocapi on routes that must stay reachable without credentials (RFC 9728 metadata). */
    mcpPublic?: boolean
  }
}

function requestStateKeys (fastify: FastifyInstance, keys: string[] | undefined): Buffer[] {
  const configured = keys ?? keysFromEnv(process.env.MOCAPI_REQUEST_STATE_KEYS)
  if (configured !== undefined) return parseKeys(configured)
  fastify.log.warn('mocapi: no requestState keys configured (requestState.keys or MOCAPI_REQUEST_STATE_KEYS); ' +
    'using an ephemeral key: tokens in flight are lost on restart and other nodes cannot read them')
  return [ephemeralKey()]
}

async function mocapi (fastify: FastifyInstance, opts: MocapiOptions): Promise<void> {
  const options = resolveOptions(opts)
  let keys
  try {
    keys = requestStateKeys(fastify, options.keys)
  } catch (error) {
    throw new TypeError(`mocapi: ${(error as Error).message}`)
  }
  const codec = new RequestStateCodec({ keys, ttl: options.ttl, maxTokenLength: options.maxTokenLength })
  const features = {
    tools: new Tools(),
    prompts: new Prompts(),
    resources: new Resources(),
    subscriptions: new Subscriptions(),
    engine: new ReplayEngine(codec, options.maxRounds),
  }
  const bus: NotificationBus = options.bus ?? new InProcessBus()
  const unsubscribe = await bus.subscribe((event) => features.subscriptions.deliver(event))
  // Registrations made while the app boots are not news to anyone.
  let live = false
  fastify.addHook('onReady', async () => { live = true })
  const announce = (event: ChangeEvent): void => {
    if (!live) return
    Promise.resolve()
      .then(() => bus.publish(event))
      .catch((error: unknown) => fastify.log.error({ err: error }, 'mocapi could not publish a change event'))
  }

  fastify.decorate('mcp', new McpRegistry({ ...features, announce }))
  fastify.decorateRequest('mcp', null)
  const lifecycle = { closing: false, closeIdleConnections: () => fastify.server.closeIdleConnections() }
  // Open listen streams end first, so the server can close with no request left hanging.
  fastify.addHook('preClose', async () => {
    lifecycle.closing = true
    features.subscriptions.closeAll()
  })
  fastify.addHook('onClose', async () => {
    unsubscribe()
    await bus.close?.()
  })
  let protectedResource
  if (options.protectedResource !== undefined) {
    protectedResource = new ProtectedResource(options.protectedResource, options.path)
    protectedResource.register(fastify)
  }
  await fastify.register(mcpRoutes(options, methods(options, features), features.engine, lifecycle, protectedResource))
}

/** The mocapi Fastify plugin: `app.register(mocapiPlugin, options)`. */
export const mocapiPlugin = fp(mocapi, { fastify: '5.x', name: 'mocapi' })
export default mocapiPlugin

export { McpContext, type ElicitOptions, type CreateMessageParams, type CreateMessageResult, type Root, type SamplingMessage } from './context.js'
export type { Completer, CompletionContext, CompletionSource } from './features/completions.js'
export type { PromptDefinition, PromptArgument, PromptHandler, PromptMessage, GetPromptResult } from './features/prompts.js'
export type {
  ResourceDefinition, ResourceHandler, ResourceTemplateDefinition, ResourceTemplateHandler, ResourceContents, ResourceReturn,
} from './features/resources.js'
export { InProcessBus, type NotificationBus, type ChangeEvent } from './features/subscriptions.js'
export { requestedSchema, type RequestedSchemaBuilder, type RequestedSchema, type Infer } from './elicitation/schema.js'
export type { ElicitAnswer } from './elicitation/validate.js'
export {
  McpError, ErrorCode, InvalidRequestStateError, ExpiredRequestStateError, ElicitationLedgerMismatchError,
} from './errors.js'
export type { McpRegistry } from './features/registry.js'
export type { ToolDefinition, ToolHandler, ToolReturn } from './features/tools.js'
export type { InputRequiredResult } from './mrtr/replay.js'
export type { MocapiOptions, CacheHint } from './options.js'
export type { ProtectedResourceOptions } from './transport/oauth.js'
export type { AccessCheck } from './features/catalog.js'
export type { CallToolResult, ClientCapabilities, ContentBlock, Implementation, LoggingLevel } from './protocol/wire.js'
