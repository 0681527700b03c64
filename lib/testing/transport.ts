import { createParser } from 'eventsource-parser'
import type { FastifyInstance } from 'fastify'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'

export interface RawReply {
  status: number
  contentType: string
  sessionId: string | undefined
  body: AsyncIterable<string> | Iterable<string>
  abort (): void
}

export type Transport = (headers: Record<string, string>, body: string) => Promise<RawReply>

export function headersOf (
  base: Record<string, string>,
  token: string | undefined,
  ...given: Array<Record<string, string> | undefined>
): Record<string, string> {
  const headers = { ...base }
  if (token !== undefined) headers.authorization = `Bearer ${token}`
  for (const one of given) {
    for (const [header, value] of Object.entries(one ?? {})) headers[header.toLowerCase()] = value
  }
  return headers
}

function sessionIdOf (headers: Record<string, unknown>): string | undefined {
  const value = headers['mcp-session-id']
  return typeof value === 'string' ? value : undefined
}

/** Reads the reply as it is written (light-my-request 6.2+), so a test answers a 2025-era call's questions. */
export function injectTransport (app: FastifyInstance, path: string): Transport {
  return async (headers, body) => {
    const response = await app.inject({ method: 'POST', url: path, headers, payload: body, payloadAsStream: true })
    const readable = response.stream()
    readable.setEncoding('utf8')
    return {
      status: response.statusCode,
      contentType: String(response.headers['content-type'] ?? ''),
      sessionId: sessionIdOf(response.headers),
      body: readable,
      abort: () => {
        readable.destroy()
        ;(response.raw.res as { destroy: () => void }).destroy()
      },
    }
  }
}

/** `node:http`, not `fetch`, which drops the `host` header that tests of virtual hosts and the Host check set. */
export function httpTransport (url: URL): Transport {
  const send = url.protocol === 'https:' ? httpsRequest : httpRequest
  return (headers, body) => new Promise((resolve, reject) => {
    const request = send(url, { method: 'POST', headers: { 'content-length': String(Buffer.byteLength(body)), ...headers } }, (response) => {
      response.setEncoding('utf8')
      resolve({
        status: response.statusCode as number,
        contentType: response.headers['content-type'] ?? '',
        sessionId: sessionIdOf(response.headers),
        body: response,
        abort: () => { response.destroy() },
      })
    })
    request.on('error', reject)
    request.end(body)
  })
}

function parseJson (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/** The JSON of each event's data, one message per event (undefined when it does not parse); comments are skipped. */
export class EventStreamParser {
  readonly #messages: unknown[] = []
  readonly #parser = createParser({ onEvent: (event) => { this.#messages.push(parseJson(event.data)) } })

  /** The messages of the events `chunk` completes. */
  push (chunk: string): unknown[] {
    this.#parser.feed(chunk)
    return this.#messages.splice(0)
  }

  /** The stream ended: an event it left unterminated counts too. */
  end (): unknown[] {
    return this.push('\n\n')
  }
}

/** `message`: the JSON-RPC response, or whatever JSON came instead; `text`: the raw text of a non-JSON body. */
export interface ReadReply {
  status: number
  message: unknown
  text: string
}

export interface ServerRequest {
  jsonrpc: '2.0'
  id: string | number
  method: string
  params?: Record<string, unknown>
}

/** Notifications and (given `onRequest`) server requests are passed on as they arrive; bad JSON is no message. */
export async function readReply (reply: RawReply, onNotification: (message: Record<string, unknown>) => void,
  onRequest?: (request: ServerRequest) => void): Promise<ReadReply> {
  let text = ''
  if (!reply.contentType.startsWith('text/event-stream')) {
    for await (const chunk of reply.body) text += chunk
    return { status: reply.status, message: reply.contentType.startsWith('application/json') ? parseJson(text) : undefined, text }
  }
  const parser = new EventStreamParser()
  let response: unknown
  const take = (messages: unknown[]): void => {
    for (const message of messages) {
      if (typeof message === 'object' && message !== null && !('id' in message)) onNotification(message as Record<string, unknown>)
      else if (onRequest !== undefined && typeof message === 'object' && message !== null && 'method' in message) onRequest(message as ServerRequest)
      else response = message
    }
  }
  for await (const chunk of reply.body) take(parser.push(chunk))
  take(parser.end())
  return { status: reply.status, message: response, text }
}
