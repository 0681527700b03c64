import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import { checkRootsAnswer, checkSamplingAnswer, checkUrlAnswer, type ElicitAnswer, type FormAnswers, type ResponseCheck } from './elicitation/answers.js'
import { schemaDigest, schemaJson, type RequestedSchemaBuilder } from './elicitation/schema.js'
import { InvalidArgumentError } from './errors.js'
import { digest } from './digest.js'
import type { Question } from './mrtr/fingerprint.js'
import {
  LOGGING_LEVELS, isPlainObject,
  type ClientCapabilities, type Implementation, type InputRequest, type JsonObject, type LoggingLevel, type RequestId, type RequestMeta,
} from './protocol/wire.js'

/** Where a context sends notifications: the request's reply stream. */
export interface NotificationStream {
  /** Sends one JSON-RPC message on the stream; false when it could not (the client left, the reply is done). */
  notify (message: object): boolean
  /** Aborted when the client goes away, or the server shuts down, before the response is complete. */
  readonly signal: AbortSignal
}

/** What the client told the server about itself: in `_meta` of each request, or in its session. */
export interface ClientState {
  readonly protocolVersion: string
  readonly capabilities: ClientCapabilities
  readonly info: Implementation | undefined
  /** The least severe log level the client wants, or undefined for none. */
  readonly logLevel: LoggingLevel | undefined
  /** The id of its 2025-era session; undefined for a 2026-07-28 request or a 2025-era one without a session. */
  readonly session?: string
  /** When that session expires, in epoch milliseconds. */
  readonly sessionExpiresAt?: number
}

/**
 * Who is calling: `anonymous` (no credentials), `bound` (a principal to bind tokens to), or
 * `unbound` (authenticated, but no principal could be derived: interactive rounds are refused).
 */
export type PrincipalState = 'anonymous' | 'bound' | 'unbound'

/** Where input requests go: the pass the handler runs in, and the checks of form answers. */
export interface AskTarget {
  ask (question: Question, key: string | undefined, prefix: string, accept: ResponseCheck, missing: Record<string, unknown> | undefined): Promise<unknown>
  readonly forms: FormAnswers
  /** Aborted when the pass is over. */
  readonly signal: AbortSignal
}

