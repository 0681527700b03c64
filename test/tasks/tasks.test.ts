import t from 'tap'
import type { FastifyInstance } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import { McpError, requestedSchema, type MocapiOptions } from '../../lib/index.js'
import { createTestClient, textOf } from '../../lib/testing/index.js'
import { build, call, meta } from '../helpers.js'
import { WITH_TASKS, status, task, until } from './client.js'

const TASKS = { extensions: { 'io.modelcontextprotocol/tasks': {} } }

/** Polls `tasks/get` until the task leaves `working` (and `input_required`, unless `stopAt` names it). */
async function settled (app: FastifyInstance, taskId: string, stopAt = 'completed') {
  for (let i = 0; i < 200; i++) {
    const { body } = await task(app, 'tasks/get', { taskId })
    const status = body.result?.status
    if (status === undefined || (status !== 'working' && (status !== 'input_required' || stopAt === 'input_required'))) return body
    await new Promise((resolve) => setTimeout(resolve, 10))
  }
  throw new Error(`task ${taskId} did not settle`)
}

async function app (t: Parameters<typeof build>[0], options: MocapiOptions = {}) {
  return build(t, options, (app) => {
    app.mcp.tool({
      name: 'slow',
      inputSchema: { type: 'object', properties: { ms: { type: 'integer' } }, required: ['ms'] } as const,
      task: { support: 'optional', ttl: 60_000, pollInterval: 50 },
    }, async (args, ctx) => {
      // Reported once the call is a task (its first wait), so it becomes the status message.
      await new Promise((resolve) => setTimeout(resolve, 5))
      ctx.progress(1, 2, 'halfway')
      // Abortable from the start: a cancel that came during the first wait ends this one at once, leaving no timer.
      await sleep(args.ms, undefined, { signal: ctx.signal }).catch(() => { throw ctx.signal.reason })
      return `slept ${args.ms}`
    })
    app.mcp.tool({ name: 'required', task: { support: 'required' } }, () => 'done at once')
    app.mcp.tool({ name: 'broken', task: { support: 'optional' } }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 5))
      throw new McpError(-32603, 'the job broke')
    })
    app.mcp.tool({ name: 'oops', task: { support: 'optional' } }, async () => {
      await new Promise((resolve) => setTimeout(resolve, 5))
      throw new Error('a tool error')
    })
    app.mcp.tool({
      name: 'confirm',
      inputSchema: { type: 'object', properties: { file: { type: 'string' } }, required: ['file'] } as const,
      task: { support: 'optional', detach: true },
    }, async (args, ctx) => {
      await ctx.detach()
      const [a, b] = await Promise.all([
        ctx.elicit(`Delete ${args.file}?`, requestedSchema().boolean('confirm')),
        ctx.elicit('Why?', requestedSchema().string('reason')),
      ])
      return `${a.action === 'accept' ? String(a.content.confirm) : a.action} / ${b.action === 'accept' ? b.content.reason : b.action}`
    })
    app.mcp.tool({ name: 'named', task: { support: 'required', detach: true } }, async (_args, ctx) => {
      const answer = await ctx.elicit('Name?', requestedSchema().string('name'), { key: 'name' })
      await ctx.detach()
      return answer.action === 'accept' ? `Hello, ${answer.content.name}` : 'nobody'
    })
  })
}

t.test('server/discover declares the extension under capabilities.extensions, never capabilities.tasks', async (t) => {
  const { body } = await call(await app(t), 'server/discover')
  t.same(body.result.capabilities.extensions, TASKS.extensions)
  t.equal(body.result.capabilities.tasks, undefined)
  const { body: bare } = await call(await build(t), 'server/discover')
  t.equal(bare.result.capabilities.extensions, undefined, 'no task-capable tool, no extension')
})

t.test('a task: created at once, found at once, working with its status message, then completed with its result', async (t) => {
  const server = await app(t)
  const created = await task(server, 'tools/call', { name: 'slow', arguments: { ms: 100 } })
  const handle = created.body.result
  t.equal(handle.resultType, 'task')
  t.match(handle, { status: 'working', ttlMs: 60_000, pollIntervalMs: 50 })
  t.match(handle.createdAt, /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}/)
  t.notOk('result' in handle || 'requestState' in handle || 'inputRequests' in handle || 'task' in handle)
  t.equal(handle.taskId.length, 22, '128 random bits')
  const now = await task(server, 'tasks/get', { taskId: handle.taskId })
  t.equal(now.body.result.resultType, 'complete')
  t.match(now.body.result, { taskId: handle.taskId, status: 'working' })
  const done = await settled(server, handle.taskId)
  t.match(done.result, { status: 'completed', result: { content: [{ type: 'text', text: 'slept 100' }] } })
  t.equal(done.result.statusMessage, undefined, 'the progress message went with the work')
})

