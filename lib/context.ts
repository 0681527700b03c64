import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import type { RequestedSchemaBuilder } from './elicitation/schema.js'
import { schemaInfo, validateElicitResult, validatorFor, type ElicitAnswer } from './elicitation/validate.js'
import { questionOf, type Question, type ReplayPass } from './mrtr/engine.js'
import type { MethodSpec } from './protocol/dispatch.js'
import type { RestoredState } from './mrtr/replay.js'
import {
  LOGGING_LEVELS, META_CLIENT_CAPABILITIES, META_CLIENT_INFO, META_LOG_LEVEL, META_PROTOCOL_VERSION, isPlainObject,
  type ClientCapabilities, type Implementation, type JsonObject, type LoggingLevel, type RequestId, type RequestMeta,
} from './protocol/wire.js'

/** Where a context sends notifications: the request's reply stream. */
export interface NotificationSink {
  notify (message: object): boolean
  readonly signal: AbortSignal
}

/** A message of a sampling request or result. */
export interface SamplingMessage {
  role: 'user' | 'assistant'
  content: JsonObject | JsonObject[]
  _meta?: JsonObject
}

/** The params of `sampling/createMessage`. */
export interface CreateMessageParams {
  messages: SamplingMessage[]
  /** An integer. */
  maxTokens: number
  systemPrompt?: string
  modelPreferences?: JsonObject
  includeContext?: 'none' | 'thisServer' | 'allServers'
  temperature?: number
  stopSequences?: string[]
  metadata?: JsonObject
  tools?: JsonObject[]
  toolChoice?: JsonObject
  [key: string]: unknown
}

/** What the client's model answered. */
export interface CreateMessageResult {
  role: 'user' | 'assistant'
  content: JsonObject | JsonObject[]
  model: string
  stopReason?: string
  [key: string]: unknown
}

/** One root the client exposes. */
export interface Root {
  uri: string
  name?: string
  [key: string]: unknown
}

/** Options of `ctx.elicit` and `ctx.elicitUrl`. */
export interface ElicitOptions {
  /** A stable key for this input request in `inputRequests`, unique within the request. Default `elicit-<ordinal>`. */
  key?: string
}

const NO_ANSWER_CHECK = (value: unknown): { ok: true, value: unknown } | { ok: false, message: string } => {
  if (!isPlainObject(value)) return { ok: false, message: 'result must be an object' }
  const action = value.action
  if (action === 'accept' || action === 'decline' || action === 'cancel') return { ok: true, value: { action } }
  return { ok: false, message: 'result.action must be one of accept, decline, cancel' }
}

function checkSamplingResult (value: unknown): { ok: true, value: unknown } | { ok: false, message: string } {
  if (!isPlainObject(value)) return { ok: false, message: 'result must be an object' }
  if (value.role !== 'user' && value.role !== 'assistant') return { ok: false, message: 'result.role must be user or assistant' }
  if (!isPlainObject(value.content) && !Array.isArray(value.content)) return { ok: false, message: 'result.content must be an object or an array' }
  if (typeof value.model !== 'string') return { ok: false, message: 'result.model must be a string' }
  return { ok: true, value }
}

function checkRootsResult (value: unknown): { ok: true, value: unknown } | { ok: false, message: string } {
  const roots = isPlainObject(value) ? value.roots : undefined
  if (!Array.isArray(roots) || !roots.every((root) => isPlainObject(root) && typeof root.uri === 'string')) {
    return { ok: false, message: 'result.roots must be an array of { uri }' }
  }
  return { ok: true, value: roots }
}

function samplingMissing (caps: ClientCapabilities, params: CreateMessageParams): Record<string, unknown> | undefined {
  const sampling = caps.sampling
  if (!isPlainObject(sampling)) return { sampling: {} }
  if ((params.tools !== undefined || params.toolChoice !== undefined) && !isPlainObject(sampling.tools)) return { sampling: { tools: {} } }
  if (params.includeContext !== undefined && params.includeContext !== 'none' && !isPlainObject(sampling.context)) return { sampling: { context: {} } }
  return undefined
}

function formMissing (caps: ClientCapabilities): Record<string, unknown> | undefined {
  const elicitation = caps.elicitation
  if (!isPlainObject(elicitation)) return { elicitation: {} }
  if (elicitation.form === undefined && elicitation.url !== undefined) return { elicitation: { form: {} } }
  return undefined
}

