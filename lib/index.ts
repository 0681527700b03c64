import type { FastifyInstance } from 'fastify'
import fp from 'fastify-plugin'
import { randomBytes } from 'node:crypto'
import type { McpContext } from './context.js'
import { FormAnswers } from './elicitation/answers.js'
import { Handlers } from './features/handlers.js'
import { registered } from './features/methods.js'
import { Prompts } from './features/prompts.js'
import { McpRegistry } from './registry.js'
import { Resources } from './features/resources.js'
import { BusLink } from './bus/link.js'
import { InProcessBus } from './bus/bus.js'
import { Subscriptions } from './features/subscriptions.js'
import { Tools } from './features/tools.js'
import { Skills } from './features/skills.js'
import { Views } from './features/views.js'
import { SchemaCompiler } from './json-schema.js'
import { ACK_TIMEOUT_MS, Exchange } from './legacy/exchange.js'
import { SessionHub } from './legacy/hub.js'
import { SessionCodec } from './legacy/session.js'
import { legacyMethods } from './legacy/methods.js'
import { StreamDelivery } from './legacy/stream-delivery.js'
import { modernMethods } from './modern/methods.js'
import { RequestStateCodec } from './modern/codec.js'
import { ReplayEngine } from './replay/engine.js'
import { TokenDelivery } from './modern/token-delivery.js'
import { keyRingOf } from './seal/keys.js'
import { TaskSealer } from './tasks/record.js'
import { Receipts } from './receipts/receipts.js'
import { MemoryTaskStore, type TaskStore } from './tasks/store.js'
import { Tasks } from './tasks/tasks.js'
import { resolveOptions, type MocapiOptions } from './options.js'
import { assembleEvents } from './events/assemble.js'
import { Lifecycle } from './transport/lifecycle.js'
import { ProtectedResource } from './transport/oauth.js'
import { ElicitationPolicy } from './elicitation/policy.js'
import { Scopes } from './features/scopes.js'
import { callLog, observers } from './transport/observers.js'
import { LegacyTransport } from './legacy/transport.js'
import { ModernTransport } from './modern/transport.js'
import { mcpRoutes } from './transport/route.js'
import { callTracing } from './transport/tracing.js'

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

async function mocapi (fastify: FastifyInstance, opts: MocapiOptions): Promise<void> {
  const options = resolveOptions(opts)
  const ring = keyRingOf(options.keys, options.tokenVersion, (message) => fastify.log.warn(message))
  const compiler = new SchemaCompiler()
  const codec = new RequestStateCodec({ ring, ttl: options.ttl, maxTokenLength: options.maxTokenLength })
  const notificationBus = options.bus ?? new InProcessBus()
  const bus = new BusLink(notificationBus, fastify.log, randomBytes(9).toString('base64url'))
  const forms = new FormAnswers(compiler)
  const exchange = new Exchange(bus, fastify.log, options.answerTimeout, ACK_TIMEOUT_MS, options.limits)
  const engine = new ReplayEngine(options.maxRounds, options.bodyLimit, options.onceBytes)
  const handlers = new Handlers(engine, options.exposeErrors)
  const scopes = new Scopes(options.scopes)
  const resourceSettings = { cache: options.cache.resources, maxUriLength: options.limits.uriLength }
  const resources = new Resources(handlers, resourceSettings, scopes)
  const views = new Views(resources)
  const skills = new Skills(resources, scopes, { ...resourceSettings, pageSize: options.pageSize })
  const tools = new Tools(handlers, compiler, scopes, views)
  const prompts = new Prompts(handlers, compiler, scopes)
  const taskStore: TaskStore = options.taskStore ?? new MemoryTaskStore()
  const taskBytes = options.limits.taskBytesPerCaller
  const tasks = new Tasks({
    tools,
    store: taskStore,
    sealer: new TaskSealer(ring, Math.min(8 * options.bodyLimit, taskBytes)),
    lease: options.lease,
    quota: { tasks: options.limits.tasksPerCaller, bytes: taskBytes },
    forms,
    resultLength: options.bodyLimit,
    log: fastify.log,
    announce: (id) => { bus.publish({ kind: 'task', id, node: bus.node }) },
  })
  const subscriptions = new Subscriptions({ ...options.limits }, resources.visibility, tasks)
  const hub = new SessionHub(subscriptions, (event) => bus.publish(event), bus.node)
  const rounds = !options.singleUse
  const receiptParts = { ring, lease: options.lease, maxWaiting: options.limits.waitingCalls, rounds, log: fastify.log }
  const shared = notificationBus instanceof InProcessBus ? undefined : bus
  const receipts = options.receipts && new Receipts({ ...options.receipts, ...receiptParts, bus: shared, tasks })
  const receiver = (message: object): void => { exchange.received(message) }
  const publish = (name: string): void => { bus.publish({ kind: 'occurrence', name }) }
  const eventParts = { settings: options.events, ring, compiler, scopes, subscriptions, publish, logger: fastify.log }
  const eventing = assembleEvents(eventParts)
  const { events, eventLog, worker } = eventing
  const woken = (name: string): void => {
    events.woken(name)
    worker.wake()
  }
  bus.attach({ session: hub, tasks, streams: subscriptions, receipts, receiver, events: { woken } })
  fastify.addHook('onReady', async () => {
    await bus.ready()
    worker.start()
    tasks.warn(fastify.log, options.taskStore, notificationBus)
    receipts?.warn(notificationBus)
  })

  const features = { tools, prompts, resources, subscriptions, handlers, tasks, views, skills, ...eventing }
  const counts = registered(features)
  fastify.decorate('mcp', new McpRegistry({ ...features, announce: (event) => bus.announce(event) }))
  fastify.decorateRequest('mcp', null)
  const lifecycle = new Lifecycle(options.shutdownGrace, () => fastify.server.closeIdleConnections(), options.heartbeat)
  // Abort every open reply first (streams end, waiting calls stop, handlers get the grace): no request hangs on close.
  fastify.addHook('preClose', async () => {
    events.close()
    lifecycle.close()
  })
  fastify.addHook('onClose', async () => {
    lifecycle.closed()
    await worker.close()
    await eventLog.close?.()
    await tasks.close()
    await taskStore.close?.()
    await receipts?.close()
    await bus.close()
  })
  const protectedResource = options.protectedResource === undefined
    ? undefined
    : new ProtectedResource(options.protectedResource, options.path, options.allowedHosts, [tools, prompts, resources])
  protectedResource?.register(fastify)
  const lifecycleParts = {
    lifecycle,
    limits: { maxBufferedBytes: options.limits.streamBufferBytes },
    principal: options.principal,
    elicitation: new ElicitationPolicy(options.elicitationDisable, fastify.log),
  }
  const lists = { cache: options.cache.lists, pageSize: options.pageSize }
  const modern = new ModernTransport({
    ...lifecycleParts,
    dispatcher: modernMethods({ lists, discover: { ...options, cache: options.cache.discover } }, features, counts),
    delivery: new TokenDelivery(codec, options.singleUse ? notificationBus.claim!.bind(notificationBus) : undefined),
    forms,
    serverInfo: options.serverInfo,
    supportedVersions: options.supportedVersions,
  })
  const legacy = options.legacy
    ? new LegacyTransport({
      ...lifecycleParts,
      dispatcher: legacyMethods({ ...options, ...options.limits, lists }, features, counts, hub),
      sessions: new SessionCodec(ring, options.sessionTtl),
      hub,
      exchange,
      delivery: new StreamDelivery(exchange),
      forms,
      subscriptions,
      batchSize: options.limits.batchSize,
    })
    : undefined
  const tracing = options.tracing ? await callTracing(fastify.log) : undefined
  const observer = tracing === undefined ? callLog : observers([callLog, tracing])
  await fastify.register(mcpRoutes, {
    ...options, observer, modern, legacy, lifecycle, protectedResource, receipts,
  })
}

