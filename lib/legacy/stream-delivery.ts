import { callerOf } from '../caller.js'
import type { Asked, CallState, Delivered, Delivery, ReplayStart } from '../call.js'
import { ErrorCode, McpError, invalidRequest } from '../errors.js'
import { Journal } from '../journal.js'
import { isPlainObject, type InputRequest, type JsonObject } from '../protocol/wire.js'
import type { Exchange } from './exchange.js'

function paramsFor (version: string): (request: InputRequest, id: string) => JsonObject {
  return (request, id) => {
    if (request.method !== 'elicitation/create') return request.params
    const params = { ...request.params }
    // URL mode exists from 2025-11-25 only (the capability check saw to it), and needs an id there.
    if (params.mode === 'url') params.elicitationId = id
    else if (version !== '2025-11-25') delete params.mode
    return params
  }
}

/** The client's error as the call's -32603: passed through, its code would misdescribe the call (e.g. -32601). */
function clientRefused (method: string, error: unknown): McpError {
  const code = isPlainObject(error) && Number.isSafeInteger(error.code) ? ` (${error.code as number})` : ''
  const detail = isPlainObject(error) && typeof error.message === 'string' ? `: ${error.message.slice(0, 500)}` : ''
  return new McpError(ErrorCode.InternalError, `The client answered ${method} with an error${code}${detail}`)
}

/** Questions go on the call's stream, answers come over the exchange; the ledger stays in the pass, so no budget. */
export class StreamDelivery implements Delivery {
  readonly #exchange: Exchange

  constructor (exchange: Exchange) {
    this.#exchange = exchange
  }

  start (): ReplayStart {
    return { journal: new Journal(), responses: undefined, round: 0 }
  }

  async deliver (call: CallState, label: string, asked: Asked): Promise<Delivered> {
    const { client, stream, principal } = call
    // A 2025-era client without a session declared no capabilities, so its pass failed before it asked.
    const asker = {
      session: client.session as string,
      principal: principal.value,
      expiresAt: client.sessionExpiresAt,
      caller: callerOf(principal.value, call.request.ip),
    }
    const outcome = await this.#exchange.ask(asker, asked.inputRequests, (request) => stream.notify(request),
      stream.signal, paramsFor(client.protocolVersion))
    // In-band, as for every 2025-era call that reached its method: its stream may be open already.
    if (outcome.kind === 'full') {
      throw invalidRequest(outcome.limit === 'waitingCallsPerCaller'
        ? `${label} cannot wait for the client's answer: ${outcome.bound} calls of this caller wait already, the most accepted (limits.waitingCallsPerCaller); answer or cancel one, then call again`
        : `${label} cannot wait for the client's answer: ${outcome.bound} calls wait on this server already, the most it accepts (limits.waitingCalls); try again later`, 200)
    }
    if (outcome.kind === 'timeout') {
      throw new McpError(ErrorCode.RequestTimeout, `${label} waited for the client's answer longer than session.answerTimeout allows`)
    }
    if (outcome.kind === 'expired') {
      throw new McpError(ErrorCode.RequestTimeout,
        `${label} waited for the client's answer until its session expired (session.ttl); a new session can call again`)
    }
    // The client cancelled or left, or the server is closing: the call is over, and the handler did not fail.
    if (outcome.kind === 'aborted') {
      throw new McpError(ErrorCode.InternalError, `${label} stopped waiting for the client's answer: ${(outcome.reason as Error).message}`)
    }
    if (outcome.errors.length > 0) throw clientRefused(outcome.errors[0].method, outcome.errors[0].error)
    return { kind: 'replay', responses: outcome.responses }
  }
}