t.test('progress becomes the status message; no notification reaches the call', async (t) => {
  const server = await app(t)
  const { body } = await task(server, 'tools/call', { name: 'slow', arguments: { ms: 300 } })
  let seen
  for (let i = 0; i < 50 && seen === undefined; i++) {
    seen = (await task(server, 'tasks/get', { taskId: body.result.taskId })).body.result.statusMessage
    await new Promise((resolve) => setTimeout(resolve, 5))
  }
  t.equal(seen, 'halfway')
})

t.test('clients without the extension, and 2025-era clients, get the plain call; a required tool refuses them', async (t) => {
  const server = await app(t)
  const plain = await call(server, 'tools/call', { name: 'slow', arguments: { ms: 1 } })
  t.equal(plain.body.result.resultType, 'complete')
  t.equal(plain.body.result.content[0].text, 'slept 1')
  const refused = await call(server, 'tools/call', { name: 'required' })
  t.equal(refused.body.error.code, -32021)
  t.same(refused.body.error.data, { requiredCapabilities: TASKS })
  const optedIn = await call(server, 'tools/call', { name: 'slow', arguments: { ms: 1 } }, { meta: meta(TASKS) })
  t.equal(optedIn.body.result.resultType, 'task', 'the opt-in is per request, in _meta')
  const legacy = createTestClient(server, { protocolVersion: '2025-11-25' })
  t.equal(textOf((await legacy.callTool('slow', { ms: 1 })).result), 'slept 1', 'a 2025-era client gets the plain call')
  await t.rejects(legacy.callTool('required'), { code: -32602, message: /requires the extensions client capability/ }, 'and is refused a required one, in its own error shape')
  t.match((await legacy.callTool('slow', { ms: 'soon' })).result, { isError: true, content: [{ text: /^Invalid arguments/ }] }, 'its bad arguments are a tool error, as in 2026-07-28')
})

t.test('a tool that does not detach is a task before its handler runs, even one that ends at once', async (t) => {
  const server = await app(t)
  let ran = 0
  server.mcp.tool({ name: 'counted', task: { support: 'optional' } }, () => `ran ${++ran}`)
  const { body } = await task(server, 'tools/call', { name: 'required' })
  t.match(body.result, { resultType: 'task', status: 'working' })
  t.notOk('result' in body.result)
  t.equal((await settled(server, body.result.taskId)).result.result.content[0].text, 'done at once')
  const counted = await task(server, 'tools/call', { name: 'counted' })
  t.equal(counted.body.result.resultType, 'task', 'an optional tool too')
  t.equal((await settled(server, counted.body.result.taskId)).result.result.content[0].text, 'ran 1', 'its handler ran once')
})

t.test('a tool that asks without detaching asks inside its task, not in rounds of the call', async (t) => {
  const server = await app(t)
  server.mcp.tool({ name: 'asks', task: { support: 'optional' } }, async (_args, ctx) => {
    const answer = await ctx.elicit('Count?', requestedSchema().integer('n'))
    return answer.action === 'accept' ? `n=${answer.content.n}` : answer.action
  })
  const { body } = await task(server, 'tools/call', { name: 'asks' })
  t.match(body.result, { resultType: 'task', status: 'working' })
  const asked = await settled(server, body.result.taskId, 'input_required')
  t.match(asked.result, { status: 'input_required', inputRequests: { 'elicit-1': { method: 'elicitation/create', params: { message: 'Count?' } } } })
  await task(server, 'tasks/update', { taskId: body.result.taskId, inputResponses: { 'elicit-1': { action: 'accept', content: { n: 4 } } } })
  t.equal((await settled(server, body.result.taskId)).result.result.content[0].text, 'n=4')
})

t.test('a required tool that may detach but ends without it is a completed task at once', async (t) => {
  const server = await app(t)
  server.mcp.tool({
    name: 'maybe',
    inputSchema: { type: 'object', properties: { later: { type: 'boolean' } } } as const,
    task: { support: 'required', detach: true },
  }, async (args, ctx) => {
    if (args.later === true) await ctx.detach()
    return 'done here'
  })
  const { body } = await task(server, 'tools/call', { name: 'maybe', arguments: {} })
  t.match(body.result, { resultType: 'task', status: 'completed' })
  t.equal((await task(server, 'tasks/get', { taskId: body.result.taskId })).body.result.result.content[0].text, 'done here')
})

