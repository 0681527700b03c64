import { setTimeout as sleep } from 'node:timers/promises'
import { meta, postHttp } from '../helpers.js'
import { WITH_TASKS } from '../tasks/client.js'

/** How often each effect ran, across every node of a test. */
export type Runs = Record<string, number>

/** Counts one more run of `key`; resolves the count so far, so each run's value differs. */
export function count (runs: Runs, key: string): number {
  runs[key] = (runs[key] ?? 0) + 1
  return runs[key]
}

/** `tasks/get` over real HTTP every 10 ms, for up to 3 s, until the task has `status`. */
export async function poll (url: string, taskId: string, status: string): Promise<any> {
  for (let i = 0; i < 300; i++) {
    const { body } = await postHttp(url, 'tasks/get', { taskId }, { meta: meta(WITH_TASKS) })
    if (body.result?.status === status) return body.result
    await sleep(10)
  }
  throw new Error(`task ${taskId} never reached ${status}`)
}
