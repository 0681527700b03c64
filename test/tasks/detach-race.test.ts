/**
 * The detach rule (lib/tasks/tasks.ts, `Tasks#detaching`) under races, run many times over: a call becomes a task at
 * `ctx.detach()` or at its first turn neither asking nor done, and from then its questions go to the task, never back
 * to the call. Two nodes share a store and a bus; each run lands its cancel or its answer on the other node at a
 * moment of its own.
 */
import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import mocapi, { InProcessBus, MemoryTaskStore, requestedSchema } from '../../lib/index.js'
import { KEY, call } from '../helpers.js'
import { status, task, until } from './client.js'

const RUNS = 40

interface Seen { completed: number, aborted: number, asked: number }

async function twoNodes (t: Test, seen: Seen): Promise<FastifyInstance[]> {
  const bus = new InProcessBus()
  const store = new MemoryTaskStore()
  const nodes: FastifyInstance[] = []
  for (let i = 0; i < 2; i++) {
    const app = Fastify()
    await app.register(mocapi, { requestState: { keys: [KEY] }, bus, tasks: { store, lease: 5_000 } })
    const detaching = { support: 'optional', detach: true } as const
    // Detaches, then works a while its cancel may interrupt: a cancelled pass must never complete the task.
    app.mcp.tool({ name: 'work', task: detaching, inputSchema: { type: 'object', properties: { ms: { type: 'integer' } } } },
      async (args: { ms?: number }, ctx) => {
        await ctx.detach()
        try {
          await sleep(args.ms ?? 0, undefined, { signal: ctx.signal })
        } catch {
          seen.aborted++
          return 'aborted'
        }
        seen.completed++
        return 'worked'
      })
    // Asks at once after detaching, or after awaiting something that outlasts the turn the pass began in, which
    // detaches it (two `setImmediate`s: the pass's boundary comes first, whatever phase the request ran in; a timer of
    // 1 ms may fire before it on a busy loop, and then its question is, by the rule, a round of the call).
    app.mcp.tool({ name: 'ask', task: detaching, inputSchema: { type: 'object', properties: { implicit: { type: 'boolean' } } } },
      async (args: { implicit?: boolean }, ctx) => {
        if (args.implicit === true) await new Promise((resolve) => setImmediate(() => setImmediate(resolve)))
        else await ctx.detach()
        seen.asked++
        const answer = await ctx.elicit('Count?', requestedSchema().integer('n'))
        return answer.action === 'accept' ? `n=${answer.content.n}` : answer.action
      })
    await app.ready()
    t.teardown(() => app.close())
    nodes.push(app)
  }
  return nodes
}

t.test('a detach raced by a cancel on the other node: the task ends cancelled, its pass aborted, never completed', async (t) => {
  const seen: Seen = { completed: 0, aborted: 0, asked: 0 }
  const [a, b] = await twoNodes(t, seen)
  for (let run = 0; run < RUNS; run++) {
    const created = await task(a, 'tools/call', { name: 'work', arguments: { ms: 50 } })
    t.equal(created.body.result.resultType, 'task', `run ${run}: a task`)
    const taskId = created.body.result.taskId as string
    // The cancel lands at a moment of its own: at once, or after a few turns, or after the pass began its work.
    await sleep(run % 4 === 0 ? 0 : run % 4)
    const cancelled = await task(b, 'tasks/cancel', { taskId })
    t.equal(cancelled.body.result?.resultType, 'complete', `run ${run}: the cancel is taken`)
    const end = await until(() => status(a, taskId), (view) => view.status !== 'working')
    t.equal(end.status, 'cancelled', `run ${run}: cancelled, whatever the pass did after`)
  }
  await until(async () => seen.aborted + seen.completed, (count) => count === RUNS)
  t.equal(seen.aborted, RUNS, 'every pass saw its signal abort')
  t.equal(seen.completed, 0, 'no cancelled pass went on to complete')
})

t.test('a detach raced by the answer on the other node: every question goes to the task, and the other node finishes it', async (t) => {
  const seen: Seen = { completed: 0, aborted: 0, asked: 0 }
  const [a, b] = await twoNodes(t, seen)
  for (let run = 0; run < RUNS; run++) {
    const implicit = run % 2 === 1
    const created = await task(a, 'tools/call', { name: 'ask', arguments: { implicit } })
    const result = created.body.result
    t.equal(result.resultType, 'task', `run ${run} (${implicit ? 'detached by its turn' : 'ctx.detach()'}): a task, not a round`)
    const asked = await until(() => status(b, result.taskId), (view) => view.status !== 'working')
    t.equal(asked.status, 'input_required', `run ${run}: the task asks`)
    t.same(Object.keys(asked.inputRequests), ['elicit-1'])
    const answered = await task(b, 'tasks/update', { taskId: result.taskId, inputResponses: { 'elicit-1': { action: 'accept', content: { n: run } } } })
    t.equal(answered.body.result?.resultType, 'complete', `run ${run}: the answer is taken`)
    const done = await until(() => status(a, result.taskId), (view) => view.status !== 'working')
    t.equal(done.status, 'completed', `run ${run}: completed`)
    t.same(done.result?.content, [{ type: 'text', text: `n=${run}` }])
  }
  t.equal(seen.asked, 2 * RUNS, 'each task asked on its first pass and again on the pass its answer ran')
})

t.test('without the tasks extension the same tools run as calls: their questions are rounds, and detach resolves at once', async (t) => {
  const seen: Seen = { completed: 0, aborted: 0, asked: 0 }
  const [a, b] = await twoNodes(t, seen)
  const first = await call(a, 'tools/call', { name: 'ask', arguments: {} })
  t.equal(first.body.result.resultType, 'input_required')
  const retry = await call(b, 'tools/call', {
    name: 'ask',
    arguments: {},
    requestState: first.body.result.requestState,
    inputResponses: { 'elicit-1': { action: 'accept', content: { n: 7 } } },
  })
  t.same(retry.body.result.content, [{ type: 'text', text: 'n=7' }])
})
