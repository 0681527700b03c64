import t from 'tap'
import { FastifyOtelInstrumentation } from '@fastify/otel'
import { context, metrics, propagation, trace, INVALID_SPAN_CONTEXT, SpanKind, SpanStatusCode } from '@opentelemetry/api'
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks'
import { W3CBaggagePropagator } from '@opentelemetry/core'
import { InMemorySpanExporter, SimpleSpanProcessor, type ReadableSpan } from '@opentelemetry/sdk-trace-base'
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node'
import { DataPointType, MeterProvider, MetricReader, type HistogramMetricData } from '@opentelemetry/sdk-metrics'
import Fastify, { type FastifyInstance } from 'fastify'
import mocapi, { requestedSchema } from '../../lib/index.js'
import { DURATION_BUCKETS, callTracer, callTracing } from '../../lib/transport/tracing.js'
import { UNWATCHED } from '../../lib/transport/observers.js'
import * as api from '@opentelemetry/api'
import type { FastifyRequest } from 'fastify'
import type { McpContext } from '../../lib/context.js'
import { KEY, build, call, capturedLogs, meta } from '../helpers.js'

type Test = Parameters<typeof build>[0]

class TestMetricReader extends MetricReader {
  protected async onForceFlush (): Promise<void> {}
  protected async onShutdown (): Promise<void> {}
}

/** Registers an OpenTelemetry SDK with in-memory readers, as an app does before it builds its server; undone when the test ends. */
function sdk (t: Test) {
  const exporter = new InMemorySpanExporter()
  const tracerProvider = new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] })
  tracerProvider.register()
  const reader = new TestMetricReader()
  const meterProvider = new MeterProvider({ readers: [reader] })
  metrics.setGlobalMeterProvider(meterProvider)
  t.teardown(async () => {
    await tracerProvider.shutdown()
    await meterProvider.shutdown()
    trace.disable()
    context.disable()
    propagation.disable()
    metrics.disable()
  })
  return {
    /** The finished spans mocapi made, in the order they ended. */
    spans: () => exporter.getFinishedSpans().filter((span) => span.instrumentationScope.name === 'mocapi'),
    all: () => exporter.getFinishedSpans(),
    /** The duration histogram's points. */
    async durations () {
      const { resourceMetrics } = await reader.collect()
      const metric = resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics).find((m) => m.descriptor.name === 'mcp.server.operation.duration')
      return metric as HistogramMetricData
    },
  }
}

const CLIENT_TRACE = '4bf92f3577b34da6a3ce929d0e0e4736'
const traceparent = (span: string): string => `00-${CLIENT_TRACE}-${span}-01`

/** A server whose `book` tool asks once and makes a span of its own; `broken` returns an isError result; `test://broken` throws. */
async function server (t: Test, options = {}) {
  const seen: Array<{ parent: string | undefined, baggage: string | undefined }> = []
  const app = await build(t, options, (app) => {
    app.mcp
      .tool({ name: 'book', inputSchema: { type: 'object', properties: { to: { type: 'string' } } } }, async (args, ctx) => {
        const answer = await ctx.elicit(`Fly to ${args.to}?`, requestedSchema().boolean('confirm'))
        const own = trace.getTracer('app').startSpan('charge')
        seen.push({ parent: (own as unknown as ReadableSpan).parentSpanContext?.spanId, baggage: propagation.getBaggage(context.active())?.getEntry('user')?.value })
        own.end()
        return answer.action === 'accept' ? `Booked ${args.to}` : 'Nothing booked'
      })
      .tool({ name: 'broken' }, () => { throw new Error('the printer is on fire') })
      .prompt({ name: 'greet' }, () => 'hello')
      .resource({ uri: 'test://broken', name: 'broken' }, () => { throw new Error('disk gone') })
      .resource({ uri: 'test://ok', name: 'ok' }, () => 'fine')
  })
  return { app, seen }
}

