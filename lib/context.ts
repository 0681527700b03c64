import { newCallId } from './journal.js'
import type { FastifyBaseLogger, FastifyRequest } from 'fastify'
import type { CallState } from './call.js'
import type { ElicitAnswer } from './elicitation/answers.js'
import { FormQuestion, ROOTS_QUESTION, SamplingQuestion, UrlQuestion, type Question } from './elicitation/questions.js'
import type { RequestedSchemaBuilder } from './elicitation/schema.js'
import { InvalidArgumentError } from './errors.js'
import { UI_EXTENSION, declares, showsViews } from './protocol/extensions.js'
import {
  LOGGING_LEVELS, isPlainObject,
  type ClientCapabilities, type CreateMessageParams, type CreateMessageResult, type Implementation, type JsonObject,
  type JsonValue, type LoggingLevel, type RequestId, type RequestMeta, type Root,
} from './protocol/wire.js'
import { kCallState } from './symbols.js'

export type { CreateMessageParams, CreateMessageResult, Root, SamplingMessage } from './protocol/wire.js'

/** What `ctx.once` resolves: the value as JSON reads it back (`undefined` becomes `null`). */
export type Recorded<T> = T extends undefined | void ? null : T

/**
 * `T` itself when `ctx.once` can record it: JSON (objects, arrays, strings, finite numbers, booleans, null), with
 * `undefined` at the top or as a property, which JSON leaves out. Otherwise a type `T` is not assignable to: a
 * function, `bigint`, `symbol`, `undefined` in an array, or an object with methods (a `Date`, `Map`, `Set`, a class
 * instance). `unknown` and `any` pass, and are checked at run time, as a class instance with data only is.
 */
export type Journalable<T> = unknown extends T ? T
  : T extends JsonValue | undefined | void ? T
    : T extends readonly unknown[] ? { [K in keyof T]: JournalableItem<T[K]> }
      : T extends bigint | symbol | ((...args: never[]) => unknown) ? NotJson
        : { [K in keyof T]: Journalable<T[K]> }

type JournalableItem<T> = unknown extends T ? T : undefined extends T ? NotJson : Journalable<T>

declare const notJson: unique symbol
/** Where {@link Journalable} meets what JSON cannot hold; no value fits it, and a compiler error names it. */
interface NotJson { readonly [notJson]: never }

/** `fn` of `ctx.once`: `T` is inferred from what it returns, which must then be {@link Journalable}. */
type OnceFunction<T> = (() => T | PromiseLike<T>) & (() => NoInfer<Journalable<T> | PromiseLike<Journalable<T>>>)

/** Options of `ctx.elicit`, `ctx.elicitUrl`, `ctx.sample` and `ctx.listRoots`. */
export interface ElicitOptions {
  /** A stable key for this input request in `inputRequests`, unique within the request. Default `elicit-<ordinal>`. */
  key?: string | undefined
  /**
   * `'return'`: when the client cannot be asked (it lacks the capability, or the operator's `elicitation.disable`
   * took it away), resolve `{ action: 'unavailable', reason }` instead of failing with -32021.
   */
  unavailable?: 'return' | undefined
}

/** The capability each kind of question needs, in words. */
const NEEDS = {
  elicit: 'the elicitation capability (form mode)',
  elicitUrl: 'the elicitation capability in URL mode',
  sample: 'the sampling capability',
  roots: 'the roots capability',
} as const

/** What an input request resolves when nobody could be asked and it was given `{ unavailable: 'return' }`. */
export interface Unavailable {
  action: 'unavailable'
  /** Why, in words for a log or for the tool's own reply. */
  reason: string
}

/** `R`, or `Unavailable` besides when the options say `unavailable: 'return'`. */
type OrUnavailable<R, O> = O extends { unavailable: 'return' } ? R | Unavailable : R