/** The mocapi Fastify plugin: `app.register(mocapiPlugin, options)`. */
export const mocapiPlugin = fp(mocapi, { fastify: '5.x', name: 'mocapi' })
export default mocapiPlugin

export type { McpContext, ElicitOptions, Unavailable, Recorded, Journalable } from './context.js'
export type { Completer, CompletionContext, CompletionSource } from './features/completions.js'
export type { PromptDefinition, PromptArgument, PromptHandler, PromptMessage, GetPromptResult } from './features/prompts.js'
export type {
  ResourceDefinition, ResourceHandler, ResourceTemplateDefinition, ResourceTemplateHandler, ResourceContents,
  ResourceReturn,
} from './features/resources.js'
export { InProcessBus, type NotificationBus, type BusEvent } from './bus/bus.js'
export type { ChangeEvent, SessionEvent, TaskEvent, ReceiptEvent, OccurrenceEvent } from './bus/events.js'
export { requestedSchema, type RequestedSchemaBuilder, type RequestedSchema, type Infer } from './elicitation/schema.js'
export type { ElicitAnswer } from './elicitation/answers.js'
export {
  McpError, ErrorCode, InvalidRequestStateError, ExpiredRequestStateError, ElicitationLedgerMismatchError,
  InvalidOptionError, InvalidDefinitionError, DuplicateDefinitionError, InvalidSchemaError, InvalidRequestedSchemaError,
  InvalidArgumentError, InvalidKeyError, type LedgerMismatchPart,
} from './errors.js'
export type { McpRegistry } from './registry.js'
export type {
  ToolDefinition, ToolAnnotations, ToolHandler, ToolReturn, ToolArguments, ToolStructuredContent, StructuredToolResult,
  ToolErrorResult,
} from './features/tools.js'
export type { FromSchema } from './types/json-schema.js'
export type { MocapiOptions, CacheHint } from './options.js'
export {
  MemoryTaskStore, type TaskStore, type StoredTask, type TaskStatus, type TaskQuota, type TaskWrite,
  type MemoryTaskStoreOptions,
} from './tasks/store.js'
export type { ToolTaskOptions } from './features/tool-task.js'
export {
  MemoryReceiptStore, type ReceiptStore, type StoredReceipt, type ReceiptWrite, type MemoryReceiptStoreOptions,
} from './receipts/store.js'
export type { ProtectedResourceOptions } from './transport/oauth.js'
export type { AccessCheck } from './features/catalog.js'
export { SKILLS_EXTENSION, UI_EXTENSION, VIEW_MIME_TYPE, EVENTS_EXTENSION } from './protocol/extensions.js'
export { MemoryEventLog, type EventLog, type MemoryEventLogOptions, type StoredOccurrence, type StoredSubscription, type DeliveryJob, type LogRead, type Position } from './events/log.js'
export type {
  EventDefinition, TypedEventDefinition, EventArguments, EventPayload, DeliveryMode, CheckedEvents, SchemaValue,
} from './events/types.js'
export type { EmitOptions } from './events/events.js'
export { EventsErrorCode } from './events/errors.js'
export type { SkillsOptions, SkillEntry } from './features/skills.js'
export type { ViewDefinition, ViewCsp, ViewPermissions, ViewHtml, ToolUi, ToolVisibility } from './features/views.js'
export type {
  CallToolResult, ClientCapabilities, ContentBlock, CreateMessageParams, CreateMessageResult, Implementation,
  InputRequiredResult, JsonValue, LoggingLevel, Root, SamplingMessage,
} from './protocol/wire.js'
