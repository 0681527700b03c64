/**
 * Options and definitions passed with an explicit `undefined`, as code built with `exactOptionalPropertyTypes` (see
 * ./tsconfig.json) writes them: every optional field takes it, and means what leaving the field out means.
 */
import Fastify from 'fastify'
import { expect, test } from 'tstyche'
import mocapi, {
  MemoryEventLog, MemoryReceiptStore, MemoryTaskStore, requestedSchema, type EventDefinition, type MemoryEventLogOptions, type MocapiOptions,
} from 'mocapi'
import { RedisBus, RedisEventLog, RedisReceiptStore, RedisTaskStore, type RedisEventLogOptions } from 'mocapi/redis'
import { createTestClient } from 'mocapi/testing'

const nothing = undefined

test('this folder is compiled with exactOptionalPropertyTypes', () => {
  expect<{ field?: string }>().type.not.toBeAssignableFrom({ field: nothing })
})

test("the README's options line", async () => {
  const keys = [process.env.KEY_NEW, process.env.KEY_OLD].filter((key): key is string => key !== undefined)
  const app = Fastify()
  expect(app.register(mocapi, {
    path: '/mcp',
    serverInfo: { name: 'travel', version: '1.0.0' },
    requestState: { keys: keys.length > 0 ? keys : undefined, ttl: 300_000 },
  })).type.not.toRaiseError()
})

test('every option of the plugin takes undefined', () => {
  expect<MocapiOptions>().type.toBeAssignableFrom({
    path: nothing,
    serverInfo: { name: 'travel', version: '1.0.0', title: nothing },
    instructions: nothing,
    requestState: { keys: nothing, ttl: nothing, maxRounds: nothing, maxTokenLength: nothing, tokenVersion: nothing, singleUse: nothing },
    receipts: { store: nothing, ttl: nothing, maxBytes: nothing },
    once: { maxBytes: nothing },
    principal: nothing,
    scopes: nothing,
    allowedOrigins: nothing,
    allowedHosts: nothing,
    pageSize: nothing,
    bodyLimit: nothing,
    protectedResource: {
      authorizationServers: ['https://auth.example.com'],
      resource: nothing,
      scopesSupported: nothing,
      bearerMethodsSupported: nothing,
      resourceName: nothing,
      resourceDocumentation: nothing,
    },
    bus: nothing,
    cache: { discover: { ttlMs: nothing, cacheScope: nothing }, lists: nothing, resources: nothing },
    limits: {
      uriLength: nothing,
      streamBufferBytes: nothing,
      streams: nothing,
      streamsPerCaller: nothing,
      subscriptionUris: nothing,
      batchSize: nothing,
      waitingCalls: nothing,
      waitingCallsPerCaller: nothing,
      tasksPerCaller: nothing,
      taskBytesPerCaller: nothing,
    },
    shutdownGrace: nothing,
    heartbeat: nothing,
    errors: nothing,
    legacy: nothing,
    tracing: nothing,
    tasks: { store: nothing, lease: nothing },
    elicitation: { disable: nothing },
    session: { ttl: nothing, answerTimeout: nothing },
    events: {
      log: nothing,
      heartbeat: nothing,
      pollInterval: nothing,
      maxEvents: nothing,
      maxPayloadBytes: nothing,
      subscriptionsPerPrincipal: nothing,
      webhooks: { allow: nothing, retryDelays: nothing, timeout: nothing },
    },
  })
  expect<MocapiOptions>().type.toBeAssignableFrom({
    requestState: nothing,
    once: nothing,
    cache: nothing,
    limits: nothing,
    tasks: nothing,
    elicitation: nothing,
    session: nothing,
    protectedResource: nothing,
    events: nothing,
  })
})

