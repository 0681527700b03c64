// A task's writes on one node go out in order, each built from the record the one before it left: a lease renewal or
// a progress report queued behind the write that records a `ctx.once` effect must not put the record back as it was.
import t from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import { setTimeout as sleep } from 'node:timers/promises'
import mocapi, { MemoryTaskStore, type StoredTask, type TaskQuota, type TaskStore } from '../../lib/index.js'
import { KEY } from '../helpers.js'
import { status, task, until } from './client.js'

/**
 * A node's view of a shared store whose writes take `delay` ms, and which answers no write after `answered` until
 * `thaw()` (then each is stale): the node is as good as dead, and its lease lapses.
 */
function slowThenFrozen (inner: TaskStore, delay: number, answered: number) {
  let writes = 0
  let thaw = (): void => {}
  const thawed = new Promise<void>((resolve) => { thaw = resolve })
  const store: TaskStore = {
    create: (stored: StoredTask, quota: TaskQuota) => inner.create(stored, quota),
    get: (id: string) => inner.get(id),
    update: async (stored: StoredTask, quota?: TaskQuota) => {
      if (++writes > answered) {
        await thawed
        return 'stale'
      }
      await sleep(delay)
      return await inner.update(stored, quota)
    },
  }
  return { store, thaw }
}

async function node (t: { teardown: (fn: () => unknown) => void }, store: TaskStore, runs: string[], name: string, progress: boolean): Promise<FastifyInstance> {
  const app = Fastify()
  await app.register(mocapi, { requestState: { keys: [KEY] }, tasks: { store, lease: 600 } })
  app.mcp.tool({ name: 'charge', task: { support: 'required', rerun: true } }, async (_args, ctx) => {
    const charge = await ctx.once('charge', () => { runs.push(name); return `CHARGE-${name}` })
    if (progress) ctx.progress(1, 2, 'charged')
    // The first node hangs here (its later writes never land): the second finishes.
    if (name === 'a') await new Promise<void>((resolve) => { ctx.signal.addEventListener('abort', () => resolve(), { once: true }) })
    return `${charge}, finished on ${name}`
  })
  await app.ready()
  t.teardown(() => app.close())
  return app
}

for (const [queued, progress] of [['a lease renewal', false], ['a progress report', true]] as const) {
  t.test(`${queued} queued behind the write of an effect keeps the effect: a rerun elsewhere reads it back`, async (t) => {
    const inner = new MemoryTaskStore()
    const runs: string[] = []
    // Writes take 250 ms on the first node, so its renewal (every 200 ms) or its progress is queued behind the effect's.
    const frozen = slowThenFrozen(inner, 250, 2)
    const a = await node(t, frozen.store, runs, 'a', progress)
    const b = await node(t, inner, runs, 'b', false)
    t.teardown(frozen.thaw)
    const taskId = (await task(a, 'tools/call', { name: 'charge' })).body.result.taskId as string
    await until(async () => runs.length, (n) => n === 1)
    const done = await until(() => status(b, taskId), (s) => s.status === 'completed')
    t.same(done.result.content, [{ type: 'text', text: 'CHARGE-a, finished on b' }], 'the rerun read the charge back')
    t.same(runs, ['a'], 'the charge ran once')
  })
}
