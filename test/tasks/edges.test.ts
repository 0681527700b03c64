import t, { type Test } from 'tap'
import Fastify from 'fastify'
import mocapi, { McpError, MemoryTaskStore, requestedSchema, type MocapiOptions, type StoredTask, type TaskQuota, type TaskStore } from '../../lib/index.js'
import { createTestClient } from '../../lib/testing/index.js'
import { KEY, call, capturedLogs } from '../helpers.js'
import { WITH_TASKS, status, task, until } from './client.js'

/** A store that refuses the next `refusals` updates, as if another node always wrote first; `fail` makes calls throw. */
class Contended implements TaskStore {
  readonly inner = new MemoryTaskStore()
  refusals = 0
  fail: 'none' | 'update' = 'none'
  /** Makes every task read as gone, as one that expired. */
  gone = false
  closed = false
  create (stored: StoredTask, quota: TaskQuota) { return this.inner.create(stored, quota) }
  async get (id: string) { return this.gone ? undefined : this.inner.get(id) }
  async update (stored: StoredTask, quota?: TaskQuota) {
    if (this.fail === 'update') throw new Error('the store went away')
    if (this.refusals > 0) {
      this.refusals--
      return 'stale' as const
    }
    return this.inner.update(stored, quota)
  }

  close () { this.closed = true }
}

async function server (t: Test, options: MocapiOptions = {}, logs = capturedLogs()) {
  const app = Fastify(logs.options)
  await app.register(mocapi, { requestState: { keys: [KEY] }, ...options })
  app.mcp.tool({ name: 'ask', task: { support: 'optional', detach: true } }, async (_args, ctx) => {
    await ctx.detach()
    ctx.log('info', 'no one hears this in a task')
    const answer = await ctx.elicit('Count?', requestedSchema().integer('n'))
    return answer.action === 'accept' ? `n=${answer.content.n}` : answer.action
  })
  app.mcp.tool({ name: 'steps', task: { support: 'optional', detach: true } }, async (_args, ctx) => {
    await ctx.detach()
    ctx.progress(1)
    await new Promise((resolve) => setTimeout(resolve, 40))
    ctx.progress(2, 3)
    ctx.progress(3, 3, 'nearly')
    await new Promise((resolve) => setTimeout(resolve, 40))
    return 'stepped'
  })
  app.mcp.tool({ name: 'wait', task: { support: 'optional', detach: true } }, async (_args, ctx) => {
    await ctx.detach()
    await new Promise((resolve, reject) => {
      const timer = setTimeout(resolve, 2_000)
      ctx.signal.addEventListener('abort', () => { clearTimeout(timer); reject(new McpError(-32603, 'stopped')) }, { once: true })
    })
    return 'waited'
  })
  app.mcp.tool({ name: 'big', task: { support: 'optional', detach: true } }, async (_args, ctx) => {
    await ctx.detach()
    return 'x'.repeat(3000)
  })
  app.mcp.tool({ name: 'checked', task: { support: 'optional', detach: true } }, async (_args, ctx) => {
    const answer = await ctx.elicit('Count?', requestedSchema().integer('n'))
    await ctx.detach()
    return answer.action
  })
  await app.ready()
  t.teardown(() => app.close())
  return { app, lines: logs.lines }
}

t.test('a 2025-era client gets a task-capable tool synchronously', async (t) => {
  const { app } = await server(t)
  const client = createTestClient(app, { protocolVersion: '2025-11-25' })
  const { result } = await client.callTool('steps', {})
  t.equal(result.content[0].type === 'text' && result.content[0].text, 'stepped')
})

t.test('progress without a message reads as counts; progress in one turn is written once; logs reach no one', async (t) => {
  const { app } = await server(t)
  const { body } = await task(app, 'tools/call', { name: 'steps' })
  const messages = new Set<string>()
  await until(() => status(app, body.result.taskId), (s) => {
    if (s.statusMessage !== undefined) messages.add(s.statusMessage)
    return s.status === 'completed'
  })
  t.ok(messages.has('1'), [...messages].join(' | '))
  t.ok(messages.has('nearly'))
  t.notOk(messages.has('2 of 3'), 'the report made in the same turn as a later one is overtaken')
})