t.test('a two-round tools/call: one span per round, parented on _meta.traceparent, with its round and outcome', async (t) => {
  const otel = sdk(t)
  const { app, seen } = await server(t)
  const first = await call(app, 'tools/call', { name: 'book', arguments: { to: 'Lisbon' } },
    { id: 1, meta: meta(undefined, { traceparent: traceparent('00f067aa0ba902b7'), tracestate: 'rojo=00f067aa0ba902b7', baggage: 'user=alice' }) })
  t.equal(first.body.result.resultType, 'input_required')
  const retry = await call(app, 'tools/call', {
    name: 'book',
    arguments: { to: 'Lisbon' },
    inputResponses: { 'elicit-1': { action: 'accept', content: { confirm: true } } },
    requestState: first.body.result.requestState,
  }, { id: 2, meta: meta(undefined, { traceparent: traceparent('a3ce929d0e0e4736'), baggage: 'user=alice' }) })
  t.same(retry.body.result.content, [{ type: 'text', text: 'Booked Lisbon' }])

  const spans = otel.spans()
  t.same(spans.map((span) => span.name), ['tools/call book', 'tools/call book'])
  const common = {
    'mcp.method.name': 'tools/call',
    'mcp.protocol.version': '2026-07-28',
    'gen_ai.tool.name': 'book',
    'gen_ai.operation.name': 'execute_tool',
  }
  t.same(spans[0].attributes, { ...common, 'jsonrpc.request.id': '1', 'mocapi.mrtr.round': 1, 'mocapi.call.outcome': 'input_required' })
  t.same(spans[1].attributes, { ...common, 'jsonrpc.request.id': '2', 'mocapi.mrtr.round': 2, 'mocapi.call.outcome': 'complete' })
  for (const span of spans) {
    t.equal(span.kind, SpanKind.SERVER)
    t.equal(span.status.code, SpanStatusCode.UNSET, 'input_required and complete are no errors')
    t.equal(span.spanContext().traceId, CLIENT_TRACE, 'in the client\'s trace')
    t.same(span.links, [], 'no HTTP span to link to without HTTP instrumentation')
  }
  t.equal(spans[0].parentSpanContext?.spanId, '00f067aa0ba902b7')
  t.equal(spans[0].parentSpanContext?.isRemote, true)
  t.equal(spans[0].parentSpanContext?.traceState?.get('rojo'), '00f067aa0ba902b7', 'tracestate is carried')
  t.equal(spans[1].parentSpanContext?.spanId, 'a3ce929d0e0e4736')
  t.same(seen, [{ parent: spans[1].spanContext().spanId, baggage: 'alice' }], 'the handler runs in the call\'s span, with the client\'s baggage')
  t.same(otel.all().filter((span) => span.name === 'charge').map((span) => span.spanContext().traceId), [CLIENT_TRACE])
})

t.test('the duration metric: seconds, the advised buckets, the conventions\' attributes', async (t) => {
  const otel = sdk(t)
  const { app } = await server(t)
  await call(app, 'tools/call', { name: 'book', arguments: { to: 'Lisbon' } })
  await call(app, 'tools/call', { name: 'book', arguments: { to: 'Porto' } })
  await call(app, 'prompts/get', { name: 'greet' })
  await call(app, 'tools/call', { name: 'no-such-tool' })
  await call(app, 'resources/read', { uri: 'test://broken' })
  const metric = await otel.durations()
  t.equal(metric.descriptor.unit, 's')
  t.equal(metric.dataPointType, DataPointType.HISTOGRAM)
  const key = (point: { attributes: object, count: number }): string => JSON.stringify([Object.entries(point.attributes).sort(), point.count])
  const points = metric.dataPoints.map((point) => ({ attributes: point.attributes, count: point.value.count }))
  t.same(new Set(points.map(key)), new Set([
    { attributes: { 'mcp.method.name': 'tools/call', 'mcp.protocol.version': '2026-07-28', 'gen_ai.tool.name': 'book', 'gen_ai.operation.name': 'execute_tool' }, count: 2 },
    { attributes: { 'mcp.method.name': 'prompts/get', 'mcp.protocol.version': '2026-07-28', 'gen_ai.prompt.name': 'greet' }, count: 1 },
    { attributes: { 'mcp.method.name': 'tools/call', 'mcp.protocol.version': '2026-07-28', 'gen_ai.operation.name': 'execute_tool', 'rpc.response.status_code': '-32602' }, count: 1 },
    { attributes: { 'mcp.method.name': 'resources/read', 'mcp.protocol.version': '2026-07-28', 'rpc.response.status_code': '-32603', 'error.type': '-32603' }, count: 1 },
  ].map(key)), 'a tool name the call was refused for stays out of the metric')
  t.same(metric.dataPoints[0].value.buckets.boundaries, DURATION_BUCKETS)
  const point = metric.dataPoints[0].value
  t.ok((point.min as number) > 0 && (point.max as number) < 5, `durations are seconds (${point.min}…${point.max})`)
})

