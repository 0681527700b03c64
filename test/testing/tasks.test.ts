import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { InProcessBus, McpError, MemoryTaskStore, requestedSchema, type TaskStore } from '../../lib/index.js'
import { McpClientError, accept, createTestClient, textOf } from '../../lib/testing/index.js'
import { build } from '../helpers.js'

type Test = Parameters<typeof build>[0]

/** A node with task tools; nodes given the same store and bus serve the same tasks. */
async function node (t: Test, store: TaskStore = new MemoryTaskStore(), bus = new InProcessBus()): Promise<FastifyInstance> {
  return build(t, { tasks: { store }, bus }, (app) => {
    app.mcp.tool({
      name: 'export',
      inputSchema: { type: 'object', properties: { month: { type: 'string' } }, required: ['month'] } as const,
      task: { support: 'optional', pollInterval: 40 },
    }, async (args, ctx) => {
      await new Promise((resolve) => setTimeout(resolve, 20))
      const send = await ctx.elicit(`Send ${args.month} to finance?`, requestedSchema().boolean('send'))
      ctx.progress(1, 2, 'sending')
      await new Promise((resolve) => setTimeout(resolve, 150))
      return send.action === 'accept' && send.content.send ? `sent ${args.month}` : 'kept'
    })
    app.mcp.tool({ name: 'many', task: { support: 'optional', pollInterval: 0 } }, async (_args, ctx) => {
      for (let n = 1; n <= 5; n++) await ctx.elicit(`Question ${n}?`, requestedSchema().integer('n'))
      return 'answered all'
    })
    app.mcp.tool({ name: 'broken', task: { support: 'optional', pollInterval: 0 } }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 5))
      throw new McpError(-32603, 'the export broke')
    })
    app.mcp.tool({ name: 'endless', task: { support: 'optional', pollInterval: 10 } }, async (_args, ctx) => {
      await new Promise((resolve) => ctx.signal.addEventListener('abort', resolve, { once: true }))
      return 'stopped'
    })
  })
}

t.test('a call that becomes a task is followed to its end: polled at its pollIntervalMs, its question answered', async (t) => {
  const app = await node(t)
  const seen: Array<{ at: number, status: unknown, statusMessage: unknown }> = []
  const client = createTestClient(app, {
    tasks: true,
    onTask: (task) => { seen.push({ at: Date.now(), status: task.status, statusMessage: task.statusMessage }) },
  })
  const outcome = await client.callTool('export', { month: 'March' }, () => accept({ send: true }))
  t.equal(textOf(outcome.result), 'sent March')
  t.equal(outcome.result.resultType, 'complete', 'the CallToolResult the task kept, as a call answers it')
  t.type(outcome.taskId, 'string')
  t.equal(outcome.rounds.length, 1, 'the question inside the task is a round')
  t.match(outcome.rounds[0], { inputRequests: { 'elicit-1': { params: { message: 'Send March to finance?' } } }, inputResponses: { 'elicit-1': { action: 'accept' } } })
  t.equal(outcome.roundTrips, 1 + seen.length + 1, 'the call, each tasks/get and the tasks/update')
  t.ok(seen.some((task) => task.status === 'input_required'))
  t.ok(seen.some((task) => task.statusMessage === 'sending'), 'progress shows as the status message')
  t.equal(seen.at(-1)?.status, 'completed')
  const gaps = seen.slice(1).map((task, i) => task.at - seen[i].at)
  t.ok(gaps.every((gap) => gap >= 35), `tasks/get every pollIntervalMs (40 ms) or more: ${gaps.join(', ')}`)
})

t.test('taskPollInterval overrides the task\'s; the polls go round-robin over several nodes', async (t) => {
  const store = new MemoryTaskStore()
  const bus = new InProcessBus()
  const nodes = [await node(t, store, bus), await node(t, store, bus)]
  const client = createTestClient(nodes, { tasks: true, taskPollInterval: 0 })
  const { result, taskId } = await client.callTool('export', { month: 'May' }, () => accept({ send: false }))
  t.equal(textOf(result), 'kept')
  t.equal((await client.request('tasks/get', { taskId: taskId as string })).status, 'completed', 'tasks/get by hand names the task in Mcp-Name')
})

t.test('without the tasks extension the same tool is a plain call', async (t) => {
  const app = await node(t)
  const outcome = await createTestClient(app).callTool('export', { month: 'June' }, () => accept({ send: true }))
  t.equal(textOf(outcome.result), 'sent June')
  t.equal(outcome.taskId, undefined)
  t.equal(outcome.roundTrips, 2)
})

t.test('a failed task rejects with its JSON-RPC error; a cancelled one says so', async (t) => {
  const app = await node(t)
  const client = createTestClient(app, { tasks: true })
  const failed = await client.callTool('broken').catch((error: unknown) => error)
  t.type(failed, McpClientError)
  t.match(failed, { code: -32603, message: /tools\/call "broken": task [\w-]+ failed: the export broke/ })
  let cancelling: Promise<unknown> | undefined
  const canceller = createTestClient(app, {
    tasks: true,
    onTask: (task) => { cancelling ??= canceller.request('tasks/cancel', { taskId: task.taskId as string }) },
  })
  await t.rejects(canceller.callTool('endless'), /tools\/call "endless": task [\w-]+ was cancelled/)
  t.match(await cancelling, { resultType: 'complete' }, 'the cancel was acknowledged')
})

t.test('a task is followed for taskTimeout at most, and answered for maxRounds rounds at most', async (t) => {
  const app = await node(t)
  await t.rejects(createTestClient(app, { tasks: true, taskTimeout: 100 }).callTool('endless'),
    /tools\/call "endless": task [\w-]+ is still working after 100 ms \(taskTimeout\)/)
  await t.rejects(createTestClient(app, { tasks: true, maxRounds: 3 }).callTool('many', {}, () => accept({ n: 1 })),
    /tools\/call "many" still needs input after 3 rounds \(maxRounds\)/)
})
