import type { FastifyReply, FastifyRequest } from 'fastify'
import type { McpContext } from '../context.js'
import { noop } from '../check.js'

export interface CallEnd {
  /** `replayed`: a duplicate answered with its first's reply (receipts). */
  outcome: 'complete' | 'input_required' | 'tool_error' | 'error' | 'replayed'
  /** The round the call ran (1 for a first call); 0 for a method that takes no rounds. */
  round: number
  code?: number
  message?: string
}

export interface CallWatch {
  ended (end: CallEnd, reply: FastifyReply): void
  /** Runs the dispatch in the observer's scope (tracing: the call's span, so the handler's spans nest in it). */
  within?<T> (dispatch: () => T): T
}

export interface CallObserver {
  begin (request: FastifyRequest, ctx: McpContext): CallWatch
}

function infoEnabled (log: FastifyRequest['log']): boolean {
  const enabled = (log as { isLevelEnabled?: (level: string) => boolean }).isLevelEnabled
  return typeof enabled === 'function' && enabled.call(log, 'info')
}

function targetOf (ctx: McpContext): string | undefined {
  const target = ctx.params.name ?? ctx.params.uri
  return typeof target === 'string' ? target.slice(0, 200) : undefined
}

/** Returned for a call an observer has nothing to do for: the route skips its scope and allocates no watch. */
export const UNWATCHED: CallWatch = Object.freeze({ ended: noop })

/** One info line per call; the level is read when a call begins, so a change applies from the next call. */
export const callLog: CallObserver = {
  begin: (request, ctx) => !infoEnabled(request.log)
    ? UNWATCHED
    : {
        ended: (end, reply) => {
          request.log.info({
            mcp: {
              method: ctx.method,
              name: targetOf(ctx),
              round: end.round === 0 ? undefined : end.round,
              outcome: end.outcome,
              code: end.code,
              durationMs: Math.round(reply.elapsedTime * 100) / 100
            },
          }, 'mcp call')
        },
      },
}

/** Several observers as one, told in order, the first one's scope outermost; idle ones are left out of a call. */
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

function combined (watches: CallWatch[]): CallWatch {
  const scoped = watches.filter((watch) => watch.within !== undefined)
  return {
    ended: (end, reply) => { for (const watch of watches) watch.ended(end, reply) },
    within: scoped.length === 0
      ? undefined
      : (dispatch) => scoped.reduceRight((inner, watch) => () => watch.within!(inner), dispatch)(),
  }
}
