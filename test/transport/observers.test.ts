import t from 'tap'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { McpContext } from '../../lib/context.js'
import { UNWATCHED, callLog, observers, type CallObserver, type CallWatch } from '../../lib/transport/observers.js'

const request = {} as FastifyRequest
const reply = {} as FastifyReply
const ctx = {} as McpContext

/** An observer that writes what it sees into `seen`, with a scope when `scoped`. */
function watcher (name: string, seen: string[], scoped: boolean): CallObserver {
  return {
    begin: () => {
      const watch: CallWatch = { ended: (end) => { seen.push(`${name} ${end.outcome}`) } }
      if (scoped) {
        watch.within = (dispatch) => {
          seen.push(`${name} in`)
          const result = dispatch()
          seen.push(`${name} out`)
          return result
        }
      }
      return watch
    },
  }
}

t.test('one observer is itself', async (t) => {
  const one = watcher('a', [], true)
  t.equal(observers([one]), one)
})

t.test('several observers are told in order, and the dispatch runs in the scopes they have, the first outermost', async (t) => {
  const seen: string[] = []
  const watch = observers([watcher('a', seen, true), watcher('b', seen, false), watcher('c', seen, true)]).begin(request, ctx)
  t.equal(watch.within?.(() => { seen.push('dispatch'); return 42 }), 42)
  watch.ended({ outcome: 'error', round: 0, code: -32603 }, reply)
  t.same(seen, ['a in', 'c in', 'dispatch', 'c out', 'a out', 'a error', 'b error', 'c error'])
})

t.test('observers with nothing to do for a call are left out of it', async (t) => {
  const idle: CallObserver = { begin: () => UNWATCHED }
  const seen: string[] = []
  const only = watcher('a', seen, false)
  const alone = observers([idle, only, idle]).begin(request, ctx)
  t.equal(alone.within, undefined, 'the one watch left has no scope')
  alone.ended({ outcome: 'complete', round: 1 }, reply)
  t.same(seen, ['a complete'])
  t.equal(observers([idle, idle]).begin(request, ctx), UNWATCHED, 'no one watches')
  const unscoped = observers([watcher('b', seen, false), idle, watcher('c', seen, false)]).begin(request, ctx)
  t.equal(unscoped.within, undefined, 'no scope when none of them has one')
  unscoped.ended({ outcome: 'tool_error', round: 1 }, reply)
  t.same(seen, ['a complete', 'b tool_error', 'c tool_error'])
})

t.test('the call log watches a call only when its logger writes info', async (t) => {
  const at = (level: string) => ({ log: { isLevelEnabled: (asked: string) => asked === level } }) as unknown as FastifyRequest
  t.equal(callLog.begin(at('warn'), ctx), UNWATCHED, 'a logger at warn')
  t.equal(callLog.begin({ log: {} } as unknown as FastifyRequest, ctx), UNWATCHED, 'a logger without levels (logger: false)')
  t.not(callLog.begin(at('info'), ctx), UNWATCHED, 'a logger at info')
})
