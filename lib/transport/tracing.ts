// By the MCP semantic conventions: the span's parent is `params._meta`'s trace context; the HTTP span is linked.
import type * as Otel from '@opentelemetry/api'
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import type { McpContext } from '../context.js'
import { ErrorCode } from '../errors.js'
import { isPlainObject } from '../protocol/wire.js'
import { kCallState } from '../symbols.js'
import { MOCAPI_VERSION } from '../version.js'
import { UNWATCHED, type CallEnd, type CallObserver } from './observers.js'

type Api = typeof Otel

type ApiLoader = () => Promise<Api>

const importApi: ApiLoader = () => import('@opentelemetry/api')

export const DURATION_BUCKETS = [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300]

/** Error codes that say the client asked for something the server could not serve: not errors of the server. */
const CLIENT_MISTAKES = new Set<number>([
  ErrorCode.ParseError, ErrorCode.InvalidRequest, ErrorCode.MethodNotFound, ErrorCode.InvalidParams,
  ErrorCode.ResourceNotFound,
])

/** Longest tool or prompt name, request id and resource URI recorded, in characters. */
const NAME_LENGTH = 256
const URI_LENGTH = 1024
/** Longest `_meta` value handed to the propagators (W3C baggage allows 8192 bytes, more than the other two). */
const META_VALUE_LENGTH = 8192

const RESOURCE_METHODS = new Set(['resources/read', 'resources/subscribe', 'resources/unsubscribe'])

/** Reads `traceparent`, `tracestate` and `baggage` from `_meta`: own string values of bounded length only. */
const metaGetter: Otel.TextMapGetter<Record<string, unknown>> = {
  keys: (meta) => Object.keys(meta),
  get: (meta, key) => {
    const value = Object.hasOwn(meta, key) ? meta[key] : undefined
    return typeof value === 'string' && value.length <= META_VALUE_LENGTH ? value : undefined
  },
}

function bounded (value: string, length: number): string {
  if (value.length <= length) return value
  const cut = value.slice(0, length)
  return /[\uD800-\uDBFF]$/.test(cut) ? cut.slice(0, -1) : cut
}

function toolOrPromptName (ctx: McpContext): string | undefined {
  if (ctx.method !== 'tools/call' && ctx.method !== 'prompts/get') return undefined
  const name = ctx.params.name
  return typeof name === 'string' ? bounded(name, NAME_LENGTH) : undefined
}

function setTarget (attributes: Otel.Attributes, method: string, target: string | undefined): void {
  if (method === 'tools/call') attributes['gen_ai.operation.name'] = 'execute_tool'
  if (target === undefined) return
  attributes[method === 'tools/call' ? 'gen_ai.tool.name' : 'gen_ai.prompt.name'] = target
}

/** The span's start attributes; the 2025-era session is its random id, never the sealed one. */
function spanAttributes (ctx: McpContext, method: string, target: string | undefined): Otel.Attributes {
  const attributes: Otel.Attributes = {
    'mcp.method.name': method,
    'mcp.protocol.version': ctx.protocolVersion,
    'jsonrpc.request.id': bounded(String(ctx.id), NAME_LENGTH),
  }
  setTarget(attributes, method, target)
  const uri = ctx.params.uri
  if (RESOURCE_METHODS.has(method) && typeof uri === 'string') attributes['mcp.resource.uri'] = bounded(uri, URI_LENGTH)
  const session = ctx[kCallState].client.session
  if (session !== undefined) attributes['mcp.session.id'] = session
  return attributes
}

function errorTypeOf (end: CallEnd): string | undefined {
  if (end.outcome === 'tool_error') return 'tool_error'
  if (end.outcome === 'error' && !CLIENT_MISTAKES.has(end.code as number)) return String(end.code)
  return undefined
}

/** The conventions' metric attributes, minus anything a client makes up: it must not grow a series per request. */
function metricAttributes (
  ctx: McpContext,
  method: string,
  target: string | undefined,
  end: CallEnd,
  errorType: string | undefined
): Otel.Attributes {
  const attributes: Otel.Attributes = {
    'mcp.method.name': end.code === ErrorCode.MethodNotFound ? '_OTHER' : method,
    'mcp.protocol.version': ctx.protocolVersion,
  }
  setTarget(attributes, method, end.code === ErrorCode.InvalidParams ? undefined : target)
  if (end.code !== undefined) attributes['rpc.response.status_code'] = String(end.code)
  if (errorType !== undefined) attributes['error.type'] = errorType
  return attributes
}