t.test('an MRTR round refused before the call became a task is the call\'s error', async (t) => {
  const { app } = await server(t)
  const first = await task(app, 'tools/call', { name: 'checked' })
  const { body } = await task(app, 'tools/call', {
    name: 'checked', requestState: first.body.result.requestState, inputResponses: { 'elicit-1': { action: 'accept', content: { n: 'x' } } },
  })
  t.equal(body.error.code, -32602)
})

t.test('updates and cancels that keep losing the race end in a clear error', async (t) => {
  const store = new Contended()
  const { app } = await server(t, { tasks: { store } })
  const { body } = await task(app, 'tools/call', { name: 'ask' })
  const taskId = body.result.taskId
  await until(() => status(app, taskId), (s) => s.status === 'input_required')
  store.refusals = 8
  const update = await task(app, 'tasks/update', { taskId, inputResponses: { 'elicit-1': { action: 'accept', content: { n: 1 } } } })
  t.equal(update.status, 503)
  t.match(update.body.error.message, /changed too often/)
  store.refusals = 8
  const cancel = await task(app, 'tasks/cancel', { taskId })
  t.equal(cancel.status, 503)
  store.refusals = 1
  t.equal((await task(app, 'tasks/update', { taskId, inputResponses: { 'elicit-1': { action: 'accept', content: { n: 2 } } } })).body.result.resultType,
    'complete', 'one lost race is tried again')
  t.equal((await until(() => status(app, taskId), (s) => s.status === 'completed')).result.content[0].text, 'n=2')
  const { body: waiting } = await task(app, 'tools/call', { name: 'ask' })
  await until(() => status(app, waiting.result.taskId), (s) => s.status === 'input_required')
  store.refusals = 1
  t.equal((await task(app, 'tasks/cancel', { taskId: waiting.result.taskId })).body.result.resultType, 'complete')
})

t.test('a store that fails on update: the call that needs it gets 503, logged; a pass whose outcome cannot be stored is logged', async (t) => {
  const store = new Contended()
  const { app, lines } = await server(t, { tasks: { store } })
  const { body } = await task(app, 'tools/call', { name: 'steps' })
  store.fail = 'update'
  t.equal((await task(app, 'tasks/cancel', { taskId: body.result.taskId })).status, 503)
  await until(async () => lines.some((line) => /could not be stored/.test(line.msg)), Boolean)
  t.ok(lines.some((line) => line.level === 50 && /failed to update a task/.test(line.msg)))
})

t.test('the store is closed with the server', async (t) => {
  const store = new Contended()
  const { app } = await server(t, { tasks: { store } })
  await app.close()
  t.equal(store.closed, true)
})

t.test('a result larger than bodyLimit fails the task saying so', async (t) => {
  const { app } = await server(t, { bodyLimit: 2048 })
  const { body } = await task(app, 'tools/call', { name: 'big' })
  const failed = await until(() => status(app, body.result.taskId), (s) => s.status !== 'working')
  t.match(failed.error, { code: -32603, message: /more than a task keeps \(bodyLimit\)/ })
})

t.test('a pass that throws after its task was cancelled: the error is discarded', async (t) => {
  const { app } = await server(t)
  const { body } = await task(app, 'tools/call', { name: 'wait' })
  await task(app, 'tasks/cancel', { taskId: body.result.taskId })
  await new Promise((resolve) => setTimeout(resolve, 30))
  t.equal((await status(app, body.result.taskId)).status, 'cancelled')
})

t.test('a pass of a tool removed since the task began fails the task', async (t) => {
  const { app } = await server(t)
  const { body } = await task(app, 'tools/call', { name: 'ask' })
  const taskId = body.result.taskId
  await until(() => status(app, taskId), (s) => s.status === 'input_required')
  t.equal(app.mcp.removeTool('ask'), true)
  await task(app, 'tasks/update', { taskId, inputResponses: { 'elicit-1': { action: 'accept', content: { n: 1 } } } })
  t.match(await until(() => status(app, taskId), (s) => s.status === 'failed'), { error: { code: -32602, message: 'Unknown tool: ask' } })
  t.equal((await call(app, 'server/discover')).body.result.capabilities.extensions['io.modelcontextprotocol/tasks'] !== undefined, true,
    'other task-capable tools keep the extension')
})

