import t from 'tap'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import http from 'node:http'
import { once } from 'node:events'
import { connect } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import { build, rpc } from '../helpers.js'

type Test = Parameters<typeof build>[0]
type Stage = 'body' | 'preValidation' | 'preHandler' | 'canAccess' | 'handler'

/** What a call of `never` came to: whether its handler ran, the reason its signal gave, and the reply mocapi sent. */
interface Outcome {
  ran: boolean
  reason: string | undefined
  reply: any
}

/** The headers and body of a `tools/call` of `name` in `era`; a 2025-era one opens its session first. */
async function callOf (era: 'modern' | 'legacy', port: number, name = 'never', id = 1): Promise<{ headers: Record<string, string>, body: string }> {
  if (era === 'modern') {
    const request = rpc('tools/call', { name }, { id })
    return { headers: request.headers as Record<string, string>, body: JSON.stringify(request.payload) }
  }
  const init = await fetch(`http://127.0.0.1:${port}/mcp`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'leaves', version: '1' } } }),
  })
  await init.body?.cancel()
  const headers = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': '2025-11-25',
    'mcp-session-id': init.headers.get('mcp-session-id') as string,
  }
  return { headers, body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name } }) }
}

/**
 * A server whose tool `never` returns only once its signal aborts, and whose client gives up at
 * `stage` of its call: before its body is complete, in one of the app's hooks, in the tool's
 * access check, or while the handler runs. The client leaves as soon as the request reached that
 * stage; the server goes on from there once it saw the client leave.
 */
async function giveUp (t: Test, era: 'modern' | 'legacy', stage: Stage): Promise<Outcome> {
  const outcome: Outcome = { ran: false, reason: undefined, reply: undefined }
  let reached!: () => void
  const arrived = new Promise<void>((resolve) => { reached = resolve })
  let replied!: (payload: string) => void
  const reply = new Promise<string>((resolve) => { replied = resolve })
  /** The socket of the request under test has closed: the server has seen the client leave. */
  const left = (request: FastifyRequest) => once(request.raw.socket, 'close')
  const app = await build(t, { shutdownGrace: 200 }, (app: FastifyInstance) => {
    const underTest = (request: FastifyRequest) => request.headers['x-stage'] !== undefined
    app.addHook('preParsing', async (request, _reply, payload) => {
      if (underTest(request) && stage === 'body') reached()
      return payload
    })
    for (const hook of ['preValidation', 'preHandler'] as const) {
      app.addHook(hook, async (request: FastifyRequest, _reply: FastifyReply) => {
        if (!underTest(request) || stage !== hook) return
        reached()
        await left(request)
      })
    }
    app.addHook('onSend', async (request, _reply, payload) => {
      if (underTest(request)) replied(String(payload))
      return payload
    })
    app.mcp.tool({
      name: 'never',
      canAccess: async (ctx) => {
        if (stage === 'canAccess') {
          reached()
          await left(ctx.request)
        }
        return true
      },
    }, async (_args, ctx) => {
      outcome.ran = true
      if (stage === 'handler') reached()
      outcome.reason = await new Promise<string>((resolve) => ctx.signal.addEventListener('abort', () => resolve((ctx.signal.reason as Error).message)))
      return 'stopped'
    })
  }, { forceCloseConnections: true })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const port = (app.server.address() as { port: number }).port

  const { headers, body } = await callOf(era, port)
  const request = http.request({
    host: '127.0.0.1', port, path: '/mcp', method: 'POST', agent: false, headers: { ...headers, 'x-stage': stage, 'content-length': Buffer.byteLength(body) },
  })
  request.on('error', () => {})
  if (stage === 'body') request.write(body.slice(0, 10))
  else request.end(body)
  await arrived
  request.destroy()
  // Without an answer in this time, the call hangs: the handler waits for an abort it will never hear.
  const sent = await Promise.race([reply, sleep(2000).then(() => undefined)])
  outcome.reply = sent === undefined ? undefined : JSON.parse(sent)
  return outcome
}

for (const era of ['modern', 'legacy'] as const) {
  t.test(`${era}: a client that leaves before its body is complete runs nothing`, async (t) => {
    const outcome = await giveUp(t, era, 'body')
    t.equal(outcome.ran, false)
    t.same(outcome.reply, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'aborted' } })
  })

  for (const stage of ['preValidation', 'preHandler', 'canAccess'] as const) {
    t.test(`${era}: a client that leaves during ${stage === 'canAccess' ? 'the tool\'s access check' : `the app's ${stage} hook`} runs no handler`, async (t) => {
      const outcome = await giveUp(t, era, stage)
      t.equal(outcome.ran, false, 'the handler would have started with its signal aborted already, and never heard the abort')
      t.same(outcome.reply?.error, { code: -32603, message: 'tool never did not run: the client went away' })
    })
  }

  t.test(`${era}: a client that leaves while the handler runs aborts its signal`, async (t) => {
    const outcome = await giveUp(t, era, 'handler')
    t.equal(outcome.ran, true)
    t.equal(outcome.reason, 'the client went away')
    t.ok(outcome.reply !== undefined, 'the call ended')
  })

  t.test(`${era}: a client that leaves with requests pipelined behind another aborts each one's signal`, async (t) => {
    const reasons: string[] = []
    let started = 0
    let allStarted!: () => void
    const running = new Promise<void>((resolve) => { allStarted = resolve })
    let release!: () => void
    const released = new Promise<void>((resolve) => { release = resolve })
    const app = await build(t, { shutdownGrace: 200 }, (app: FastifyInstance) => {
      app.mcp.tool({ name: 'held' }, async () => {
        if (++started === 3) allStarted()
        await released
        return 'done'
      })
      app.mcp.tool({ name: 'never' }, async (_args, ctx) => {
        if (++started === 3) allStarted()
        reasons.push(await new Promise<string>((resolve) => ctx.signal.addEventListener('abort', () => resolve((ctx.signal.reason as Error).message))))
        return 'stopped'
      })
    }, { forceCloseConnections: true })
    await app.listen({ host: '127.0.0.1', port: 0 })
    const port = (app.server.address() as { port: number }).port
    // One write, three requests: the replies of the second and third wait behind the first's, with no socket of their own.
    const calls = await Promise.all([callOf(era, port, 'held', 1), callOf(era, port, 'never', 2), callOf(era, port, 'never', 3)])
    const socket = connect(port, '127.0.0.1')
    await once(socket, 'connect')
    socket.on('error', () => {})
    socket.write(calls.map(({ headers, body }) => `POST /mcp HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\n` +
      Object.entries({ ...headers, 'content-length': Buffer.byteLength(body) }).map(([name, value]) => `${name}: ${value}\r\n`).join('') + `\r\n${body}`).join(''))
    await running
    release()
    // The first reply is out, and the second's now has the socket; the third's still waits behind it.
    await once(socket, 'data')
    socket.destroy()
    for (let i = 0; i < 100 && reasons.length < 2; i++) await sleep(20)
    t.same(reasons, ['the client went away', 'the client went away'], 'both waiting handlers heard the client leave')
  })
}
