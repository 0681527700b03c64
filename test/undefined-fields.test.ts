// An optional field given as `undefined` (as code built with exactOptionalPropertyTypes passes it) means the field is
// left out: the options, definitions and stores below take it and behave as their defaults.
import t from 'tap'
import Fastify from 'fastify'
import { mkdtemp, mkdir, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import path from 'node:path'
import mocapi, { MemoryReceiptStore, MemoryTaskStore, requestedSchema, type StoredTask } from '../lib/index.js'
import { RedisBus, RedisReceiptStore, RedisTaskStore } from '../lib/redis/index.js'
import { createTestClient } from '../lib/testing/index.js'
import { KEY, build, call } from './helpers.js'

const nothing = undefined

t.test('every option given as undefined takes its default', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(mocapi, {
    path: nothing,
    serverInfo: { name: 'travel', version: '1.0.0', title: nothing },
    instructions: nothing,
    requestState: { keys: [KEY], ttl: nothing, maxRounds: nothing, maxTokenLength: nothing, tokenVersion: nothing, singleUse: nothing },
    receipts: { store: nothing, ttl: nothing, maxBytes: nothing },
    once: { maxBytes: nothing },
    principal: nothing,
    scopes: nothing,
    allowedOrigins: nothing,
    allowedHosts: nothing,
    pageSize: nothing,
    bodyLimit: nothing,
    protectedResource: nothing,
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
  })
  app.mcp.tool({ name: 'book' }, async (_args, ctx) => {
    const answer = await ctx.elicit('Book?', requestedSchema().boolean('confirm'))
    return answer.action === 'accept' ? `confirmed: ${answer.content.confirm}` : answer.action
  })
  const discovered = await call(app, 'server/discover')
  t.equal(discovered.status, 200, 'the endpoint is at /mcp')
  t.same(discovered.body.result._meta['io.modelcontextprotocol/serverInfo'], { name: 'travel', version: '1.0.0' })
  t.same([discovered.body.result.ttlMs, discovered.body.result.cacheScope], [3_600_000, 'public'])
  t.notOk('instructions' in discovered.body.result)
  t.same(discovered.body.result.supportedVersions, ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'], 'legacy: serve')
  const client = createTestClient(app)
  const { result } = await client.callTool('book', {}, () => ({ action: 'accept', content: { confirm: true } }))
  t.same(result.content, [{ type: 'text', text: 'confirmed: true' }], 'elicitation is allowed, and a round trip works')
})

t.test("the README's options line, without keys, falls back to an ephemeral key", async (t) => {
  const keys: string[] = []
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(mocapi, { requestState: { keys: keys.length > 0 ? keys : undefined, ttl: 300_000 } })
  app.mcp.tool({ name: 'ping' }, () => 'pong')
  const { result } = await createTestClient(app).callTool('ping')
  t.same(result.content, [{ type: 'text', text: 'pong' }])
})

t.test('tool, prompt, resource, template and view definitions list as their twins without the undefined fields', async (t) => {
  const optional = { title: nothing, description: nothing, icons: nothing, _meta: nothing, canAccess: nothing, scopes: nothing }
  const app = await build(t, {}, (app) => {
    app.mcp.uiResource({
      uri: 'ui://card',
      name: 'card',
      html: '<p>card</p>',
      file: nothing,
      csp: { connectDomains: nothing, resourceDomains: nothing, frameDomains: nothing, baseUriDomains: nothing },
      permissions: { camera: nothing, microphone: nothing, geolocation: nothing, clipboardWrite: nothing },
      domain: nothing,
      prefersBorder: nothing,
      annotations: nothing,
      cache: nothing,
      ...optional,
    })
    app.mcp.uiResource({ uri: 'ui://twin', name: 'card', html: '<p>card</p>', csp: {}, permissions: {} })
    app.mcp.tool({
      name: 'book',
      ...optional,
      inputSchema: nothing,
      outputSchema: nothing,
      annotations: { title: nothing, readOnlyHint: nothing, destructiveHint: nothing, idempotentHint: nothing, openWorldHint: nothing },
      task: { support: 'optional', ttl: nothing, pollInterval: nothing, rerun: nothing, detach: nothing },
      ui: { resourceUri: 'ui://card', visibility: nothing },
    }, () => 'booked')
    app.mcp.tool({ name: 'twin', annotations: {}, task: { support: 'optional' }, ui: { resourceUri: 'ui://card' } }, () => 'booked')
    app.mcp.prompt({
      name: 'greet',
      ...optional,
      arguments: [{ name: 'who', title: nothing, description: nothing, required: nothing, complete: nothing }],
    }, (args) => `hello ${args.who}`)
    app.mcp.prompt({ name: 'twin', arguments: [{ name: 'who' }] }, (args) => `hello ${args.who}`)
    app.mcp.resource({ uri: 'file:///a', name: 'a', mimeType: nothing, size: nothing, annotations: nothing, cache: nothing, ...optional }, () => 'a')
    app.mcp.resource({ uri: 'file:///twin', name: 'a' }, () => 'a')
    app.mcp.resourceTemplate({ uriTemplate: 'file:///t/{name}', name: 't', mimeType: nothing, annotations: nothing, complete: nothing, cache: nothing, ...optional }, () => 't')
    app.mcp.resourceTemplate({ uriTemplate: 'file:///twin/{name}', name: 't' }, () => 't')
  })
  const twins = async (method: string, field: string, key: string): Promise<void> => {
    const [given, twin] = (await call(app, method, {}, { capabilities: { extensions: { 'io.modelcontextprotocol/tasks': {} } } })).body.result[field]
    t.same({ ...given, [key]: 'x' }, { ...twin, [key]: 'x' }, `${method}: the same but for the ${key}`)
  }
  await twins('tools/list', 'tools', 'name')
  await twins('prompts/list', 'prompts', 'name')
  await twins('resources/templates/list', 'resourceTemplates', 'uriTemplate')
  const [view, viewTwin, resource, resourceTwin] = (await call(app, 'resources/list')).body.result.resources
  t.same({ ...view, uri: 'x' }, { ...viewTwin, uri: 'x' }, 'an undefined permission or CSP list is none')
  t.same({ ...resource, uri: 'x' }, { ...resourceTwin, uri: 'x' })
  const read = await call(app, 'resources/read', { uri: 'file:///a' })
  t.same([read.body.result.ttlMs, read.body.result.cacheScope], [60_000, 'public'], 'cache: undefined is the default cache')
  const prompt = await call(app, 'prompts/get', { name: 'greet', arguments: { who: 'Ada' } })
  t.same(prompt.body.result.messages, [{ role: 'user', content: { type: 'text', text: 'hello Ada' } }])
})

t.test('skills options, elicit options and the requested-schema options given as undefined take their defaults', async (t) => {
  const root = await mkdtemp(path.join(tmpdir(), 'mocapi-undefined-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  await mkdir(path.join(root, 'tidy'))
  await writeFile(path.join(root, 'tidy', 'SKILL.md'), '---\nname: tidy\ndescription: Tidies\n---\n# tidy\n')
  const app = await build(t, {}, async (app) => {
    t.same(await app.mcp.skills(root, { prefix: nothing, scopes: nothing, canAccess: nothing, cache: nothing }), ['skill://tidy/SKILL.md'])
    app.mcp.tool({ name: 'ask' }, async (_args, ctx) => {
      const schema = requestedSchema().string('name', { title: nothing, minLength: nothing, format: nothing, default: nothing, optional: nothing })
      const answer = await ctx.elicit('Name?', schema, { key: nothing, unavailable: nothing })
      return answer.action
    })
  })
  const clientOptions = { capabilities: nothing, clientInfo: nothing, protocolVersion: nothing, headers: nothing, token: nothing, path: nothing }
  const handlers = { maxRounds: nothing, onNotification: nothing, onRound: nothing, tasks: nothing, taskPollInterval: nothing, taskTimeout: nothing, onTask: nothing }
  const { rounds } = await createTestClient(app, { ...clientOptions, ...handlers }).callTool('ask', {}, () => ({ action: 'decline' }), { meta: nothing, headers: nothing, idempotencyKey: nothing })
  const asked = rounds[0].inputRequests['elicit-1'] as any
  t.ok(asked, 'key: undefined is the default key')
  t.same(asked.params.requestedSchema, { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }, 'optional: undefined is required')
  const skill = await call(app, 'skills/get', { uri: 'skill://tidy/SKILL.md' })
  t.same([skill.body.result.ttlMs, skill.body.result.cacheScope], [60_000, 'public'])
})

t.test('the task and receipt stores and the Redis bus take undefined options', async (t) => {
  const store = new MemoryTaskStore({ maxTasks: nothing, maxBytes: nothing, now: nothing })
  const now = Date.now()
  const task: StoredTask = { id: 'a'.repeat(22), version: 1, status: 'working', createdAt: now, updatedAt: now, expiresAt: now + 60_000, owner: 'ada', sealed: 'x' }
  t.equal(await store.create(task, { tasks: 1, bytes: 10 }), 'written')
  t.equal((await store.get(task.id))?.id, task.id, 'now: undefined is Date.now')
  // Neither connects before its first use, so no Redis server is needed to see them take the options.
  const bus = new RedisBus({ url: nothing, channel: nothing, client: nothing, onError: nothing, maxPending: nothing })
  const tasks = new RedisTaskStore({ url: nothing, client: nothing, prefix: nothing, onError: nothing, maxTasks: nothing, maxBytes: nothing })
  const receipts = new RedisReceiptStore({ url: nothing, client: nothing, prefix: nothing, onError: nothing })
  await bus.close()
  await tasks.close()
  await receipts.close()
  const memory = new MemoryReceiptStore({ maxBytes: nothing, now: nothing })
  t.equal(await memory.claim('n', 'h'.repeat(22), 'fp', 60_000), 'claimed')
  t.match(await memory.read('n'), { state: 'running' }, 'now: undefined is Date.now')
})
