import t from 'tap'
import { InvalidArgumentError, requestedSchema, type McpContext, type ToolReturn } from '../../lib/index.js'
import { build, meta, rpc, MOCAPI_VERSION } from '../helpers.js'

type Test = Parameters<typeof build>[0]
type Handler = (args: Record<string, any>, ctx: McpContext) => ToolReturn | Promise<ToolReturn>

const LOG_LEVEL = 'io.modelcontextprotocol/logLevel'
const city = requestedSchema().string('city')

/** A server with one tool, `work`, run by `handler`. */
async function server (t: Test, handler: Handler) {
  return build(t, {}, (app) => {
    app.mcp.tool({ name: 'work', inputSchema: { type: 'object', properties: { step: { type: 'number' } } } }, handler)
  })
}

/** Sends one request; `body` is the parsed JSON reply, when the reply is JSON. */
async function call (app: Awaited<ReturnType<typeof build>>, method: string, params: Record<string, unknown>, options: Parameters<typeof rpc>[2] = {}) {
  const response = await app.inject(rpc(method, params, options))
  const json = /^application\/json/.test(String(response.headers['content-type']))
  return { status: response.statusCode, body: json ? response.json() : undefined, response }
}

/** The messages of an event stream; every frame must be `event: message` with one JSON data line. */
function events (t: Test & { match: Function }, body: string): any[] {
  t.match(body, /\n\n$/, 'the stream ends with a complete frame')
  return body.split('\n\n').filter((frame) => frame !== '').map((frame) => {
    const match = /^event: message\ndata: (.+)$/.exec(frame)
    if (match === null) throw new Error(`not an SSE message frame: ${JSON.stringify(frame)}`)
    return JSON.parse(match[1])
  })
}

t.test('progress with a progress token turns the reply into an event stream', async (t) => {
  const app = await server(t, async (_args, ctx) => {
    ctx.progress(1, 3, 'Searching flights')
    await new Promise((resolve) => setImmediate(resolve))
    ctx.progress(2, 3)
    ctx.progress(2.5)
    return 'done'
  })
  const { response } = await call(app, 'tools/call', { name: 'work' }, { id: 41, meta: meta({}, { progressToken: 'tok-1' }) })
  t.equal(response.statusCode, 200)
  t.equal(response.headers['content-type'], 'text/event-stream')
  t.equal(response.headers['x-accel-buffering'], 'no')
  t.equal(response.headers['cache-control'], 'no-cache, no-transform')
  t.same(events(t, response.body), [
    { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'tok-1', progress: 1, total: 3, message: 'Searching flights' } },
    { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'tok-1', progress: 2, total: 3 } },
    { jsonrpc: '2.0', method: 'notifications/progress', params: { progressToken: 'tok-1', progress: 2.5 } },
    {
      jsonrpc: '2.0',
      id: 41,
      result: {
        resultType: 'complete',
        content: [{ type: 'text', text: 'done' }],
        _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'mocapi', version: MOCAPI_VERSION } },
      },
    },
  ])
})

t.test('a numeric progress token is echoed as a number', async (t) => {
  const app = await server(t, (_args, ctx) => { ctx.progress(10); return 'ok' })
  const { response } = await call(app, 'tools/call', { name: 'work' }, { meta: meta({}, { progressToken: 7 }) })
  t.same(events(t, response.body)[0].params, { progressToken: 7, progress: 10 })
})

t.test('without a progress token the reply stays json', async (t) => {
  let reported = 0
  const app = await server(t, (_args, ctx) => {
    ctx.progress(1, 2, 'half')
    ctx.progress(2, 2)
    reported = 2
    return 'quiet'
  })
  const { status, body, response } = await call(app, 'tools/call', { name: 'work' }, { id: 5 })
  t.equal(status, 200)
  t.match(response.headers['content-type'], /^application\/json/)
  t.equal(response.headers['x-accel-buffering'], undefined)
  t.equal(reported, 2)
  t.same(body, {
    jsonrpc: '2.0',
    id: 5,
    result: { resultType: 'complete', content: [{ type: 'text', text: 'quiet' }], _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'mocapi', version: MOCAPI_VERSION } } },
  })
})

t.test('progress that does not increase throws a type error the handler sees', async (t) => {
  const seen: string[] = []
  const app = await server(t, (_args, ctx) => {
    ctx.progress(2)
    for (const bad of [2, 1, NaN, '3']) {
      try {
        ctx.progress(bad as number)
      } catch (error) {
        seen.push(`${(error as Error).name}: ${(error as Error).message}`)
      }
    }
    ctx.progress(3)
    return 'still counting'
  })
  const { response } = await call(app, 'tools/call', { name: 'work' }, { meta: meta({}, { progressToken: 'p' }) })
  t.same(seen, [
    'TypeError: progress must be a number greater than the last one reported (2), got 2',
    'TypeError: progress must be a number greater than the last one reported (2), got 1',
    'TypeError: progress must be a number greater than the last one reported (2), got NaN',
    'TypeError: progress must be a number greater than the last one reported (2), got 3',
  ])
  const messages = events(t, response.body)
  t.same(messages.slice(0, 2).map((message) => message.params.progress), [2, 3], 'refused values are not sent')
  t.equal(messages[2].result.content[0].text, 'still counting')
})