test('the optional fields of tools, prompts, resources, views and skills take undefined', async () => {
  const app = Fastify()
  expect(app.mcp.tool({
    name: 'book',
    title: nothing,
    description: nothing,
    inputSchema: nothing,
    outputSchema: nothing,
    annotations: { title: nothing, readOnlyHint: nothing, destructiveHint: nothing, idempotentHint: nothing, openWorldHint: nothing },
    icons: nothing,
    _meta: nothing,
    canAccess: nothing,
    task: { support: 'optional', ttl: nothing, pollInterval: nothing, rerun: nothing, detach: nothing },
    scopes: nothing,
    ui: { resourceUri: nothing, visibility: ['model'] },
  }, (args) => {
    expect(args).type.toBe<Record<never, never>>()
    return 'booked'
  })).type.not.toRaiseError()
  expect(app.mcp.prompt({
    name: 'greet',
    title: nothing,
    description: nothing,
    arguments: [{ name: 'who', title: nothing, description: nothing, required: nothing, complete: nothing }],
    icons: nothing,
    _meta: nothing,
    canAccess: nothing,
    scopes: nothing,
  }, () => 'hello')).type.not.toRaiseError()
  const optional = {
    title: nothing, description: nothing, mimeType: nothing, annotations: nothing, icons: nothing, _meta: nothing, cache: nothing, canAccess: nothing, scopes: nothing,
  }
  expect(app.mcp.resource({ uri: 'file:///a', name: 'a', size: nothing, ...optional }, () => 'a')).type.not.toRaiseError()
  expect(app.mcp.resourceTemplate({ uriTemplate: 'file:///{name}', name: 'files', complete: nothing, ...optional }, () => 'a'))
    .type.not.toRaiseError()
  const { mimeType, ...viewOptional } = optional
  expect(app.mcp.uiResource({
    uri: 'ui://card',
    name: 'card',
    html: '<p>card</p>',
    file: nothing,
    csp: { connectDomains: nothing, resourceDomains: nothing, frameDomains: nothing, baseUriDomains: nothing },
    permissions: { camera: nothing, microphone: nothing, geolocation: nothing, clipboardWrite: nothing },
    domain: nothing,
    prefersBorder: nothing,
    ...viewOptional,
  })).type.not.toRaiseError()
  expect(app.mcp.skills).type.toBeCallableWith('./skills', { prefix: nothing, scopes: nothing, canAccess: nothing, cache: nothing })
})

test('the options of ctx.elicit and of the requested-schema fields take undefined', () => {
  const app = Fastify()
  app.mcp.tool({ name: 'ask' }, async (_args, ctx) => {
    const schema = requestedSchema()
      .string('name', { title: nothing, description: nothing, minLength: nothing, maxLength: nothing, format: nothing, default: nothing, optional: nothing })
      .number('seats', { minimum: nothing, maximum: nothing, default: nothing })
      .boolean('confirm', { default: nothing })
      .choose('cabin', ['economy', 'business'], { default: nothing })
      .chooseMany('meals', ['vegan', 'kosher'], { minItems: nothing, maxItems: nothing, default: nothing })
    const answer = await ctx.elicit('Book?', schema, { key: nothing, unavailable: nothing })
    if (answer.action === 'accept') {
      expect(answer.content).type.toBe<{ name: string, seats: number, confirm: boolean, cabin: 'economy' | 'business', meals: Array<'vegan' | 'kosher'> }>()
    }
    return 'ok'
  })
})

test('the options of the task and receipt stores, the Redis bus and the test client take undefined', () => {
  expect(MemoryTaskStore).type.toBeConstructableWith({ maxTasks: nothing, maxBytes: nothing, now: nothing })
  expect(MemoryReceiptStore).type.toBeConstructableWith({ maxBytes: nothing, now: nothing })
  expect(RedisReceiptStore).type.toBeConstructableWith({ url: nothing, client: nothing, prefix: nothing, onError: nothing })
  expect(RedisBus).type.toBeConstructableWith({ url: nothing, channel: nothing, client: nothing, onError: nothing, maxPending: nothing })
  expect(RedisTaskStore).type.toBeConstructableWith({
    url: nothing, client: nothing, prefix: nothing, onError: nothing, maxTasks: nothing, maxBytes: nothing,
  })
  expect(createTestClient).type.toBeCallableWith(Fastify(), {
    capabilities: nothing,
    clientInfo: nothing,
    protocolVersion: nothing,
    headers: nothing,
    token: nothing,
    path: nothing,
    maxRounds: nothing,
    onNotification: nothing,
    onRound: nothing,
    tasks: nothing,
    taskPollInterval: nothing,
    taskTimeout: nothing,
    onTask: nothing,
  })
  const client = createTestClient(Fastify())
  expect(client.callTool).type.toBeCallableWith('book', {}, nothing, { meta: nothing, headers: nothing, idempotencyKey: nothing })
})

test('the event logs\' options, and an event definition\'s optional fields, take undefined', () => {
  const memory: MemoryEventLogOptions = { maxAge: nothing, maxBytes: nothing, now: nothing }
  const redis: RedisEventLogOptions = { url: nothing, client: nothing, prefix: nothing, maxAge: nothing, maxBytes: nothing, onError: nothing }
  expect(new MemoryEventLog(memory)).type.toBe<MemoryEventLog>()
  expect(new RedisEventLog(redis)).type.toBe<RedisEventLog>()
  expect<EventDefinition>().type.toBeAssignableFrom({
    name: 'incident.created',
    description: nothing,
    inputSchema: nothing,
    payloadSchema: nothing,
    match: nothing,
    check: nothing,
    delivery: nothing,
    scopes: nothing,
    canAccess: nothing,
    _meta: nothing,
  })
  const app = Fastify()
  expect(app.mcp.event({ name: 'incident.created', description: nothing, match: nothing, delivery: nothing, scopes: nothing })).type.not.toRaiseError()
  expect(app.mcp.emit('incident.created', {}, { eventId: nothing })).type.toBe<Promise<string>>()
})
