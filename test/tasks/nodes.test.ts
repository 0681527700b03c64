import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import mocapi, { InProcessBus, MemoryTaskStore, requestedSchema, type MocapiOptions, type StoredTask, type TaskStore } from '../../lib/index.js'
import { KEY, call, capturedLogs } from '../helpers.js'
import { WITH_TASKS, status, task, until } from './client.js'

/** The nodes of one deployment: apps sharing a store, a bus and the keys, each with the same tools. */
async function fleet (t: Test, count: number,
  options: MocapiOptions = {}, store: TaskStore = new MemoryTaskStore()) {
  const bus = new InProcessBus()
  const started: Record<string, number> = {}
  const aborted: string[] = []
  const nodes: FastifyInstance[] = []
  for (let i = 0; i < count; i++) {
    const app = Fastify()
    await app.register(mocapi, { requestState: { keys: [KEY] }, bus, tasks: { store, lease: 60 }, ...options })
    app.mcp.tool({ name: 'hold', task: { support: 'optional', detach: true } }, async (_args, ctx) => {
      await ctx.detach()
      started[`node${i}`] = (started[`node${i}`] ?? 0) + 1
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, 2_000)
        ctx.signal.addEventListener('abort', () => { clearTimeout(timer); aborted.push(`node${i}`); resolve() }, { once: true })
      })
      return `held on node${i}`
    })
    app.mcp.tool({ name: 'again', task: { support: 'optional', rerun: true, detach: true } }, async (_args, ctx) => {
      await ctx.detach()
      started[`node${i}`] = (started[`node${i}`] ?? 0) + 1
      await new Promise((resolve) => setTimeout(resolve, 100))
      return `ran on node${i}`
    })
    app.mcp.tool({ name: 'ask', task: { support: 'optional', detach: true } }, async (_args, ctx) => {
      await ctx.detach()
      const answer = await ctx.elicit('Count?', requestedSchema().integer('n'))
      return answer.action === 'accept' ? `n=${answer.content.n} on node${i}` : answer.action
    })
    await app.ready()
    nodes.push(app)
    t.teardown(() => app.close())
  }
  return { nodes, started, aborted }
}

/** A `subscriptions/listen` stream over real HTTP naming `taskIds`: what it has said so far, and a wait for more. */
async function listenTo (t: Test, app: FastifyInstance, id: number, taskIds: string[], headers: Record<string, string> = {}) {
  const controller = new AbortController()
  t.teardown(() => controller.abort())
  const response = await fetch(`http://127.0.0.1:${(app.server.address() as { port: number }).port}/mcp`, {
    method: 'POST',
    signal: controller.signal,
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'subscriptions/listen',
      ...headers,
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id,
      method: 'subscriptions/listen',
      params: {
        notifications: { taskIds },
        _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': WITH_TASKS },
      },
    }),
  })
  const reader = (response.body as ReadableStream<Uint8Array>).getReader()
  const stream = {
    text: '',
    /** Reads until the text matches `pattern`, or `ms` pass (then false). */
    async seen (pattern: RegExp, ms = 3_000): Promise<boolean> {
      const deadline = Date.now() + ms
      while (!pattern.test(stream.text)) {
        const next = await Promise.race([reader.read(), new Promise<undefined>((resolve) => setTimeout(resolve, deadline - Date.now()))])
        if (next === undefined) return false
        if (next.done) throw new Error(`stream ended before ${pattern}: ${stream.text}`)
        stream.text += Buffer.from(next.value).toString()
      }
      return true
    },
  }
  return stream
}

t.test('a question answered through another node: that node runs the next pass', async (t) => {
  const { nodes: [a, b] } = await fleet(t, 2)
  const { body } = await task(a, 'tools/call', { name: 'ask' })
  const taskId = body.result.taskId
  await until(() => status(b, taskId), (s) => s.status === 'input_required')
  await task(b, 'tasks/update', { taskId, inputResponses: { 'elicit-1': { action: 'accept', content: { n: 7 } } } })
  const done = await until(() => status(a, taskId), (s) => s.status === 'completed')
  t.equal(done.result.content[0].text, 'n=7 on node1')
})

t.test('an answer that fails its schema is refused naming the field, and the task keeps waiting for a good one', async (t) => {
  const { nodes: [a, b] } = await fleet(t, 2)
  const { body } = await task(a, 'tools/call', { name: 'ask' })
  const taskId = body.result.taskId
  await until(() => status(a, taskId), (s) => s.status === 'input_required')
  const refused = await task(b, 'tasks/update', { taskId, inputResponses: { 'elicit-1': { action: 'accept', content: { n: 'seven' } } } })
  t.match(refused.body.error, { code: -32602, message: /inputResponses\.elicit-1: content\.n must be integer/ })
  t.equal((await status(a, taskId)).status, 'input_required')
  await task(b, 'tasks/update', { taskId, inputResponses: { 'elicit-1': { action: 'accept', content: { n: 7 } } } })
  const done = await until(() => status(a, taskId), (s) => s.status === 'completed')
  t.match(done.result.content[0].text, /^n=7 on node/)
})

