import t from 'tap'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { McpContext } from '../../lib/context.js'
import { observers, type CallObserver, type CallWatch } from '../../lib/transport/calls.js'

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
  watch.ended({ outcome: 'error', code: -32603 }, reply)
  t.same(seen, ['a in', 'c in', 'dispatch', 'c out', 'a out', 'a error', 'b error', 'c error'])
})