t.test('errors: the server\'s are errors with the client\'s message, the client\'s mistakes are not, an isError result is tool_error', async (t) => {
  const otel = sdk(t)
  const { app } = await server(t)
  t.equal((await call(app, 'resources/read', { uri: 'test://broken' }, { id: 'r-1' })).body.error.code, -32603)
  t.equal((await call(app, 'resources/read', { uri: 'test://missing' })).body.error.code, -32602)
  t.equal((await call(app, 'tools/call', { name: 'no-such-tool' })).body.error.code, -32602)
  t.equal((await call(app, 'tools/call', { name: 'broken' })).body.result.isError, true)
  t.equal((await call(app, 'tools/call', { name: 'book', arguments: {} }, { capabilities: {} })).body.error.code, -32021)
  const [broken, missing, unknown, toolError, incapable] = otel.spans()
  t.equal(broken.name, 'resources/read', 'no URI in the name')
  t.same(broken.attributes, {
    'mcp.method.name': 'resources/read',
    'mcp.protocol.version': '2026-07-28',
    'jsonrpc.request.id': 'r-1',
    'mcp.resource.uri': 'test://broken',
    'mocapi.mrtr.round': 1,
    'mocapi.call.outcome': 'error',
    'rpc.response.status_code': '-32603',
    'error.type': '-32603',
  })
  t.same(broken.status, { code: SpanStatusCode.ERROR, message: 'disk gone' })
  t.equal(broken.events.length, 0, 'a handled error is no exception event')

  t.match(missing.attributes, { 'mcp.resource.uri': 'test://missing', 'rpc.response.status_code': '-32602' })
  t.equal(missing.attributes['error.type'], undefined, 'an unknown resource is the client\'s mistake')
  t.equal(missing.status.code, SpanStatusCode.UNSET)
  t.equal(unknown.name, 'tools/call no-such-tool')
  t.match(unknown.attributes, { 'gen_ai.tool.name': 'no-such-tool', 'rpc.response.status_code': '-32602', 'mocapi.call.outcome': 'error' })
  t.equal(unknown.attributes['error.type'], undefined)
  t.equal(unknown.status.code, SpanStatusCode.UNSET)
  t.equal(unknown.attributes['mocapi.mrtr.round'], undefined, 'a call refused before it ran has no round')

  t.match(toolError.attributes, { 'gen_ai.tool.name': 'broken', 'error.type': 'tool_error', 'mocapi.call.outcome': 'tool_error', 'mocapi.mrtr.round': 1 })
  t.equal(toolError.attributes['rpc.response.status_code'], undefined, 'an isError result is a result')
  t.same(toolError.status, { code: SpanStatusCode.ERROR })
  t.match(incapable.attributes, { 'error.type': '-32021', 'rpc.response.status_code': '-32021' })
  t.equal(incapable.status.code, SpanStatusCode.ERROR)
})

/** One 2025-era JSON-RPC message through inject. */
async function post (app: FastifyInstance, body: object, headers: Record<string, string> = {}) {
  const response = await app.inject({ method: 'POST', url: '/mcp', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers }, payload: body })
  return { body: response.json(), headers: response.headers }
}

