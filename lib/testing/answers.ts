import type { CreateMessageParams, CreateMessageResult, Root } from '../protocol/wire.js'
import type { RequestedSchema } from '../elicitation/schema.js'
import type { InputRequest, JsonObject } from '../protocol/wire.js'

/** Accepted form content: a value per field of the requested schema. */
export type ElicitContent = Record<string, string | number | boolean | string[]>

/** The answer to an elicitation (`ElicitResult`). URL mode accepts without content. */
export type ElicitResult =
  | { action: 'accept', content?: ElicitContent }
  | { action: 'decline' }
  | { action: 'cancel' }

/** The answer to `roots/list` (`ListRootsResult`). */
export interface ListRootsResult {
  roots: Root[]
}

/** Any answer a client puts in `inputResponses`. */
export type InputResponse = ElicitResult | CreateMessageResult | ListRootsResult

/** A form-mode elicitation: answer with `accept(content)`, `decline()` or `cancel()`. */
export interface ElicitView {
  kind: 'elicit'
  key: string
  message: string
  /** The flat `requestedSchema` the content must match. */
  schema: RequestedSchema
  request: InputRequest
}

/** A URL-mode elicitation: `accept()` means the user agreed to open `url`. */
export interface ElicitUrlView {
  kind: 'elicitUrl'
  key: string
  message: string
  url: string
  request: InputRequest
}

/** A sampling request: answer with a `CreateMessageResult`, say `sampled('Paris')`. */
export interface SampleView {
  kind: 'sample'
  key: string
  params: CreateMessageParams
  request: InputRequest
}

/** A roots request: answer with `roots(...)`. */
export interface RootsView {
  kind: 'roots'
  key: string
  request: InputRequest
}

/** One input request as an answer callback sees it; narrow on `kind`. */
export type InputRequestView = ElicitView | ElicitUrlView | SampleView | RootsView

/** The answer each kind of request takes. */
export interface AnswerOf {
  elicit: ElicitResult
  elicitUrl: ElicitResult
  sample: CreateMessageResult
  roots: ListRootsResult
}

/** Answers one request; it may be async. */
export type AnswerFunction = (request: InputRequestView) => InputResponse | Promise<InputResponse>

/** An item of an answer queue: a fixed answer, or a function of the request it answers. */
export type QueuedAnswer = InputResponse | AnswerFunction

/**
 * How a call answers its input requests: a function of each request, an object keyed by input
 * key (each value an answer or a function), or an array used as a queue, in the order asked.
 */
export type Answers = AnswerFunction | { readonly [key: string]: QueuedAnswer } | readonly QueuedAnswer[]

/** An accepted form (or, without content, an accepted URL). */
export function accept (content?: ElicitContent): ElicitResult {
  return content === undefined ? { action: 'accept' } : { action: 'accept', content }
}

/** The user said no. */
export function decline (): ElicitResult {
  return { action: 'decline' }
}

/** The user dismissed the request. */
export function cancel (): ElicitResult {
  return { action: 'cancel' }
}

/** A sampling answer holding one assistant text message. */
export function sampled (text: string, model = 'mocapi-test-model'): CreateMessageResult {
  return { role: 'assistant', content: { type: 'text', text }, model, stopReason: 'endTurn' }
}

/** A roots answer; a string is a root's URI. */
export function roots (...list: Array<string | Root>): ListRootsResult {
  return { roots: list.map((root) => typeof root === 'string' ? { uri: root } : root) }
}

/**
 * A queue of answers, consumed one per input request in the order they are asked (within a
 * round, in the order of `inputRequests`). It throws when asked past its end. Share one queue
 * across calls to spread its answers over them; a plain array gives each call its own queue.
 */
export function answers (list: readonly QueuedAnswer[]): AnswerFunction {
  const queue = [...list]
  return (request) => {
    const next = queue.shift()
    if (next === undefined) throw new Error(`the answer queue is empty; nothing left to answer ${describe(request)}`)
    return typeof next === 'function' ? next(request) : next
  }
}

/** Handlers per kind of request, each typed by its kind; a kind left out fails the call when asked. */
export type KindHandlers = {
  [K in InputRequestView['kind']]?: (request: Extract<InputRequestView, { kind: K }>) => AnswerOf[K] | Promise<AnswerOf[K]>
}

/** Answers by kind of request: `byKind({ elicit: (r) => accept({ ... }), sample: () => sampled('...') })`. */
export function byKind (handlers: KindHandlers): AnswerFunction {
  return (request) => {
    const handler = handlers[request.kind] as AnswerFunction | undefined
    if (handler === undefined) throw new Error(`no ${request.kind} handler for ${describe(request)}`)
    return handler(request)
  }
}

export function answerFunction (given: Answers | undefined): AnswerFunction {
  if (given === undefined) {
    return (request) => { throw new Error(`no answers were given, and the server asks ${describe(request)}`) }
  }
  if (typeof given === 'function') return given
  if (Array.isArray(given)) return answers(given)
  const byKey = given as { readonly [key: string]: QueuedAnswer }
  return (request) => {
    if (!Object.hasOwn(byKey, request.key)) throw new Error(`no answer for ${describe(request)}`)
    const answer = byKey[request.key]
    return typeof answer === 'function' ? answer(request) : answer
  }
}

export function viewOf (key: string, request: InputRequest): InputRequestView {
  const params = (request.params ?? {}) as JsonObject
  switch (request.method) {
    case 'elicitation/create':
      return params.mode === 'url'
        ? { kind: 'elicitUrl', key, message: params.message as string, url: params.url as string, request }
        : { kind: 'elicit', key, message: params.message as string, schema: params.requestedSchema as RequestedSchema, request }
    case 'sampling/createMessage':
      return { kind: 'sample', key, params: params as CreateMessageParams, request }
    case 'roots/list':
      return { kind: 'roots', key, request }
    default:
      throw new Error(`input request "${key}" has the method ${JSON.stringify((request as { method: unknown }).method)}, ` +
        'which is not one of elicitation/create, sampling/createMessage, roots/list')
  }
}

export function describe (request: InputRequestView): string {
  const what = request.kind === 'elicit' || request.kind === 'elicitUrl' ? `: ${JSON.stringify(request.message)}` : ''
  return `input request "${request.key}" (${request.kind}${what})`
}