t.test('an uncaught progress error ends the stream with an error result', async (t) => {
  const app = await server(t, (_args, ctx) => {
    ctx.progress(5)
    ctx.progress(4)
    return 'unreachable'
  })
  const { response } = await call(app, 'tools/call', { name: 'work' }, { meta: meta({}, { progressToken: 'p' }) })
  const messages = events(t, response.body)
  t.equal(messages.length, 2)
  t.same(messages[1].result.content, [{ type: 'text', text: 'progress must be a number greater than the last one reported (5), got 4' }])
  t.equal(messages[1].result.isError, true)
})

t.test('log messages are sent only at or above the requested level', async (t) => {
  const app = await server(t, (_args, ctx) => {
    ctx.log('debug', 'cache miss')
    ctx.log('info', { step: 1 })
    ctx.log('warning', { disk: 'low' }, 'storage')
    ctx.log('emergency', 'on fire')
    return 'logged'
  })
  const { response } = await call(app, 'tools/call', { name: 'work' }, { meta: meta({}, { [LOG_LEVEL]: 'warning' }) })
  t.equal(response.headers['content-type'], 'text/event-stream')
  const messages = events(t, response.body)
  t.same(messages.slice(0, 2), [
    { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'warning', data: { disk: 'low' }, logger: 'storage' } },
    { jsonrpc: '2.0', method: 'notifications/message', params: { level: 'emergency', data: 'on fire' } },
  ])
  t.equal(messages[2].result.content[0].text, 'logged')
  t.equal(messages.length, 3)
})

t.test('the lowest level asks for every message', async (t) => {
  const app = await server(t, (_args, ctx) => { ctx.log('debug', 'cache miss'); return 'ok' })
  const { response } = await call(app, 'tools/call', { name: 'work' }, { meta: meta({}, { [LOG_LEVEL]: 'debug' }) })
  t.same(events(t, response.body)[0].params, { level: 'debug', data: 'cache miss' })
})

t.test('without a requested level no log message is sent', async (t) => {
  const app = await server(t, (_args, ctx) => {
    ctx.log('emergency', 'on fire', 'core')
    return 'silent'
  })
  const { body, response } = await call(app, 'tools/call', { name: 'work' })
  t.match(response.headers['content-type'], /^application\/json/)
  t.equal(body.result.content[0].text, 'silent')
})

t.test('an unknown log level throws a type error', async (t) => {
  let message = ''
  let caught: unknown
  const app = await server(t, (_args, ctx) => {
    try {
      ctx.log('loud' as never, 'x')
    } catch (error) {
      caught = error
      message = `${(error as Error).name}: ${(error as Error).message}`
    }
    return 'after'
  })
  const { body } = await call(app, 'tools/call', { name: 'work' }, { meta: meta({}, { [LOG_LEVEL]: 'debug' }) })
  t.equal(message, 'TypeError: level must be one of debug, info, notice, warning, error, critical, alert, emergency, got loud')
  t.ok(caught instanceof InvalidArgumentError && caught instanceof TypeError, 'an InvalidArgumentError, which is a TypeError')
  t.equal((caught as { code?: string }).code, 'FST_MOCAPI_INVALID_ARGUMENT')
  t.notOk(new TypeError('x') instanceof InvalidArgumentError, 'no other TypeError passes for one')
  t.equal(body.result.content[0].text, 'after', 'nothing was streamed')
})

t.test('input_required can end a stream, and the retry streams again', async (t) => {
  const app = await server(t, async (_args, ctx) => {
    ctx.progress(1, 2, 'asking')
    const answer = await ctx.elicit('From where?', city)
    ctx.progress(2, 2, 'booking')
    return answer.action === 'accept' ? `from ${answer.content.city}` : 'no'
  })
  const streamMeta = meta({ elicitation: {} }, { progressToken: 'trip' })
  const first = await call(app, 'tools/call', { name: 'work' }, { id: 'a', meta: streamMeta })
  t.equal(first.response.headers['content-type'], 'text/event-stream')
  const [progress, last] = events(t, first.response.body)
  t.same(progress.params, { progressToken: 'trip', progress: 1, total: 2, message: 'asking' })
  t.equal(last.id, 'a')
  t.equal(last.result.resultType, 'input_required')
  t.same(Object.keys(last.result.inputRequests), ['elicit-1'])
  t.type(last.result.requestState, 'string')

  const retry = await call(app, 'tools/call', {
    name: 'work',
    requestState: last.result.requestState,
    inputResponses: { 'elicit-1': { action: 'accept', content: { city: 'Porto' } } },
  }, { id: 'b', meta: streamMeta })
  const messages = events(t, retry.response.body)
  t.same(messages.map((message) => message.params?.progress), [1, 2, undefined], 'the replay reports from the top')
  t.match(messages[2], { id: 'b', result: { resultType: 'complete', content: [{ type: 'text', text: 'from Porto' }] } })
})