t.test('a signal taken before detach() follows the task: a cancel aborts it', async (t) => {
  const server = await app(t)
  let heard!: () => void
  const aborted = new Promise<void>((resolve) => { heard = resolve })
  server.mcp.tool({ name: 'watch', task: { support: 'optional', detach: true } }, async (_args, ctx) => {
    const signal = ctx.signal
    await ctx.detach()
    await new Promise((resolve) => signal.addEventListener('abort', resolve, { once: true }))
    heard()
    return 'stopped'
  })
  const { body } = await task(server, 'tools/call', { name: 'watch' })
  t.equal(body.result.status, 'working')
  await task(server, 'tasks/cancel', { taskId: body.result.taskId })
  const timeout = new Promise((resolve) => setTimeout(() => resolve('timeout'), 1_000))
  t.equal(await Promise.race([aborted.then(() => 'aborted'), timeout]), 'aborted', 'the signal taken before detach() aborted')
  t.equal((await task(server, 'tasks/get', { taskId: body.result.taskId })).body.result.status, 'cancelled')
})

t.test('ctx.detach() in a tool that does not declare task.detach fails at once, naming the option, in a task or a plain call', async (t) => {
  const server = await app(t)
  // Its source names detach: only the declaration counts.
  server.mcp.tool({ name: 'undeclared', task: { support: 'optional' } }, async (_args, ctx) => {
    await ctx.detach()
    return 'detached'
  })
  const expected = /ctx\.detach\(\) needs tool undeclared to declare task: \{ detach: true \}/
  const { body } = await task(server, 'tools/call', { name: 'undeclared' })
  t.equal(body.result.resultType, 'task', 'the call became a task before the handler ran')
  t.match(await until(() => status(server, body.result.taskId), (s) => s.status === 'completed'),
    { result: { isError: true, content: [{ text: expected }] } })
  const plain = await call(server, 'tools/call', { name: 'undeclared' })
  t.match(plain.body.result, { isError: true, content: [{ text: expected }] }, 'a client without the extension learns it too')
})