/**
 * The per-request MCP context: `request.mcp`, and the `ctx` every handler receives. mocapi makes it for each
 * request; its fields are read-only and its methods are the whole of its API.
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
  /** @internal */
  readonly [kCallState]: CallState

  /** @internal made by mocapi's transport for each request */
  constructor (call: CallState) {
    this.request = call.request
    this.id = call.id
    this.method = call.method
    this.params = call.params
    this.principal = call.principal.value
    this[kCallState] = call
  }

  /** The request's `_meta`. */
  get meta (): RequestMeta {
    return (this.params._meta ?? {}) as RequestMeta
  }

  /** The protocol version the request was made with. */
  get protocolVersion (): string {
    return this[kCallState].client.protocolVersion
  }

  /** The capabilities the client declared: on this request (2026-07-28), or when its session began (2025). */
  get clientCapabilities (): ClientCapabilities {
    return this[kCallState].client.capabilities
  }

  /**
   * Whether the client declared a capability (`'elicitation'`, `'sampling'`, `'roots'`) or an extension
   * (`'io.modelcontextprotocol/ui'`, …) under `capabilities.extensions`: on this request (2026-07-28), or when its
   * session began (2025; a session keeps the core capabilities and the views extension only). For the MCP Apps
   * extension, only with the view mime type among its `mimeTypes`, so true means a host that renders the view of the
   * tool being called. Elicitation the operator turned off (`elicitation.disable`) reads as not declared.
   */
  clientSupports (name: string): boolean {
    const capabilities = this[kCallState].client.capabilities
    if (name === UI_EXTENSION) return showsViews(capabilities)
    if (name.includes('/')) return declares(capabilities, name)
    return Object.hasOwn(capabilities, name) && isPlainObject(capabilities[name])
  }

  /** The client's name and version, when it sent them. */
  get clientInfo (): Implementation | undefined {
    return this[kCallState].client.info
  }

  /**
   * Aborted when the client goes away before the response is complete, when the server shuts down, and, in a
   * handler, when its pass is over: it completed, or it asked for input and the round was answered `input_required`
   * (work the handler left running should stop then). A handler whose client left, or whose server began to close,
   * before it began is not run: a handler's signal is live when it begins, so a listener it adds hears the abort.
   */
  get signal (): AbortSignal {
    const state = this[kCallState]
    return state.target === undefined ? state.stream.signal : state.passSignal(state.target)
  }

  /**
   * Makes a task-capable call a task (the tasks extension): the client gets the task at once, and the handler goes
   * on in the background. What it asks from here is answered through `tasks/update`, and its result is kept for
   * `tasks/get`. Questions asked before it are rounds of the call, and like them, the code before it runs again on
   * each round. The call becomes a task at `detach()`, or at the first turn in which the handler is neither asking
   * nor done (its first `await` on anything but mocapi), whichever comes first; a `detach()` in the same turn as a
   * question comes too late: that pass is a round of the call. Without `task: { detach: true }`, such a call becomes a
   * task before its handler runs, and `detach()` rejects. Resolves at once where there is no task to become: a tool
   * without `task`, a client without the extension, a 2025-era client, a later pass of a task.
   */
  detach (): Promise<void> {
    return this[kCallState].detacher?.() ?? Promise.resolve()
  }

  /**
   * The call's id: 22 base64url characters, the same on every pass of one call (every round, retry and task pass, on
   * any node) and new for another call. For a call with an idempotency key it is derived from the caller and the key,
   * so a duplicate that runs again has it too. Hand it downstream as the idempotency key of the payment or ticket API
   * a handler calls: an effect that ran, but whose node died before `ctx.once` recorded it, then still runs once.
   */
  get callId (): string {
    const state = this[kCallState]
    return (state.callId ??= newCallId())
  }

  /** The request's pino logger. Answers, tokens and keys are never logged above debug. */
  get logger (): FastifyBaseLogger {
    return this.request.log
  }

  /**
   * Asks the user for input described by a `requestedSchema()` and returns the answer.
   *
   * **Idempotency contract.** mocapi keeps no state between rounds: when the answer is not known yet, the request ends
   * with an `input_required` result, and when the client retries, the handler runs again *from the top*, taking earlier
   * answers from the call's ledger. Code before the last `elicit()` therefore runs once per round. Wrap a side effect
   * in {@link McpContext.once | `ctx.once`} to run it once per call (a charge, a quote whose price must not move), or
   * put it after the last `elicit()`. A handler must make the same `elicit()` calls in the same order on every replay,
   * with the same message: text that embeds live data breaks the replay unless that data came from `ctx.once`.
   *
   * Decline and cancel are values, not errors.
   */
  elicit<T extends object, const O extends ElicitOptions = ElicitOptions> (
    message: string,
    schema: RequestedSchemaBuilder<T>,
    options?: O
  ): Promise<OrUnavailable<ElicitAnswer<T>, O>> {
    if (typeof message !== 'string') return Promise.reject(new InvalidArgumentError(`ctx.elicit() needs a message string, got ${typeof message}`))
    const question = new FormQuestion(message, schema, this[kCallState].forms)
    return this.#ask(question, options) as Promise<OrUnavailable<ElicitAnswer<T>, O>>
  }

  /**
   * Asks the user to open a URL (URL-mode elicitation), for input that must not pass through the client, such as
   * credentials. `accept` means the user agreed to open it, not that the out-of-band step is done. The same
   * idempotency contract as `elicit()` applies.
   */
  elicitUrl<const O extends ElicitOptions = ElicitOptions> (
    message: string,
    url: string,
    options?: O
  ): Promise<OrUnavailable<{ action: 'accept' | 'decline' | 'cancel' }, O>> {
    if (typeof message !== 'string' || typeof url !== 'string') {
      return Promise.reject(new InvalidArgumentError(`ctx.elicitUrl() needs a message string and a url string, got ${typeof message} and ${typeof url}`))
    }
    return this.#ask(new UrlQuestion(message, url), options) as Promise<OrUnavailable<{ action: 'accept' | 'decline' | 'cancel' }, O>>
  }

  /**
   * Asks the client's model for a completion (`sampling/createMessage`) under the idempotency contract of `elicit()`.
   * @deprecated Sampling is deprecated by SEP-2577 (MCP 2026-07-28) and keeps working until at least 2027-07-28.
   */
  sample<const O extends ElicitOptions = ElicitOptions> (
    params: CreateMessageParams,
    options?: O
  ): Promise<OrUnavailable<CreateMessageResult, O>> {
    if (!isPlainObject(params) || !Array.isArray(params.messages) || !Number.isSafeInteger(params.maxTokens) ||
      params.maxTokens <= 0) {
      return Promise.reject(new InvalidArgumentError('ctx.sample() needs { messages: [...], maxTokens: positive integer }'))
    }
    const question = new SamplingQuestion(params as JsonObject)
    return this.#ask(question, options) as Promise<OrUnavailable<CreateMessageResult, O>>
  }

  /**
   * Asks the client for its roots (`roots/list`) under the idempotency contract of `elicit()`.
   * @deprecated Roots are deprecated by SEP-2577 (MCP 2026-07-28) and keep working until at least 2027-07-28.
   */
  listRoots<const O extends ElicitOptions = ElicitOptions> (options?: O): Promise<OrUnavailable<Root[], O>> {
    return this.#ask(ROOTS_QUESTION, options) as Promise<OrUnavailable<Root[], O>>
  }

  /**
   * Runs `fn` once per call and journals its JSON result in the call's ledger, beside the answers: the first pass that
   * reaches `key` runs it, every later pass of the same call (another round, another node, a task's next run) reads
   * the recorded value back without calling `fn`. `undefined` is recorded as `null`; values are sealed like answers.
   *
   * Rejects, recording nothing, when `key` was already used in this pass, when the value is not JSON, or when its JSON
   * takes more than `once.maxBytes` UTF-8 bytes; a throwing `fn` is not recorded either, so a later pass runs it again.
   * A pass that asks a question waits for the effects it started before it answers: none that ran is lost. A client
   * that starts the call over starts a new ledger.
   */
  once<T> (key: string, fn: OnceFunction<T>): Promise<Recorded<Awaited<T>>> {
    const target = this[kCallState].target
    if (target === undefined) {
      return Promise.reject(new Error('ctx.once() journals an effect in a call\'s ledger: it is only available in tools/call, ' +
        `prompts/get and resources/read handlers, not in ${this.method}`))
    }
    return target.once(key, fn) as Promise<Recorded<Awaited<T>>>
  }

  #ask (question: Question, options: ElicitOptions = {}): Promise<unknown> {
    const state = this[kCallState]
    const target = state.target
    if (target === undefined) {
      return Promise.reject(new Error('input requests (ctx.elicit, ctx.sample, ctx.listRoots) are only available in tools/call, ' +
        `prompts/get and resources/read handlers, not in ${this.method}`))
    }
    const unavailable = options.unavailable
    if (unavailable !== undefined && unavailable !== 'return') {
      return Promise.reject(new InvalidArgumentError(`options.unavailable must be 'return' or left out, got ${JSON.stringify(unavailable)}`))
    }
    const reason = unavailable === undefined
      ? undefined
      : state.client.elicitationOff === true && question.kind !== 'sample' && question.kind !== 'roots'
        ? 'The server turned elicitation off for this client (elicitation.disable), so nobody was asked'
        : `The client did not declare ${NEEDS[question.kind]}, so nobody was asked`
    return target.ask(question, options.key, state.client.capabilities, reason)
  }

  /**
   * Reports progress with `notifications/progress`, when the request asked for it with `_meta.progressToken`.
   * `progress` must increase from one call to the next within a pass of the handler; a replayed pass may report
   * again what an earlier pass of the same request sent, which is not sent twice.
   */
  progress (progress: number, total?: number, message?: string): void {
    const state = this[kCallState]
    const progressToken = this.meta.progressToken
    if (typeof progress !== 'number' || !(progress > state.lastProgress)) {
      throw new InvalidArgumentError(`progress must be a number greater than the last one reported (${state.lastProgress}), got ${progress}`)
    }
    state.lastProgress = progress
    if (state.stream.progress !== undefined) return state.stream.progress(progress, total, message)
    if (progressToken === undefined || progress <= state.sentProgress) return
    state.sentProgress = progress
    const params: JsonObject = { progressToken, progress }
    if (total !== undefined) params.total = total
    if (message !== undefined) params.message = message
    state.stream.notify({ jsonrpc: '2.0', method: 'notifications/progress', params })
  }

  /**
   * Sends an MCP log message (`notifications/message`) to the client, only when it asked for log messages (the
   * request's `_meta`, or the session's `logging/setLevel`) and `level` is at or above the level it asked for.
   * A 2025-era call replays its handler on one stream, so a pass's first N calls, for the N calls an earlier pass
   * of the call made, are replays and stay unsent. In the 2026-07-28 era each round is its own request, and its
   * stream carries every message of its pass.
   */
  log (level: LoggingLevel, data: unknown, logger?: string): void {
    const state = this[kCallState]
    const rank = LOGGING_LEVELS.indexOf(level)
    if (rank === -1) throw new InvalidArgumentError(`level must be one of ${LOGGING_LEVELS.join(', ')}, got ${String(level)}`)
    // Counted before the level check: a level changed between passes must not shift which calls are replays.
    if (++state.passLogs <= state.madeLogs) return
    state.madeLogs = state.passLogs
    const wanted = state.client.logLevel
    if (wanted === undefined || rank < LOGGING_LEVELS.indexOf(wanted)) return
    const params: JsonObject = { level, data }
    if (logger !== undefined) params.logger = logger
    state.stream.notify({ jsonrpc: '2.0', method: 'notifications/message', params })
  }
}