t.test('a 2025-era session: its calls carry the session\'s own id, never the sealed Mcp-Session-Id', async (t) => {
  const otel = sdk(t)
  const { app } = await server(t)
  const init = await post(app, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'c', version: '1' } } })
  const sealed = init.headers['mcp-session-id'] as string
  const headers = { 'mcp-session-id': sealed, 'mcp-protocol-version': '2025-11-25' }
  const called = await post(app, {
    jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'broken', _meta: { traceparent: traceparent('00f067aa0ba902b7') } },
  }, headers)
  t.equal(called.body.result.isError, true)
  const refused = await post(app, { jsonrpc: '2.0', id: 8, method: 'resources/read', params: { uri: 'test://ok', _meta: 'not an object' } }, headers)
  t.same(refused.body.error, { code: -32602, message: 'params._meta must be an object' }, 'a _meta that is no object is refused before any span')
  await post(app, { jsonrpc: '2.0', id: 8, method: 'resources/read', params: { uri: 'test://ok' } }, headers)
  t.equal((await post(app, { jsonrpc: '2.0', id: 9, method: 'resources/read', params: { uri: 'test://missing' } }, headers)).body.error.code, -32002)
  const [initialize, tool, read, missing] = otel.spans()
  t.equal(initialize.name, 'initialize')
  const session = initialize.attributes['mcp.session.id']
  t.match(session, /^[\w-]{22}$/, 'the session\'s random id')
  t.not(session, sealed)
  t.notOk(sealed.includes(session as string))
  t.same(tool.attributes, {
    'mcp.method.name': 'tools/call',
    'mcp.protocol.version': '2025-11-25',
    'gen_ai.tool.name': 'broken',
    'gen_ai.operation.name': 'execute_tool',
    'jsonrpc.request.id': '7',
    'mcp.session.id': session,
    'mocapi.mrtr.round': 1,
    'mocapi.call.outcome': 'tool_error',
    'error.type': 'tool_error',
  })
  t.equal(tool.parentSpanContext?.spanId, '00f067aa0ba902b7', 'a 2025-era _meta carries trace context too')
  t.equal(read.attributes['mcp.session.id'], session)
  t.equal(read.parentSpanContext, undefined, 'without trace context, no parent')
  t.equal(read.attributes['mocapi.mrtr.round'], 1)
  t.equal((await post(app, { jsonrpc: '2.0', id: 10, method: 'tools/call', params: { name: 5 } }, headers)).body.error.code, -32602)
  t.equal(otel.spans().at(-1)?.name, 'tools/call', 'a name that is no string names no target')
  t.equal(otel.spans().at(-1)?.attributes['gen_ai.tool.name'], undefined)
  t.match(missing.attributes, { 'mcp.resource.uri': 'test://missing', 'rpc.response.status_code': '-32002' })
  t.equal(missing.attributes['error.type'], undefined, 'resource not found is the client\'s mistake')
  t.equal(missing.status.code, SpanStatusCode.UNSET)
})

t.test('hostile trace context in _meta is ignored, never thrown', async (t) => {
  const otel = sdk(t)
  const { app } = await server(t)
  const hostile: Array<Record<string, unknown>> = [
    { traceparent: { spanId: '00f067aa0ba902b7' } },
    { traceparent: 42, tracestate: ['a=b'], baggage: null },
    { traceparent: 'zz-' + 'f'.repeat(60) },
    { traceparent: traceparent('00f067aa0ba902b7') + 'x'.repeat(10_000) },
    { traceparent: '00-00000000000000000000000000000000-0000000000000000-01' },
    { baggage: 'k=%E0%A4%A,' + 'x=y,'.repeat(5000), tracestate: '=,'.repeat(3000) },
    { traceparent: traceparent('00f067aa0ba902b7'), tracestate: 'x'.repeat(9000) },
  ]
  for (const extra of hostile) {
    const reply = await call(app, 'resources/read', { uri: 'test://ok' }, { meta: meta(undefined, extra) })
    t.equal(reply.status, 200, JSON.stringify(extra).slice(0, 60))
  }
  const parents = otel.spans().map((span) => span.parentSpanContext?.spanId)
  t.same(parents, [undefined, undefined, undefined, undefined, undefined, undefined, '00f067aa0ba902b7'], 'no parent from any but the last')
  t.equal(otel.spans()[6].parentSpanContext?.traceState, undefined, 'whose tracestate was too long to read')

  // A propagator of the app's that throws on what it reads does not fail the call either.
  propagation.disable()
  propagation.setGlobalPropagator({
    inject () {},
    extract (_context, carrier, getter) {
      throw new Error(`cannot read ${getter.keys(carrier).join(', ')}`)
    },
    fields: () => ['traceparent'],
  })
  const reply = await call(app, 'resources/read', { uri: 'test://ok' }, { meta: meta(undefined, { traceparent: traceparent('00f067aa0ba902b7') }) })
  t.equal(reply.status, 200)
  t.equal(otel.spans().at(-1)?.parentSpanContext, undefined)
})