const ROOTS_SHAPE = digest('roots', '')

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
 * A signal aborted when either of two is, with the reason of the first. Not `AbortSignal.any`:
 * on Node 20 a signal it makes is kept for good once it has a listener (nodejs/node#54614), so a
 * handler that listened on `ctx.signal` leaked on every call. Here the listeners sit on the two
 * sources, which belong to the request, and leave them once one aborts.
 */
function eitherAborts (a: AbortSignal, b: AbortSignal): AbortSignal {
  const controller = new AbortController()
  if (a.aborted || b.aborted) {
    controller.abort((a.aborted ? a : b).reason)
    return controller.signal
  }
  const onAbort = (): void => {
    a.removeEventListener('abort', onAbort)
    b.removeEventListener('abort', onAbort)
    controller.abort((a.aborted ? a : b).reason)
  }
  a.addEventListener('abort', onAbort)
  b.addEventListener('abort', onAbort)
  return controller.signal
}

let bind: (ctx: McpContext, target: AskTarget | undefined, round: number) => void
let stateOf: (ctx: McpContext) => PrincipalState
let streamOfContext: (ctx: McpContext) => NotificationStream
let roundOfContext: (ctx: McpContext) => number
let clientOfContext: (ctx: McpContext) => ClientState

/**
 * The per-request MCP context: `request.mcp`, and the `ctx` every handler receives.
 *
 * It is made by mocapi for each request; its fields are read-only and its methods are the
 * whole of its API.
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
  readonly #client: ClientState
  readonly #principalState: PrincipalState
  readonly #stream: NotificationStream
  #target: AskTarget | undefined
  #round = 0
  #signal: AbortSignal | undefined
  /** The last progress the handler reported in this pass. */
  #lastProgress = -Infinity
  /** The last progress sent: a 2025-era call replays on one stream, and its client must hear progress increase. */
  #sentProgress = -Infinity
  /** Calls of `log()` in this pass, and the most any pass of the call made: a replayed pass's calls are not sent again. */
  #passLogs = 0
  #madeLogs = 0

  static {
    bind = (ctx, target, round) => {
      ctx.#target = target
      ctx.#round = round
      ctx.#signal = undefined
      ctx.#lastProgress = -Infinity
      ctx.#passLogs = 0
    }
    stateOf = (ctx) => ctx.#principalState
    streamOfContext = (ctx) => ctx.#stream
    roundOfContext = (ctx) => ctx.#round
    clientOfContext = (ctx) => ctx.#client
  }

  /** @internal made by mocapi's transport for each request */
  constructor (request: FastifyRequest, message: { id: RequestId, method: string, params: JsonObject },
    client: ClientState, principal: { value: string | null, state: PrincipalState }, stream: NotificationStream) {
    this.request = request
    this.id = message.id
    this.method = message.method
    this.params = message.params
    this.principal = principal.value
    this.#principalState = principal.state
    this.#client = client
    this.#stream = stream
  }

  /** The request's `_meta`. */
  get meta (): RequestMeta {
    return (this.params._meta ?? {}) as RequestMeta
  }

  /** The protocol version the request was made with. */
  get protocolVersion (): string {
    return this.#client.protocolVersion
  }

  /** The capabilities the client declared: on this request (2026-07-28), or when its session began (2025). */
  get clientCapabilities (): ClientCapabilities {
    return this.#client.capabilities
  }

  /** The client's name and version, when it sent them. */
  get clientInfo (): Implementation | undefined {
    return this.#client.info
  }

  /**
   * Aborted when the client goes away before the response is complete, when the server shuts
   * down, and, in a handler, when its pass is over: it completed, or it asked for input and the
   * round was answered `input_required` (work the handler left running should stop then).
   */
  get signal (): AbortSignal {
    const target = this.#target
    if (target === undefined) return this.#stream.signal
    this.#signal ??= eitherAborts(this.#stream.signal, target.signal)
    return this.#signal
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
   * make the same `elicit()` calls in the same order on every replay, with the same message:
   * text that embeds live data (a price fetched each round) breaks the replay.
   *
   * Decline and cancel are values, not errors.
   */
  elicit<T extends object> (message: string, schema: RequestedSchemaBuilder<T>, options: ElicitOptions = {}): Promise<ElicitAnswer<T>> {
    if (typeof message !== 'string') return Promise.reject(new InvalidArgumentError(`ctx.elicit() needs a message string, got ${typeof message}`))
    const target = this.#target
    if (target === undefined) return this.#outsideHandler()
    // The schema's digest stands for the schema: the request itself is only built when sent.
    const question: Question = {
      kind: 'elicit',
      shape: schemaDigest(schema),
      text: message,
      size: message.length + schemaJson(schema).length,
      build: () => ({ method: 'elicitation/create', params: { mode: 'form', message, requestedSchema: schema.schema as unknown as JsonObject } }),
    }
    return target.ask(question, options.key, 'elicit', target.forms.check(schema), formMissing(this.clientCapabilities)) as Promise<ElicitAnswer<T>>
  }

  /**
   * Asks the user to open a URL (URL-mode elicitation), for input that must not pass through
   * the client, such as credentials. `accept` means the user agreed to open it, not that the
   * out-of-band step is done. The same idempotency contract as `elicit()` applies.
   */
  elicitUrl (message: string, url: string, options: ElicitOptions = {}): Promise<{ action: 'accept' | 'decline' | 'cancel' }> {
    if (typeof message !== 'string' || typeof url !== 'string') {
      return Promise.reject(new InvalidArgumentError(`ctx.elicitUrl() needs a message string and a url string, got ${typeof message} and ${typeof url}`))
    }
    const request: InputRequest = { method: 'elicitation/create', params: { mode: 'url', message, url } }
    return this.#ask({ kind: 'elicitUrl', shape: digest('elicitUrl', url), text: message, size: message.length + url.length, build: () => request },
      options.key, 'elicit', checkUrlAnswer, urlMissing(this.clientCapabilities)) as Promise<{ action: 'accept' | 'decline' | 'cancel' }>
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
      return Promise.reject(new InvalidArgumentError('ctx.sample() needs { messages: [...], maxTokens: positive integer }'))
    }
    const request: InputRequest = { method: 'sampling/createMessage', params: params as JsonObject }
    const json = JSON.stringify(params)
    return this.#ask({ kind: 'sample', shape: digest('sample', json), text: '', size: json.length, build: () => request },
      options.key, 'sample', checkSamplingAnswer, samplingMissing(this.clientCapabilities, params)) as Promise<CreateMessageResult>
  }

  /**
   * Asks the client for its roots (`roots/list`) through the same replay engine and idempotency
   * contract as `elicit()`.
   *
   * @deprecated Roots are deprecated by SEP-2577 (MCP 2026-07-28) and keep working until at
   * least 2027-07-28.
   */
  listRoots (options: ElicitOptions = {}): Promise<Root[]> {
    const request: InputRequest = { method: 'roots/list', params: {} }
    return this.#ask({ kind: 'roots', shape: ROOTS_SHAPE, text: '', size: 0, build: () => request }, options.key, 'roots', checkRootsAnswer,
      isPlainObject(this.clientCapabilities.roots) ? undefined : { roots: {} }) as Promise<Root[]>
  }

  #ask (question: Question, key: string | undefined, prefix: string, accept: ResponseCheck, missing: Record<string, unknown> | undefined): Promise<unknown> {
    const target = this.#target
    if (target === undefined) return this.#outsideHandler()
    return target.ask(question, key, prefix, accept, missing)
  }

  #outsideHandler (): Promise<never> {
    return Promise.reject(new Error(`input requests (ctx.elicit, ctx.sample, ctx.listRoots) are only available in tools/call, prompts/get and resources/read handlers, not in ${this.method}`))
  }

  /**
   * Reports progress with `notifications/progress`, when the request asked for it with
   * `_meta.progressToken`. `progress` must increase from one call to the next within a pass of the
   * handler; a replayed pass may report again what an earlier pass of the same request sent,
   * which is not sent twice.
   */
  progress (progress: number, total?: number, message?: string): void {
    const progressToken = this.meta.progressToken
    if (typeof progress !== 'number' || !(progress > this.#lastProgress)) {
      throw new InvalidArgumentError(`progress must be a number greater than the last one reported (${this.#lastProgress}), got ${progress}`)
    }
    this.#lastProgress = progress
    if (progressToken === undefined || progress <= this.#sentProgress) return
    this.#sentProgress = progress
    const params: JsonObject = { progressToken, progress }
    if (total !== undefined) params.total = total
    if (message !== undefined) params.message = message
    this.#stream.notify({ jsonrpc: '2.0', method: 'notifications/progress', params })
  }

  /**
   * Sends an MCP log message (`notifications/message`) to the client, only when it asked for log
   * messages (the request's `_meta`, or the session's `logging/setLevel`) and `level` is at or above
   * the level it asked for.
   *
   * A 2025-era call replays its handler on one stream, so a replayed pass does not send again what
   * an earlier pass of the same call logged: its first N calls, for the N calls an earlier pass
   * made, are replays and stay unsent. In the 2026-07-28 era each round is its own request, and its
   * stream carries every message of its pass.
   */
  log (level: LoggingLevel, data: unknown, logger?: string): void {
    const rank = LOGGING_LEVELS.indexOf(level)
    if (rank === -1) throw new InvalidArgumentError(`level must be one of ${LOGGING_LEVELS.join(', ')}, got ${String(level)}`)
    // Counted before the level check: a level changed between passes must not shift which calls are replays.
    if (++this.#passLogs <= this.#madeLogs) return
    this.#madeLogs = this.#passLogs
    const wanted = this.#client.logLevel
    if (wanted === undefined || rank < LOGGING_LEVELS.indexOf(wanted)) return
    const params: JsonObject = { level, data }
    if (logger !== undefined) params.logger = logger
    this.#stream.notify({ jsonrpc: '2.0', method: 'notifications/message', params })
  }
}

/** Binds a context's input requests to the pass its handler runs in, the `round`-th of its call (the replay engine's side of the context). */
export function bindAsker (ctx: McpContext, target: AskTarget | undefined, round: number): void {
  bind(ctx, target, round)
}

/** Which round of its call the context's request is: 1 for a first call, 0 for a method that takes no rounds. */
export function roundOf (ctx: McpContext): number {
  return roundOfContext(ctx)
}

/** Whether the caller is anonymous, bound to a principal, or authenticated without one. */
export function principalState (ctx: McpContext): PrincipalState {
  return stateOf(ctx)
}

/** The reply stream of a context's request, for the methods that stream (subscriptions). */
export function streamOf (ctx: McpContext): NotificationStream {
  return streamOfContext(ctx)
}

/** What the client of a context told the server about itself (its session, for a 2025-era client). */
export function clientOf (ctx: McpContext): ClientState {
  return clientOfContext(ctx)
}