function urlMissing (caps: ClientCapabilities): Record<string, unknown> | undefined {
  const elicitation = caps.elicitation
  return isPlainObject(elicitation) && isPlainObject(elicitation.url) ? undefined : { elicitation: { url: {} } }
}

/**
 * The per-request MCP context: `request.mcp`, and the `ctx` every handler receives.
 */
export class McpContext {
  /** The Fastify request. */
  readonly request: FastifyRequest
  /** The JSON-RPC id of the request. */
  readonly id: RequestId
  /** The JSON-RPC method. */
  readonly method: string
  /** The request's params, `_meta` included. */
  readonly params: JsonObject
  /** The authenticated caller bound into requestState tokens, or `null`. */
  readonly principal: string | null
  /** @internal the ledger restored from a verified requestState */
  readonly restored: RestoredState | undefined
  /** @internal */
  pass: ReplayPass | undefined
  /** @internal the method's spec, found once by the preHandler */
  spec: MethodSpec | undefined
  /** @internal where notifications go: the reply stream */
  readonly sink: NotificationSink
  #lastProgress = -Infinity

  /** @internal */
  constructor (request: FastifyRequest, envelope: { id: RequestId, method: string, params: JsonObject },
    principal: string | null, restored: RestoredState | undefined, sink: NotificationSink) {
    this.request = request
    this.id = envelope.id
    this.method = envelope.method
    this.params = envelope.params
    this.principal = principal
    this.restored = restored
    this.sink = sink
  }

  /** The request's `_meta`. */
  get meta (): RequestMeta {
    return this.params._meta as RequestMeta
  }

  /** The protocol version the request was made with. */
  get protocolVersion (): string {
    return this.meta[META_PROTOCOL_VERSION]
  }

  /** The capabilities the client declared on this request (never inferred from earlier requests). */
  get clientCapabilities (): ClientCapabilities {
    return this.meta[META_CLIENT_CAPABILITIES]
  }

  /** The client's name and version, when it sent them. */
  get clientInfo (): Implementation | undefined {
    return this.meta[META_CLIENT_INFO]
  }

  /** Aborted when the client goes away before the response is complete. */
  get signal (): AbortSignal {
    return this.sink.signal
  }

  /** The request's pino logger. Answers, tokens and keys are never logged above debug. */
  get logger (): FastifyBaseLogger {
    return this.request.log
  }