t.test('long names, ids and URIs are cut; methods no one serves are _OTHER on the metric', async (t) => {
  const otel = sdk(t)
  const { app } = await server(t)
  const name = 'n'.repeat(255) + '\u{1F600}' + 'n'.repeat(10)
  await call(app, 'tools/call', { name }, { id: 'i'.repeat(1000) })
  await call(app, 'resources/subscribe', { uri: 'test://' + 'u'.repeat(5000) })
  await call(app, 'no/such/method')
  const [tool, subscribe, unknown] = otel.spans()
  t.equal(tool.attributes['gen_ai.tool.name'], 'n'.repeat(255), 'not half an emoji')
  t.equal((tool.attributes['jsonrpc.request.id'] as string).length, 256)
  t.equal((subscribe.attributes['mcp.resource.uri'] as string).length, 1024)
  t.equal(unknown?.name, 'no/such/method')
  const methods = (await otel.durations()).dataPoints.map((point) => point.attributes['mcp.method.name'])
  t.ok(methods.includes('_OTHER'))
  t.notOk(methods.includes('no/such/method'))
})

t.test('without @fastify/otel, the active span (an HTTP instrumentation\'s) is the parent, or, with _meta, the link', async (t) => {
  const otel = sdk(t)
  const { app } = await server(t)
  const http = trace.getTracer('http').startSpan('POST', { kind: SpanKind.SERVER })
  const inHttp = trace.setSpan(context.active(), http)
  await context.with(inHttp, () => call(app, 'prompts/get', { name: 'greet' }))
  await context.with(inHttp, () => call(app, 'prompts/get', { name: 'greet' }, { meta: meta(undefined, { traceparent: traceparent('00f067aa0ba902b7') }) }))
  await context.with(inHttp, () => call(app, 'prompts/get', { name: 'greet' }, { meta: meta(undefined, { baggage: 'user=alice' }) }))
  const invalid = trace.wrapSpanContext(INVALID_SPAN_CONTEXT)
  await context.with(trace.setSpan(context.active(), invalid), () =>
    call(app, 'prompts/get', { name: 'greet' }, { meta: meta(undefined, { traceparent: traceparent('00f067aa0ba902b7') }) }))
  http.end()
  const httpId = http.spanContext().spanId
  t.same(otel.spans().map((span) => [span.name, span.parentSpanContext?.spanId, span.links.map((link) => link.context.spanId)]), [
    ['prompts/get greet', httpId, []],
    ['prompts/get greet', '00f067aa0ba902b7', [httpId]],
    ['prompts/get greet', httpId, []],
    ['prompts/get greet', '00f067aa0ba902b7', []],
  ], 'baggage alone changes no parent; an invalid span is not linked')
})

/** An app with @fastify/otel registered first, as it must be to wrap the routes, then mocapi and an `echo` tool. */
async function beside (t: Test, instrumentation: FastifyOtelInstrumentation): Promise<FastifyInstance> {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(instrumentation.plugin())
  await app.register(mocapi, { requestState: { keys: [KEY] } })
  app.mcp.tool({ name: 'echo' }, () => 'e')
  return app
}

t.test('beside @fastify/otel: the HTTP request span is the parent, or, with _meta, the link', async (t) => {
  const otel = sdk(t)
  const instrumented = await beside(t, new FastifyOtelInstrumentation())
  await call(instrumented, 'tools/call', { name: 'echo' })
  await call(instrumented, 'tools/call', { name: 'echo' }, { meta: meta(undefined, { traceparent: traceparent('00f067aa0ba902b7') }) })
  const all = otel.all()
  const requests = all.filter((span) => span.name === 'request')
  const [plain, propagated] = otel.spans()
  t.equal(requests.length, 2)
  t.equal(plain.parentSpanContext?.spanId, requests[0].spanContext().spanId, 'a child of the HTTP request span, not of a hook span')
  t.same(plain.links, [])
  t.equal(propagated.parentSpanContext?.spanId, '00f067aa0ba902b7')
  t.same(propagated.links.map((link) => link.context.spanId), [requests[1].spanContext().spanId])
  t.equal(all.filter((span) => span.kind === SpanKind.SERVER && span.instrumentationScope.name !== 'mocapi').length, 2, 'mocapi made no HTTP spans')
})