t.test('a lapsed lease on the node that still runs the pass is left alone', async (t) => {
  const store = new MemoryTaskStore()
  const { app } = await server(t, { tasks: { store } })
  const { body } = await task(app, 'tools/call', { name: 'wait' })
  const stored = await store.get(body.result.taskId) as StoredTask
  await store.update({ ...stored, version: stored.version + 1, leaseUntil: Date.now() - 1 })
  t.equal((await status(app, body.result.taskId)).status, 'working')
})

t.test('two readers of a lapsed lease: one recovers the task, the other reads what it wrote', async (t) => {
  const store = new Contended()
  const { app } = await server(t, { tasks: { store } })
  const { body } = await task(app, 'tools/call', { name: 'ask' })
  const taskId = body.result.taskId
  await until(() => status(app, taskId), (s) => s.status === 'input_required')
  const stored = await store.get(taskId) as StoredTask
  await store.inner.update({ ...stored, version: stored.version + 1, status: 'working', leaseUntil: Date.now() - 1 })
  store.refusals = 1
  t.equal((await status(app, taskId)).status, 'working', 'the write lost, and the task read again')
  await store.inner.update({ ...stored, version: stored.version + 2, status: 'working', leaseUntil: Date.now() - 1 })
  store.refusals = 1
  const read = store.get.bind(store)
  let reads = 0
  store.get = async (id) => ++reads === 2 ? undefined : read(id)
  t.equal((await status(app, taskId)).status, 'working', 'gone on the second read: the task as it was first read')
})

t.test('a pass that breaks outside the handler (a result JSON cannot write) fails its task with an internal error, logged', async (t) => {
  const { app, lines } = await server(t)
  app.mcp.tool({ name: 'bigint', task: { support: 'optional', detach: true } }, async (_args, ctx) => {
    await ctx.detach()
    return { n: 10n } as never
  })
  const { body } = await task(app, 'tools/call', { name: 'bigint' })
  t.match(await until(() => status(app, body.result.taskId), (s) => s.status === 'failed'), { error: { code: -32603, message: 'Internal error' } })
  t.ok(lines.some((line) => line.level === 50 && /a task pass failed/.test(line.msg)))
})

t.test('a log a task pass writes reaches no one, even when its call asked for a level', async (t) => {
  const { app } = await server(t)
  const meta = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': WITH_TASKS,
    'io.modelcontextprotocol/logLevel': 'debug',
  }
  const { body } = await call(app, 'tools/call', { name: 'ask' }, { meta })
  t.equal(body.result.resultType, 'task')
  t.equal((await until(() => status(app, body.result.taskId), (s) => s.status === 'input_required')).status, 'input_required')
})

t.test('a bound caller\'s task runs its later passes as that caller', async (t) => {
  const { app } = await server(t, { principal: (request) => request.headers['x-user'] as string ?? null })
  app.mcp.tool({ name: 'whoami', task: { support: 'optional', detach: true } }, async (_args, ctx) => {
    await ctx.detach()
    await ctx.elicit('Go?', requestedSchema().boolean('go'))
    return `you are ${String(ctx.principal)}`
  })
  const alice = { 'x-user': 'alice' }
  const { body } = await task(app, 'tools/call', { name: 'whoami' }, alice)
  const taskId = body.result.taskId
  await until(() => status(app, taskId, alice), (s) => s.status === 'input_required')
  await task(app, 'tasks/update', { taskId, inputResponses: { 'elicit-1': { action: 'accept', content: { go: true } } } }, alice)
  t.equal((await until(() => status(app, taskId, alice), (s) => s.status === 'completed')).result.content[0].text, 'you are alice')
})