  /**
   * Asks the user for input described by a `requestedSchema()` and returns the answer.
   *
   * **Idempotency contract.** mocapi keeps no state between rounds: when the answer is not
   * known yet, the request ends with an `input_required` result, and when the client retries,
   * the handler runs again *from the top*, taking earlier answers from the ledger carried in
   * `requestState`. Code before the last `elicit()` therefore runs once per round: a handler
   * that charges a card and then asks for confirmation charges the card on every retry. Put
   * side effects after the last `elicit()`, or behind your own idempotency keys. A handler must
   * make the same `elicit()` calls in the same order on every replay.
   *
   * Decline and cancel are values, not errors.
   */
  elicit<T extends object> (message: string, schema: RequestedSchemaBuilder<T>, options: ElicitOptions = {}): Promise<ElicitAnswer<T>> {
    if (typeof message !== 'string') return Promise.reject(new TypeError(`ctx.elicit() needs a message string, got ${typeof message}`))
    // The schema's digest stands for the schema: the rendered object is only needed when sent.
    const info = schemaInfo(schema)
    const question: Question = {
      tag: info.digest,
      text: message,
      build: () => ({ method: 'elicitation/create', params: { mode: 'form', message, requestedSchema: schema.schema as unknown as JsonObject } }),
    }
    return this.#ask(question, options.key, 'elicit', (value) => validateElicitResult(value, validatorFor(schema, info)),
      formMissing(this.clientCapabilities)) as Promise<ElicitAnswer<T>>
  }

  /**
   * Asks the user to open a URL (URL-mode elicitation), for input that must not pass through
   * the client, such as credentials. `accept` means the user agreed to open it, not that the
   * out-of-band step is done. The same idempotency contract as `elicit()` applies.
   */
  elicitUrl (message: string, url: string, options: ElicitOptions = {}): Promise<{ action: 'accept' | 'decline' | 'cancel' }> {
    if (typeof message !== 'string' || typeof url !== 'string') {
      return Promise.reject(new TypeError(`ctx.elicitUrl() needs a message string and a url string, got ${typeof message} and ${typeof url}`))
    }
    return this.#ask(questionOf({ method: 'elicitation/create', params: { mode: 'url', message, url } }),
      options.key, 'elicit', NO_ANSWER_CHECK, urlMissing(this.clientCapabilities)) as Promise<{ action: 'accept' | 'decline' | 'cancel' }>
  }

  /**
   * Asks the client's model for a completion (`sampling/createMessage`) through the same
   * replay engine and idempotency contract as `elicit()`.
   *
   * @deprecated Sampling is deprecated by SEP-2577 (MCP 2026-07-28) and keeps working until at
   * least 2027-07-28.
   */
  sample (params: CreateMessageParams, options: ElicitOptions = {}): Promise<CreateMessageResult> {
    if (!isPlainObject(params) || !Array.isArray(params.messages) || !Number.isSafeInteger(params.maxTokens) || params.maxTokens <= 0) {
      return Promise.reject(new TypeError('ctx.sample() needs { messages: [...], maxTokens: positive integer }'))
    }
    return this.#ask(questionOf({ method: 'sampling/createMessage', params: params as JsonObject }), options.key, 'sample',
      checkSamplingResult, samplingMissing(this.clientCapabilities, params)) as Promise<CreateMessageResult>
  }

  /**
   * Asks the client for its roots (`roots/list`) through the same replay engine and idempotency
   * contract as `elicit()`.
   *
   * @deprecated Roots are deprecated by SEP-2577 (MCP 2026-07-28) and keep working until at
   * least 2027-07-28.
   */
  listRoots (options: ElicitOptions = {}): Promise<Root[]> {
    return this.#ask(questionOf({ method: 'roots/list', params: {} }), options.key, 'roots', checkRootsResult,
      isPlainObject(this.clientCapabilities.roots) ? undefined : { roots: {} }) as Promise<Root[]>
  }

  #ask (question: Question, key: string | undefined, prefix: string,
    accept: (value: unknown) => { ok: true, value: unknown } | { ok: false, message: string },
    missing: Record<string, unknown> | undefined): Promise<unknown> {
    if (this.pass === undefined) {
      return Promise.reject(new Error(`input requests (ctx.elicit, ctx.sample, ctx.listRoots) are only available in tools/call, prompts/get and resources/read handlers, not in ${this.method}`))
    }
    return this.pass.ask(question, key, prefix, accept, missing)
  }

  /**
   * Reports progress with `notifications/progress`, when the request asked for it with
   * `_meta.progressToken`. `progress` must increase from one call to the next.
   */
  progress (progress: number, total?: number, message?: string): void {
    const progressToken = this.meta.progressToken
    if (typeof progress !== 'number' || !(progress > this.#lastProgress)) {
      throw new TypeError(`progress must be a number greater than the last one reported (${this.#lastProgress}), got ${progress}`)
    }
    this.#lastProgress = progress
    if (progressToken === undefined) return
    const params: JsonObject = { progressToken, progress }
    if (total !== undefined) params.total = total
    if (message !== undefined) params.message = message
    this.sink.notify({ jsonrpc: '2.0', method: 'notifications/progress', params })
  }

  /**
   * Sends an MCP log message (`notifications/message`) to the client, only when the request's
   * `_meta` asked for a log level and `level` is at or above it.
   */
  log (level: LoggingLevel, data: unknown, logger?: string): void {
    const rank = LOGGING_LEVELS.indexOf(level)
    if (rank === -1) throw new TypeError(`level must be one of ${LOGGING_LEVELS.join(', ')}, got ${String(level)}`)
    const wanted = this.meta[META_LOG_LEVEL]
    if (wanted === undefined || rank < LOGGING_LEVELS.indexOf(wanted)) return
    const params: JsonObject = { level, data }
    if (logger !== undefined) params.logger = logger
    this.sink.notify({ jsonrpc: '2.0', method: 'notifications/message', params })
  }
}