t.test('beside @fastify/otel when it leaves the endpoint out: the active context', async (t) => {
  const otel = sdk(t)
  const app = await beside(t, new FastifyOtelInstrumentation({ ignorePaths: '/mcp' }))
  await call(app, 'tools/call', { name: 'echo' })
  t.same(otel.all().map((span) => [span.name, span.parentSpanContext?.spanId]), [['tools/call echo', undefined]])
})

t.test('with no SDK registered, calls are served and nothing is recorded', async (t) => {
  const { app, seen } = await server(t)
  const first = await call(app, 'tools/call', { name: 'book', arguments: { to: 'Lisbon' } }, { meta: meta(undefined, { traceparent: traceparent('00f067aa0ba902b7') }) })
  const retry = await call(app, 'tools/call', {
    name: 'book',
    arguments: { to: 'Lisbon' },
    inputResponses: { 'elicit-1': { action: 'accept', content: { confirm: true } } },
    requestState: first.body.result.requestState,
  })
  t.same(retry.body.result.content, [{ type: 'text', text: 'Booked Lisbon' }])
  t.same(seen, [{ parent: undefined, baggage: undefined }])
  t.equal((await call(app, 'resources/read', { uri: 'test://broken' })).body.error.code, -32603)
})

t.test('with no SDK and no propagator, a call has nothing to trace: no span, no clock, no scope', async (t) => {
  const request = { headers: {} } as FastifyRequest
  const ctx = { method: 'tools/call', params: { name: 'add' }, id: 1, protocolVersion: '2026-07-28' } as unknown as McpContext
  t.equal(callTracer(api).begin(request, ctx), UNWATCHED)
})

t.test('an SDK registered after the plugin: its spans are recorded from its first call on', async (t) => {
  const { app } = await server(t)
  await call(app, 'prompts/get', { name: 'greet' })
  const otel = sdk(t)
  await call(app, 'prompts/get', { name: 'greet' })
  t.same(otel.spans().map((span) => span.name), ['prompts/get greet'], 'one span: the call made once the SDK was there')
  t.equal(await otel.durations(), undefined, 'the histogram stays the no-op one the API gave when the plugin registered')
})

t.test('a propagator and a context manager without a tracer: the baggage in _meta still reaches the handler', async (t) => {
  context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable())
  propagation.setGlobalPropagator(new W3CBaggagePropagator())
  t.teardown(() => {
    context.disable()
    propagation.disable()
  })
  const { app, seen } = await server(t)
  const first = await call(app, 'tools/call', { name: 'book', arguments: { to: 'Lisbon' } })
  await call(app, 'tools/call', {
    name: 'book',
    arguments: { to: 'Lisbon' },
    inputResponses: { 'elicit-1': { action: 'accept', content: { confirm: true } } },
    requestState: first.body.result.requestState,
  }, { meta: meta(undefined, { baggage: 'user=alice' }) })
  t.same(seen, [{ parent: undefined, baggage: 'alice' }])
})

t.test('tracing: false makes no spans, even with an SDK', async (t) => {
  const otel = sdk(t)
  const { app, seen } = await server(t, { tracing: false })
  await call(app, 'tools/call', { name: 'broken' })
  await call(app, 'prompts/get', { name: 'greet' })
  t.same(otel.spans(), [])
  t.equal(await otel.durations(), undefined)
  t.same(seen, [])
})

t.test('without @opentelemetry/api, no tracing and no error; an API that fails to load is a warning', async (t) => {
  const { lines, options } = capturedLogs('warn')
  const log = Fastify(options).log
  const missing = Object.assign(new Error('Cannot find package \'@opentelemetry/api\''), { code: 'ERR_MODULE_NOT_FOUND' })
  t.equal(await callTracing(log, () => Promise.reject(missing)), undefined)
  t.equal(await callTracing(log, () => Promise.reject(Object.assign(new Error('gone'), { code: 'MODULE_NOT_FOUND' }))), undefined)
  t.same(lines, [], 'an absent package is not worth a line')
  t.equal(await callTracing(log, () => Promise.reject(new SyntaxError('Unexpected token'))), undefined)
  t.same(lines.map((line) => line.msg), ['mocapi: @opentelemetry/api could not be loaded, so calls are not traced'])
  t.equal(lines[0].err.message, 'Unexpected token')
  t.ok(await callTracing(log), 'the installed API loads')
})