t.test('two updates at once that both complete the answers start one pass', async (t) => {
  const { nodes: [a, b] } = await fleet(t, 2)
  const { body } = await task(a, 'tools/call', { name: 'ask' })
  const taskId = body.result.taskId
  await until(() => status(a, taskId), (s) => s.status === 'input_required')
  const answer = (n: number) => ({ taskId, inputResponses: { 'elicit-1': { action: 'accept', content: { n } } } })
  await Promise.all([task(a, 'tasks/update', answer(1)), task(b, 'tasks/update', answer(2))])
  const done = await until(() => status(a, taskId), (s) => s.status === 'completed')
  t.match(done.result.content[0].text, /^n=[12] on node[01]$/)
})

t.test('cancel through another node aborts the pass where it runs, and its result is discarded', async (t) => {
  const { nodes: [a, b], aborted } = await fleet(t, 2)
  const { body } = await task(a, 'tools/call', { name: 'hold' })
  const taskId = body.result.taskId
  await task(b, 'tasks/cancel', { taskId })
  await until(async () => aborted.length, (n) => n === 1)
  t.same(aborted, ['node0'], 'the node running the pass heard it')
  await new Promise((resolve) => setTimeout(resolve, 30))
  t.equal((await status(a, taskId)).status, 'cancelled')
})

t.test('a node that stops mid-pass: its task fails saying so, or, with rerun, runs again on the next reader', async (t) => {
  const { nodes: [a, b], started } = await fleet(t, 2)
  const held = (await task(a, 'tools/call', { name: 'hold' })).body.result.taskId
  const rerun = (await task(a, 'tools/call', { name: 'again' })).body.result.taskId
  await until(async () => started.node0, (n) => n === 2)
  await a.close()
  const failed = await until(() => status(b, held), (s) => s.status !== 'working')
  t.match(failed, { status: 'failed', error: { code: -32603, message: 'The node running this task stopped before it finished' } })
  await until(() => status(b, rerun), (s) => s.status === 'completed')
  t.equal((await status(b, rerun)).result.content[0].text, 'ran on node1')
  t.equal(started.node1, 1)
})

t.test('a lease that lapses without a close (a node killed) is recovered the same way', async (t) => {
  const store = new MemoryTaskStore()
  const { nodes: [a] } = await fleet(t, 1, {}, store)
  const { body } = await task(a, 'tools/call', { name: 'hold' })
  const taskId = body.result.taskId
  // What a killed node leaves: a working task whose lease is past, and no pass on the reading node.
  const stored = await store.get(taskId) as StoredTask
  await store.update({ ...stored, version: stored.version + 1, leaseUntil: Date.now() - 1 })
  const { nodes: [b] } = await fleet(t, 1, {}, store)
  t.equal((await status(b, taskId)).status, 'failed')
})

t.test('notifications/tasks reach listen streams that name the task, from the node that changed it', async (t) => {
  const { nodes: [a, b] } = await fleet(t, 2)
  await a.listen({ port: 0, host: '127.0.0.1' })
  const { body } = await task(b, 'tools/call', { name: 'ask' })
  const taskId = body.result.taskId
  const stream = await listenTo(t, a, 9, [taskId])
  t.ok(await stream.seen(/notifications\/subscriptions\/acknowledged/))
  await until(() => status(b, taskId), (s) => s.status === 'input_required')
  await task(b, 'tasks/update', { taskId, inputResponses: { 'elicit-1': { action: 'accept', content: { n: 3 } } } })
  t.ok(await stream.seen(/"status":"completed".*n=3/))
  t.match(stream.text, new RegExp(`"method":"notifications/tasks","params":\\{"taskId":"${taskId}","status":"working"`), 'the pass the answers started')
  t.match(stream.text, /"io.modelcontextprotocol\/subscriptionId":9/)
})

t.test('taskIds on a listen stream need the extension on that request, and are bounded', async (t) => {
  const { nodes: [a] } = await fleet(t, 1, { limits: { subscriptionUris: 2 } })
  const { body } = await call(a, 'subscriptions/listen', { notifications: { taskIds: ['x'] } })
  t.equal(body.error.code, -32021)
  const bad = await call(a, 'subscriptions/listen', { notifications: { taskIds: [5] } }, { capabilities: WITH_TASKS })
  t.equal(bad.body.error.code, -32602)
  const many = await call(a, 'subscriptions/listen', { notifications: { taskIds: ['a'.repeat(22), 'b'.repeat(22), 'c'.repeat(22)] } }, { capabilities: WITH_TASKS })
  t.match(many.body.error, { code: -32602, message: /at most 2 are accepted \(limits\.subscriptionUris\)/ })
})

