import t from 'tap'
import Fastify, { type FastifyInstance } from 'fastify'
import mocapi, { requestedSchema, type MocapiOptions } from '../../lib/index.js'
import { KEY } from '../helpers.js'
import { openSession, type LegacyCall } from '../legacy/client.js'

type Test = { teardown: (fn: () => unknown) => void }

async function served (t: Test, options: MocapiOptions): Promise<{ app: FastifyInstance, url: string }> {
  const app = Fastify({ forceCloseConnections: true })
  await app.register(mocapi, {
    requestState: { keys: [KEY] },
    principal: (request) => (request.headers['x-user'] as string | undefined) ?? null,
    // A call that should have been refused fails the test in seconds rather than hang.
    session: { answerTimeout: 20_000 },
    ...options,
  })
  app.mcp.tool({ name: 'asks' }, async (_args, ctx) => (await ctx.elicit('Go?', requestedSchema().boolean('go'))).action)
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, url: `http://127.0.0.1:${(app.server.address() as { port: number }).port}/mcp` }
}

/**
 * A call of `asks` that waits, unanswered, until `answer` is called (with nothing: the client
 * never answers); `asked` resolves once its question arrived.
 */
function waitingCall (session: Awaited<ReturnType<typeof openSession>>) {
  let arrived!: () => void
  let release!: (answer?: object) => void
  const asked = new Promise<void>((resolve) => { arrived = resolve })
  const answered = new Promise<object | undefined>((resolve) => { release = resolve })
  const done: Promise<LegacyCall> = session.call('tools/call', { name: 'asks' }, async () => {
    arrived()
    return await answered
  })
  return { asked, done, answer: release }
}

t.test('2025-era calls waiting for an answer are bounded per caller and per process, and past a bound nothing waits', async (t) => {
  const { app, url } = await served(t, { limits: { waitingCallsPerCaller: 2, waitingCalls: 3 } })
  const alice = await openSession(url, { headers: { 'x-user': 'alice' } })
  const bob = await openSession(url, { headers: { 'x-user': 'bob' } })
  const first = waitingCall(alice)
  const second = waitingCall(alice)
  await Promise.all([first.asked, second.asked])

  const over = await alice.call('tools/call', { name: 'asks' })
  t.equal(over.status, 200, 'in-band, as every error of a 2025-era call that reached its method')
  t.same(over.response.error, {
    code: -32600,
    message: 'tool asks cannot wait for the client\'s answer: 2 calls of this caller wait already, the most accepted (limits.waitingCallsPerCaller); answer or cancel one, then call again',
  }, 'one past the caller\'s bound')
  t.same(over.requests, [], 'no question was sent')

  const third = waitingCall(bob)
  await third.asked
  const full = await bob.call('tools/call', { name: 'asks' })
  t.same(full.response.error, {
    code: -32600,
    message: 'tool asks cannot wait for the client\'s answer: 3 calls wait on this server already, the most it accepts (limits.waitingCalls); try again later',
  }, 'one past the process\'s bound, for a caller under their own')
  t.same(full.requests, [])

  first.answer({ action: 'accept', content: { go: true } })
  t.equal((await first.done).response.result.content[0].text, 'accept')
  const again = waitingCall(alice)
  await again.asked
  t.pass('an answered call gives its place back')

  await app.close()
  for (const call of [second, third, again]) {
    call.answer()
    t.match((await call.done).response.error.message, /stopped waiting for the client's answer: the server is shutting down/)
  }
})

t.test('anonymous callers of one address share the per-caller bound, whatever their sessions', async (t) => {
  const { app, url } = await served(t, { limits: { waitingCallsPerCaller: 1 } })
  const one = await openSession(url)
  const two = await openSession(url)
  const waiting = waitingCall(one)
  await waiting.asked
  t.match((await two.call('tools/call', { name: 'asks' })).response.error,
    { code: -32600, message: /limits\.waitingCallsPerCaller/ }, 'a new session is not a new caller')
  const alice = await openSession(url, { headers: { 'x-user': 'alice' } })
  const hers = waitingCall(alice)
  await hers.asked
  t.pass('a caller with a principal counts apart')
  await app.close()
  waiting.answer()
  hers.answer()
  await Promise.all([waiting.done, hers.done])
})

t.test('the waiting-call limits are checked at registration', async (t) => {
  for (const [option, value] of [['waitingCalls', 0], ['waitingCallsPerCaller', 1.5], ['waitingCalls', '10']] as const) {
    const app = Fastify()
    t.teardown(() => app.close())
    await t.rejects(async () => {
      await app.register(mocapi, { requestState: { keys: [KEY] }, limits: { [option]: value } })
      await app.ready()
    }, { code: 'FST_MOCAPI_INVALID_OPTION', message: new RegExp(`^mocapi: limits\\.${option} must be a positive integer, got `) }, `limits.${option}: ${JSON.stringify(value)}`)
  }
})