t.test('a task asking more in one round than its state holds fails saying so, in the task\'s own words', async (t) => {
  const server = await app(t, { limits: { taskBytesPerCaller: 3_000 } })
  server.mcp.tool({ name: 'many', task: { support: 'optional' } }, async (_args, ctx) => {
    const schema = requestedSchema().boolean('ok')
    await Promise.all(Array.from({ length: 80 }, (_, i) => ctx.elicit(`Question ${i}?`, schema)))
    return 'asked'
  })
  const { body } = await task(server, 'tools/call', { name: 'many' })
  t.match(await until(() => status(server, body.result.taskId), (s) => s.status === 'failed'),
    { error: { code: -32602, message: /^The handler asked for more input in one round than a task's state holds \(over \d+ requests\)$/ } })
})

t.test('task.detach says whether a handler detaches, where its source cannot', async (t) => {
  const server = await app(t)
  // The handler detaches inside a function of its own, so its source does not name detach.
  const later = async (ctx: { detach: () => Promise<void> }) => { await ctx.detach() }
  server.mcp.tool({ name: 'helped', task: { support: 'optional', detach: true } }, async (_args, ctx) => {
    const answer = await ctx.elicit('Name?', requestedSchema().string('name'), { key: 'name' })
    await later(ctx)
    return answer.action === 'accept' ? `Hello, ${answer.content.name}` : 'nobody'
  })
  const round = await task(server, 'tools/call', { name: 'helped' })
  t.equal(round.body.result.resultType, 'input_required', 'its question before detaching is a round of the call')
  const created = await task(server, 'tools/call', {
    name: 'helped',
    requestState: round.body.result.requestState,
    inputResponses: { name: { action: 'accept', content: { name: 'Ada' } } },
  })
  t.equal(created.body.result.resultType, 'task')
  t.equal((await settled(server, created.body.result.taskId)).result.result.content[0].text, 'Hello, Ada')
})

t.test('a JSON-RPC error fails the task with it; a thrown error completes it with isError', async (t) => {
  const server = await app(t)
  const broken = await settled(server, (await task(server, 'tools/call', { name: 'broken' })).body.result.taskId)
  t.match(broken.result, { status: 'failed', error: { code: -32603, message: 'the job broke' } })
  t.notOk('result' in broken.result)
  const oops = await settled(server, (await task(server, 'tools/call', { name: 'oops' })).body.result.taskId)
  t.match(oops.result, { status: 'completed', result: { isError: true } })
})

t.test('questions inside a task: input_required with every outstanding one; partial answers kept; the rest resume it', async (t) => {
  const server = await app(t)
  const { body } = await task(server, 'tools/call', { name: 'confirm', arguments: { file: 'a.txt' } })
  const taskId = body.result.taskId
  const waiting = await settled(server, taskId, 'input_required')
  t.equal(waiting.result.status, 'input_required')
  t.same(Object.keys(waiting.result.inputRequests), ['elicit-1', 'elicit-2'])
  t.equal(waiting.result.inputRequests['elicit-1'].params.message, 'Delete a.txt?')
  const first = await task(server, 'tasks/update', { taskId, inputResponses: { 'elicit-1': { action: 'accept', content: { confirm: true } }, unknown: { x: 1 } } })
  t.same(first.body.result, { resultType: 'complete', _meta: first.body.result._meta }, 'an empty ack')
  const half = await task(server, 'tasks/get', { taskId })
  t.equal(half.body.result.status, 'input_required')
  t.same(Object.keys(half.body.result.inputRequests), ['elicit-2'], 'the answered question is no longer asked')
  const again = await task(server, 'tasks/update', { taskId, inputResponses: { 'elicit-1': { action: 'decline' } } })
  t.equal(again.body.result.resultType, 'complete', 'an answered key is ignored')
  await task(server, 'tasks/update', { taskId, inputResponses: { 'elicit-2': { action: 'accept', content: { reason: 'old' } } } })
  const done = await settled(server, taskId)
  t.equal(done.result.result.content[0].text, 'true / old')
})

t.test('questions before detach() are rounds of the call; the task then goes on without a requestState', async (t) => {
  const server = await app(t)
  const first = await task(server, 'tools/call', { name: 'named' })
  t.equal(first.body.result.resultType, 'input_required')
  t.notOk('taskId' in first.body.result)
  const second = await task(server, 'tools/call', {
    name: 'named', requestState: first.body.result.requestState, inputResponses: { name: { action: 'accept', content: { name: 'Alice' } } },
  })
  t.equal(second.body.result.resultType, 'task')
  t.notOk('requestState' in second.body.result || 'inputRequests' in second.body.result)
  const done = await settled(server, second.body.result.taskId)
  t.equal(done.result.result.content[0].text, 'Hello, Alice')
})

t.test('cancel: an empty ack, the task cancelled at once and its signal aborted; idempotent once terminal', async (t) => {
  const server = await app(t)
  const { body } = await task(server, 'tools/call', { name: 'slow', arguments: { ms: 60_000 } })
  const taskId = body.result.taskId
  const ack = await task(server, 'tasks/cancel', { taskId })
  t.same(Object.keys(ack.body.result).sort(), ['_meta', 'resultType'])
  t.equal((await task(server, 'tasks/get', { taskId })).body.result.status, 'cancelled')
  t.equal((await task(server, 'tasks/cancel', { taskId })).body.result.resultType, 'complete', 'again: the same ack')
  // The aborted handler's failure is discarded: the task stays cancelled.
  await new Promise((resolve) => setTimeout(resolve, 20))
  t.equal((await task(server, 'tasks/get', { taskId })).body.result.status, 'cancelled')
})

t.test('a task is its caller’s: another caller, an unknown id and a bad id get the same -32602', async (t) => {
  const server = await app(t, { principal: (request) => request.headers['x-user'] as string ?? null })
  const alice = { 'x-user': 'alice' }
  const { body } = await call(server, 'tools/call', { name: 'slow', arguments: { ms: 1 } }, { capabilities: WITH_TASKS, headers: alice })
  const taskId = body.result.taskId
  t.type(taskId, 'string', JSON.stringify(body))
  const own = await call(server, 'tasks/get', { taskId }, { capabilities: WITH_TASKS, headers: { ...alice, 'mcp-name': taskId } })
  t.equal(own.body.result.taskId, taskId)
  const errors: Array<{ code: number, message: string }> = []
  for (const [id, user] of [[taskId, 'bob'], ['nope', 'alice'], ['x'.repeat(100), 'alice']]) {
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      const params = method === 'tasks/update' ? { taskId: id, inputResponses: {} } : { taskId: id }
      errors.push((await call(server, method, params, { capabilities: WITH_TASKS, headers: { 'x-user': user, 'mcp-name': id } })).body.error)
    }
  }
  t.ok(errors.every((error) => error.code === -32602 && error.message === errors[0].message), JSON.stringify(errors[0]))
})

t.test('tasks/* from a client without the extension is -32021 before any lookup; tasks/result and tasks/list are -32601', async (t) => {
  const server = await app(t)
  for (const method of ['tasks/get', 'tasks/cancel', 'tasks/update']) {
    const params = method === 'tasks/update' ? { taskId: 'gate', inputResponses: {} } : { taskId: 'gate' }
    const { body } = await call(server, method, params, { headers: { 'mcp-name': 'gate' } })
    t.equal(body.error.code, -32021, method)
    t.same(body.error.data, { requiredCapabilities: TASKS })
  }
  for (const method of ['tasks/result', 'tasks/list']) t.equal((await task(server, method, {})).body.error.code, -32601, method)
})

t.test('Mcp-Name must carry the task id', async (t) => {
  const server = await app(t)
  const { body } = await task(server, 'tools/call', { name: 'slow', arguments: { ms: 1 } })
  const wrong = await call(server, 'tasks/get', { taskId: body.result.taskId }, { capabilities: WITH_TASKS, headers: { 'mcp-name': 'another' } })
  t.equal(wrong.body.error.code, -32020)
  const missing = await call(server, 'tasks/get', { taskId: body.result.taskId }, { capabilities: WITH_TASKS })
  t.equal(missing.body.error.code, -32020)
})

t.test('a signal read before the call became a task hears the task\'s cancel, not the end of the call\'s reply', async (t) => {
  const server = await build(t)
  const heard: string[] = []
  server.mcp.tool({ name: 'early', task: { support: 'optional' } }, async (_args, ctx) => {
    const signal = ctx.signal
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, 2_000)
      signal.addEventListener('abort', () => { heard.push(String(signal.reason)); clearTimeout(timer); resolve() }, { once: true })
    })
    return 'ended'
  })
  const { body } = await task(server, 'tools/call', { name: 'early' })
  await new Promise((resolve) => setTimeout(resolve, 30))
  t.same(heard, [], 'the reply of the call ended, and the pass goes on')
  await task(server, 'tasks/cancel', { taskId: body.result.taskId })
  t.match(heard, [/the task was cancelled/])
})