t.test('a listen stream naming another caller\'s task hears nothing of it', async (t) => {
  const { nodes: [a] } = await fleet(t, 1, { principal: (request) => request.headers['x-user'] as string ?? null })
  await a.listen({ port: 0, host: '127.0.0.1' })
  const alice = await call(a, 'tools/call', { name: 'ask' }, { capabilities: WITH_TASKS, headers: { 'x-user': 'alice' } })
  const taskId = alice.body.result.taskId
  const stream = await listenTo(t, a, 1, [taskId], { 'x-user': 'bob' })
  t.ok(await stream.seen(/acknowledged/))
  await call(a, 'tasks/cancel', { taskId }, { capabilities: WITH_TASKS, headers: { 'x-user': 'alice', 'mcp-name': taskId } })
  t.equal(await stream.seen(/notifications\/tasks/, 150), false, 'bob heard nothing of alice\'s task')
})

t.test('a store that fails: task calls get a clear error, logged; the rest of the server serves on', async (t) => {
  const down: TaskStore = {
    create: async () => { throw new Error('connection refused') },
    get: async () => { throw new Error('connection refused') },
    update: async () => { throw new Error('connection refused') },
  }
  const { lines, options } = capturedLogs()
  const app = Fastify(options)
  await app.register(mocapi, { requestState: { keys: [KEY] }, tasks: { store: down } })
  app.mcp.tool({ name: 'job', task: { support: 'optional' } }, async () => {
    await new Promise((resolve) => setTimeout(resolve, 5))
    return 'done'
  })
  app.mcp.tool({ name: 'later', task: { support: 'optional', detach: true } }, async (_args, ctx) => {
    await ctx.detach()
    return 'never'
  })
  t.teardown(() => app.close())
  const created = await task(app, 'tools/call', { name: 'job' })
  t.equal(created.status, 503)
  t.match(created.body.error.message, /task store could not be reached/)
  const detached = await task(app, 'tools/call', { name: 'later' })
  t.equal(detached.status, 503, 'a call that detaches too')
  t.equal((await task(app, 'tasks/get', { taskId: 'A'.repeat(22) })).status, 503)
  t.ok(lines.some((line) => line.level === 50 && /task store failed/.test(line.msg)), 'logged at error')
  t.equal((await call(app, 'tools/call', { name: 'job' })).body.result.content[0].text, 'done', 'a plain call still works')
})

t.test('a stored task that does not open under the ring is refused like an unknown one, and logged', async (t) => {
  const store = new MemoryTaskStore()
  const { lines, options } = capturedLogs()
  const app = Fastify(options)
  await app.register(mocapi, { requestState: { keys: [KEY] }, tasks: { store } })
  app.mcp.tool({ name: 'job', task: { support: 'required' } }, () => 'done')
  t.teardown(() => app.close())
  const { body } = await task(app, 'tools/call', { name: 'job' })
  const stored = await store.get(body.result.taskId) as StoredTask
  await store.update({ ...stored, version: stored.version + 1, sealed: stored.sealed.slice(0, -4) + 'AAAA' })
  const refused = await task(app, 'tasks/get', { taskId: body.result.taskId })
  t.equal(refused.body.error.code, -32602)
  t.ok(lines.some((line) => line.level === 40 && /does not open/.test(line.msg)))
})

t.test('the default store warns once at startup when a task-capable tool is registered', async (t) => {
  const { lines, options } = capturedLogs()
  const app = Fastify(options)
  await app.register(mocapi, { requestState: { keys: [KEY] } })
  app.mcp.tool({ name: 'job', task: { support: 'required' } }, () => 'done')
  await app.ready()
  t.teardown(() => app.close())
  t.equal(lines.filter((line) => /tasks are kept in memory/.test(line.msg)).length, 1)
})

t.test('a shared task store beside an in-process bus warns once at startup: news and cancels reach other nodes late', async (t) => {
  const memory = new MemoryTaskStore()
  // Any store but the in-memory one is taken to be shared by the fleet.
  const shared: TaskStore = { create: (...args) => memory.create(...args), get: (id) => memory.get(id), update: (...args) => memory.update(...args) }
  for (const [label, bus, expected] of [['no bus', undefined, 1], ['an InProcessBus', new InProcessBus(), 1], ['a bus of its own', { publish () {}, subscribe: () => () => {} }, 0]] as const) {
    const { lines, options } = capturedLogs()
    const app = Fastify(options)
    await app.register(mocapi, { requestState: { keys: [KEY] }, tasks: { store: shared }, ...(bus === undefined ? {} : { bus }) })
    await app.ready()
    await app.close()
    const warned = lines.filter((line) => line.level === 40 && /tasks\.store is shared, but the bus is in-process/.test(line.msg))
    t.equal(warned.length, expected, label)
  }
  const { lines, options } = capturedLogs()
  const app = Fastify(options)
  await app.register(mocapi, { requestState: { keys: [KEY] }, tasks: { store: new MemoryTaskStore() } })
  await app.ready()
  await app.close()
  t.notOk(lines.some((line) => /is shared/.test(line.msg)), 'a MemoryTaskStore is one node\'s own')
})
