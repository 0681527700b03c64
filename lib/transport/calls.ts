/**
 * What the endpoint tells of each call: observers see a call begin (once its context is made) and
 * end (its outcome, once the reply is written). The log line is one observer; tracing is another.
 */
import type { FastifyReply, FastifyRequest } from 'fastify'
import { kCallState, type McpContext } from '../context.js'

/** How a call ended: its result, an `isError` tool result, or a JSON-RPC error with its code. */
export interface CallEnd {
  outcome: 'complete' | 'input_required' | 'tool_error' | 'error'
  /** The JSON-RPC error code, for an error. */
  code?: number
  /** The JSON-RPC error message the client got, for an error. */
  message?: string
}

/** What an observer does with a call it saw begin. */
export interface CallWatch {
  /** Told how the call ended, once its reply is written. */
  ended (end: CallEnd, reply: FastifyReply): void
  /**
   * Runs the call's dispatch in a scope of the observer's: tracing runs it in the call's span, so
   * the handler's own spans nest in it.
   */
  within?<T> (dispatch: () => T): T
}

/** Watches calls; `begin` returns what to do with the call. */
export interface CallObserver {
  begin (request: FastifyRequest, ctx: McpContext): CallWatch
}

/** Whether a logger writes info lines (Fastify's logger: false has no levels). */
function infoEnabled (log: FastifyRequest['log']): boolean {
  const enabled = (log as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled
  return typeof enabled === 'function' && enabled.call(log, 'info')
}

/** The target a call names, short enough for a log line. */
export function targetOf (ctx: McpContext): string | undefined {
  const target = ctx.params.name ?? ctx.params.uri
  return typeof target === 'string' ? target.slice(0, 200) : undefined
}

/**
 * What an observer returns for a call it has nothing to do for: the route skips its scope, and no
 * one allocates a watch.
 */
export const UNWATCHED: CallWatch = Object.freeze({ ended: () => {} })

/**
 * One info line per call: what was called, which round, how it ended, how long it took. Whether
 * info is enabled is read when the call begins: a level changed mid-call applies from the next one.
 */
export const callLog: CallObserver = {
  begin: (request, ctx) => !infoEnabled(request.log)
    ? UNWATCHED
    : {
        ended: (end, reply) => {
          const round = ctx[kCallState].round
          request.log.info({
            mcp: {
              method: ctx.method,
              name: targetOf(ctx),
              round: round === 0 ? undefined : round,
              outcome: end.outcome,
              code: end.code,
              durationMs: Math.round(reply.elapsedTime * 100) / 100
            },
          }, 'mcp call')
        },
      },
}

/**
 * Several observers as one: told in order; the dispatch runs within each one's scope, the first
 * outermost. Observers with nothing to do for a call are left out of it.
 */
export function observers (list: readonly CallObserver[]): CallObserver {
  if (list.length === 1) return list[0]
  return {
    begin: (request, ctx) => {
      let only: CallWatch | undefined
      let watches: CallWatch[] | undefined
      for (const observer of list) {
        const watch = observer.begin(request, ctx)
        if (watch === UNWATCHED) continue
        if (only === undefined) only = watch
        else (watches ??= [only]).push(watch)
      }
      if (watches === undefined) return only ?? UNWATCHED
      return combined(watches)
    },
  }
}

/** The watches of several observers as one. */
function combined (watches: CallWatch[]): CallWatch {
  const scoped = watches.filter((watch) => watch.within !== undefined)
  return {
    ended: (end, reply) => { for (const watch of watches) watch.ended(end, reply) },
    within: scoped.length === 0
      ? undefined
      : (dispatch) => scoped.reduceRight((inner, watch) => () => watch.within!(inner), dispatch)(),
  }
}