t.test('a legacy task param on tools/call is ignored', async (t) => {
  const server = await app(t)
  const { body } = await call(server, 'tools/call', { name: 'slow', arguments: { ms: 1 }, task: { ttl: 60000 } })
  t.equal(body.result.content[0].text, 'slept 1')
})

t.test('tasks per caller are bounded', async (t) => {
  const server = await app(t, { limits: { tasksPerCaller: 2 } })
  for (let i = 0; i < 2; i++) t.equal((await task(server, 'tools/call', { name: 'required' })).body.result.resultType, 'task')
  const refused = await task(server, 'tools/call', { name: 'required' })
  t.equal(refused.status, 429)
  t.match(refused.body.error.message, /limits\.tasksPerCaller/)
})

t.test('a tool task option is checked at registration, naming the bad value', async (t) => {
  const server = await build(t)
  const cases: Array<[unknown, RegExp]> = [
    [true, /tool "x" task must be an object, got true/],
    [{}, /tool "x" task\.support must be 'optional' or 'required', got undefined/],
    [{ support: 'always' }, /task\.support must be 'optional' or 'required', got "always"/],
    [{ support: 'optional', ttl: 0 }, /task\.ttl must be a positive integer, got 0/],
    [{ support: 'optional', ttl: 31 * 24 * 3_600_000 }, /task\.ttl must be at most 2592000000 \(30 days\)/],
    [{ support: 'optional', pollInterval: -1 }, /task\.pollInterval must be a non-negative integer, got -1/],
    [{ support: 'optional', ttl: 1000, pollInterval: 2000 }, /task\.pollInterval must be at most its ttl \(1000\), got 2000/],
    [{ support: 'optional', rerun: 'yes' }, /task\.rerun must be true or false, got "yes"/],
    [{ support: 'optional', detach: 1 }, /task\.detach must be true or false, got 1/],
    [{ support: 'optional', extra: 1 }, /has an unknown field "extra"/],
  ]
  for (const [task, message] of cases) {
    t.throws(() => server.mcp.tool({ name: 'x', task } as never, () => 'x'), { code: 'FST_MOCAPI_INVALID_DEFINITION', message }, String(message))
  }
})