t.test('an error after the stream started is its last event', async (t) => {
  const app = await server(t, async (_args, ctx) => {
    ctx.progress(1)
    await ctx.elicit('From where?', city)
    return 'never'
  })
  const { response } = await call(app, 'tools/call', { name: 'work' }, { id: 9, meta: meta({}, { progressToken: 'p' }) })
  t.equal(response.statusCode, 200, 'the status was sent with the first event')
  const messages = events(t, response.body)
  t.equal(messages.length, 2)
  t.equal(messages[0].method, 'notifications/progress')
  t.same(messages[1], {
    jsonrpc: '2.0',
    id: 9,
    error: {
      code: -32021,
      message: 'Server requires the elicitation client capability for this request',
      data: { requiredCapabilities: { elicitation: {} } },
    },
  })
})

t.test('a ledger mismatch after progress is the stream\'s last event', async (t) => {
  let runs = 0
  const app = await server(t, async (_args, ctx) => {
    runs++
    ctx.progress(runs)
    await ctx.elicit(runs === 1 ? 'From where?' : 'To where?', city)
    return 'never'
  })
  const streamMeta = meta({ elicitation: {} }, { progressToken: 'p' })
  const first = await call(app, 'tools/call', { name: 'work' }, { meta: streamMeta })
  const state = events(t, first.response.body)[1].result.requestState
  const retry = await call(app, 'tools/call', {
    name: 'work', requestState: state, inputResponses: { 'elicit-1': { action: 'accept', content: { city: 'Porto' } } },
  }, { id: 12, meta: streamMeta })
  const messages = events(t, retry.response.body)
  t.equal(messages[0].params.progress, 2)
  t.match(messages[1], { id: 12, error: { code: -32602, data: { reason: 'ledger_mismatch', ordinal: 1 } } })
  t.notOk('result' in messages[1])
})

t.test('notifications after the response are dropped, never written', async (t) => {
  const outcomes: Array<Promise<string>> = []
  const app = await server(t, (args, ctx) => {
    if (args.step === 1) ctx.progress(1)
    outcomes.push(new Promise((resolve) => {
      setTimeout(() => {
        try {
          ctx.progress(10)
          ctx.log('error', 'too late')
          resolve('quiet')
        } catch (error) {
          resolve((error as Error).message)
        }
      }, 20)
    }))
    return 'returned early'
  })
  const lateMeta = meta({}, { progressToken: 'p', [LOG_LEVEL]: 'debug' })

  const json = await call(app, 'tools/call', { name: 'work', arguments: { step: 0 } }, { meta: lateMeta })
  t.same(json.body.result.content, [{ type: 'text', text: 'returned early' }])
  t.equal(await outcomes[0], 'quiet', 'after a json reply')

  const stream = await call(app, 'tools/call', { name: 'work', arguments: { step: 1 } }, { meta: lateMeta })
  t.equal(await outcomes[1], 'quiet', 'after the last event')
  const messages = events(t, stream.response.body)
  t.same(messages.map((message) => message.params?.progress ?? message.result.content[0].text), [1, 'returned early'])
})

t.test('an event stream carries the headers the app\'s hooks set on the reply, as a JSON reply does', async (t) => {
  // What @fastify/cors, @fastify/rate-limit or a request-id hook set in onRequest: a browser host reading a
  // cross-origin stream without its Access-Control-Allow-Origin would see a failed fetch.
  const app = await build(t, {}, (app) => {
    app.addHook('onRequest', async (request, reply) => {
      reply.header('access-control-allow-origin', 'https://host.example').header('x-request-id', request.id)
      reply.header('content-type', 'application/json')
    })
    app.mcp.tool({ name: 'work' }, async (_args, ctx) => {
      ctx.progress(1, 2)
      return 'done'
    })
  })
  for (const progressToken of ['tok', undefined]) {
    const { response } = await call(app, 'tools/call', { name: 'work' }, { meta: progressToken === undefined ? meta({}) : meta({}, { progressToken }) })
    t.equal(response.headers['access-control-allow-origin'], 'https://host.example', `${progressToken ?? 'json'}: the hook's header`)
    t.type(response.headers['x-request-id'], 'string')
    t.equal(response.headers['content-type'], progressToken === undefined ? 'application/json; charset=utf-8' : 'text/event-stream', 'its own content type wins')
  }
})