/** `@fastify/otel`'s request span when there (its spans around mocapi's hooks are no parent for a call). */
function ambientOf (api: Api, request: FastifyRequest): Otel.Context {
  const otel = (request as { opentelemetry?: unknown }).opentelemetry
  if (typeof otel === 'function') {
    const state = otel.call(request) as { instrumented?: unknown, context?: { getValue?: unknown } } | undefined
    if (state?.instrumented === true && typeof state.context?.getValue === 'function') return state.context as Otel.Context
  }
  return api.context.active()
}

function parentOf (api: Api, ambient: Otel.Context, meta: unknown): Otel.Context {
  if (!isPlainObject(meta)) return ambient
  try {
    return api.propagation.extract(ambient, meta, metaGetter)
  } catch {
    return ambient
  }
}

function linksOf (api: Api, ambient: Otel.Context, parent: Otel.Context): Otel.Link[] | undefined {
  if (parent === ambient) return undefined
  const transport = api.trace.getSpanContext(ambient)
  if (transport === undefined || !api.trace.isSpanContextValid(transport)) return undefined
  return api.trace.getSpanContext(parent)?.spanId === transport.spanId ? undefined : [{ context: transport }]
}

function scoped (api: Api, parent: Otel.Context, span: Otel.Span): <T>(dispatch: () => T) => T {
  const scope = api.trace.setSpan(parent, span)
  return (dispatch) => api.context.with(scope, dispatch)
}

export function callTracer (api: Api): CallObserver {
  const tracer = api.trace.getTracer('mocapi', MOCAPI_VERSION)
  const duration = api.metrics.getMeter('mocapi', MOCAPI_VERSION).createHistogram('mcp.server.operation.duration', {
    description: 'MCP request duration as observed on the receiver from the time it was received until the result is sent.',
    unit: 's',
    advice: { explicitBucketBoundaries: DURATION_BUCKETS },
  })
  // With no SDK a call skips the span, its attributes and the clock. The tracer provider is looked up per call,
  // so an SDK registered after the plugin still gets spans; the histogram is fixed by now.
  const noTracerProvider = new api.ProxyTracerProvider().getDelegate()
  const noMetric = duration === api.createNoopMeter().createHistogram('mcp.server.operation.duration')
  const idle = !noMetric
    ? () => false
    : (): boolean => {
        const provider = api.trace.getTracerProvider()
        // Without a propagator, the trace context and baggage in `_meta` cannot reach the handler either.
        return provider instanceof api.ProxyTracerProvider && provider.getDelegate() === noTracerProvider &&
          api.propagation.fields().length === 0
      }
  return {
    begin (request, ctx) {
      if (idle()) return UNWATCHED
      const started = performance.now()
      const method = bounded(ctx.method, NAME_LENGTH)
      const target = toolOrPromptName(ctx)
      const ambient = ambientOf(api, request)
      const parent = parentOf(api, ambient, ctx.params._meta)
      const span = tracer.startSpan(target === undefined ? method : `${method} ${target}`, {
        kind: api.SpanKind.SERVER,
        attributes: spanAttributes(ctx, method, target),
        links: linksOf(api, ambient, parent),
      }, parent)
      return {
        // With no SDK and no context from `_meta`, the span is an invalid no-op: nothing to run the dispatch in.
        within: parent === ambient && !api.trace.isSpanContextValid(span.spanContext())
          ? undefined
          : scoped(api, parent, span),
        ended: (end) => {
          const errorType = errorTypeOf(end)
          if (span.isRecording()) {
            if (end.round !== 0) span.setAttribute('mocapi.mrtr.round', end.round)
            span.setAttribute('mocapi.call.outcome', end.outcome)
            if (end.code !== undefined) span.setAttribute('rpc.response.status_code', String(end.code))
            if (errorType !== undefined) {
              span.setAttribute('error.type', errorType)
              span.setStatus(end.outcome === 'error' ? { code: api.SpanStatusCode.ERROR, message: end.message } : { code: api.SpanStatusCode.ERROR })
            }
          }
          span.end()
          duration.record((performance.now() - started) / 1000, metricAttributes(ctx, method, target, end, errorType))
        },
      }
    },
  }
}

function notInstalled (error: unknown): boolean {
  const { code } = Object(error) as { code?: unknown }
  return code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND'
}

/** Undefined without `@opentelemetry/api`, or with a warning if it fails to load: tracing is not worth failing for. */
export async function callTracing (
  log: FastifyBaseLogger,
  load: ApiLoader = importApi
): Promise<CallObserver | undefined> {
  let api: Api
  try {
    api = await load()
  } catch (error) {
    if (!notInstalled(error)) log.warn({ err: error }, 'mocapi: @opentelemetry/api could not be loaded, so calls are not traced')
    return undefined
  }
  return callTracer(api)
}
