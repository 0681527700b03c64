import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import type { McpContext } from './context.js'
import { discover } from './features/discover.js'
import { McpRegistry } from './features/registry.js'
import { Tools } from './features/tools.js'
import { RequestStateCodec, ephemeralKey, keysFromEnv, parseKeys } from './mrtr/codec.js'
import { ReplayEngine } from './mrtr/replay.js'
import { resolveOptions, type MocapiOptions } from './options.js'
import { Dispatcher } from './protocol/dispatch.js'
import { paginate } from './features/pagination.js'
import { mcpRoutes } from './transport/route.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Registers the tools (and later prompts and resources) the MCP endpoint serves. */
    mcp: McpRegistry
  }
  interface FastifyRequest {
    /** The MCP context of the request; `null` until mocapi's preHandler fills it. */
    mcp: McpContext | null
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
  const engine = new ReplayEngine(codec, options.maxRounds)
  const tools = new Tools()
  const registered = { get tools () { return tools.size } }
  const dispatcher = new Dispatcher()
  const lists = options.cache.lists

  dispatcher.define('server/discover', {
    params: {},
    run: async () => discover(options, registered),
  })
  dispatcher.define('tools/list', {
    params: { cursor: 'string?' },
    enabled: () => tools.size > 0,
    run: async (ctx) => {
      const { page, nextCursor } = paginate(tools.list(), ctx.params.cursor, options.pageSize)
      return nextCursor === undefined
        ? { tools: page, ttlMs: lists.ttlMs, cacheScope: lists.cacheScope }
        : { tools: page, nextCursor, ttlMs: lists.ttlMs, cacheScope: lists.cacheScope }
    },
  })
  dispatcher.define('tools/call', {
    params: { name: 'string', arguments: 'object?' },
    nameField: 'name',
    interactive: true,
    enabled: () => tools.size > 0,
    run: (ctx) => tools.call(ctx, engine),
  })

  fastify.decorate('mcp', new McpRegistry(tools))
  fastify.decorateRequest('mcp', null)
  await fastify.register(mcpRoutes(options, dispatcher, engine))
}

/** The mocapi Fastify plugin: `app.register(mocapiPlugin, options)`. */
export const mocapiPlugin = fp(mocapi, { fastify: '5.x', name: 'mocapi' })
export default mocapiPlugin

export { McpContext, type ElicitOptions } from './context.js'
export { requestedSchema, type RequestedSchemaBuilder, type RequestedSchema, type Infer } from './elicitation/schema.js'
export type { ElicitAnswer } from './elicitation/validate.js'
export {
  McpError, ErrorCode, InvalidRequestStateError, ExpiredRequestStateError, ElicitationLedgerMismatchError,
} from './errors.js'
export type { McpRegistry } from './features/registry.js'
export type { ToolDefinition, ToolHandler, ToolReturn } from './features/tools.js'
export type { InputRequiredResult } from './mrtr/replay.js'
export type { MocapiOptions, CacheHint } from './options.js'
export type { CallToolResult, ClientCapabilities, ContentBlock, Implementation, LoggingLevel } from './protocol/wire.js'
