import type { McpContext } from '../context.js'
import type { InputRequiredResult, ReplayEngine } from '../mrtr/replay.js'

/** Runs a tool, prompt or resource handler once under the replay engine, bound to `ctx`. */
export function runInteractive<T> (ctx: McpContext, engine: ReplayEngine, label: string, fn: () => T | Promise<T>): Promise<{ complete: T } | InputRequiredResult> {
  return engine.run((pass) => {
    ctx.pass = pass
    return Promise.resolve(fn())
  }, { method: ctx.method, params: ctx.params, principal: ctx.principal, restored: ctx.restored, log: ctx.request.log, label })
}
