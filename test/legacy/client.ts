/**
 * A small 2025-era client for the tests: `initialize`, a session, and calls whose event stream it
 * reads as it arrives, answering each server-to-client request with a POST of its own.
 */
import { EventStreamParser } from '../../lib/testing/transport.js'

export interface LegacyCall {
  status: number
  /** The JSON-RPC response that ended the call; a batch's JSON reply: its array. */
  response: any
  /** Every response on the stream, in order: one, or one per request of a batch. */
  responses: any[]
  /** The server-to-client requests the call sent, in order. */
  requests: any[]
  notifications: any[]
  /** The status of each answer POST. */
  answerStatuses: number[]
}

export type Answer = (request: any) => object | { error: object } | undefined | Promise<object | { error: object } | undefined>

export interface LegacyOptions {
  version?: string
  capabilities?: object
  clientInfo?: object
  headers?: Record<string, string>
}

let nextId = 1

/** Opens a session on `url`; its methods post on the session. */
export async function openSession (url: string, options: LegacyOptions = {}) {
  const version = options.version ?? '2025-11-25'
  const init = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...options.headers },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: nextId++,
      method: 'initialize',
      params: { protocolVersion: version, capabilities: options.capabilities ?? { elicitation: {}, sampling: {}, roots: {} }, clientInfo: options.clientInfo ?? { name: 'legacy-test', version: '1.0.0' } },
    }),
  })
  const sessionId = init.headers.get('mcp-session-id') as string
  const initialized = await init.json() as any
  const negotiated = initialized.result?.protocolVersion ?? version
  const headers = (): Record<string, string> => ({
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': negotiated,
    'mcp-session-id': sessionId,
    ...options.headers,
  })
  const post = (body: object, extra: Record<string, string> = {}) => fetch(url, { method: 'POST', headers: { ...headers(), ...extra }, body: JSON.stringify(body) })

  /** One request on the session; server requests on its stream are answered with `answer`. */
  function call (method: string, params: object = {}, answer: Answer = () => undefined, extra: Record<string, string> = {}): Promise<LegacyCall> {
    return send({ jsonrpc: '2.0', id: nextId++, method, params }, answer, extra)
  }

  /** One POST on the session (a message, or a batch of them); server requests on its stream are answered with `answer`. */
  async function send (body: object, answer: Answer = () => undefined, extra: Record<string, string> = {}): Promise<LegacyCall> {
    const reply = await post(body, extra)
    const outcome: LegacyCall = { status: reply.status, response: undefined, responses: [], requests: [], notifications: [], answerStatuses: [] }
    if (!(reply.headers.get('content-type') ?? '').startsWith('text/event-stream')) {
      outcome.response = reply.status === 202 ? undefined : await reply.json()
      return outcome
    }
    const parser = new EventStreamParser()
    const decoder = new TextDecoder()
    const answers: Array<Promise<void>> = []
    const take = (messages: unknown[]) => {
      for (const message of messages as any[]) {
        if (message.id !== undefined && message.method !== undefined) {
          outcome.requests.push(message)
          answers.push((async () => {
            const given = await answer(message)
            if (given === undefined) return
            const body = 'error' in given ? { jsonrpc: '2.0', id: message.id, error: (given as { error: object }).error } : { jsonrpc: '2.0', id: message.id, result: given }
            outcome.answerStatuses.push((await post(body)).status)
          })())
        } else if (message.id !== undefined) {
          outcome.response = message
          outcome.responses.push(message)
        } else outcome.notifications.push(message)
      }
    }
    const reader = (reply.body as ReadableStream<Uint8Array>).getReader()
    try {
      for (;;) {
        const { done, value } = await reader.read()
        if (done) break
        take(parser.push(decoder.decode(value, { stream: true })))
      }
    } catch {}
    take(parser.end())
    await Promise.all(answers)
    return outcome
  }

  return { sessionId, negotiated, initialized, headers, post, call, send }
}
