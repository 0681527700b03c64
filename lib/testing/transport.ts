/**
 * How the test client reaches a server: `app.inject` for a Fastify app, `node:http` or `node:https`
 * for a URL. Either way a reply is read the same: a JSON body, or an event stream whose
 * notifications are handed over as they arrive and whose last message is the response.
 */
import type { FastifyInstance } from 'fastify'
import { request as httpRequest } from 'node:http'
import { request as httpsRequest } from 'node:https'

/** A reply as it comes off the wire: status, content type, and the body's text in chunks. */
export interface RawReply {
  status: number
  contentType: string
  /** The `Mcp-Session-Id` header, when the reply carries one. */
  sessionId: string | undefined
  body: AsyncIterable<string> | Iterable<string>
  /** Stops reading and closes the connection, as a client that gives up on a reply does. */
  abort (): void
}

/** Posts one JSON-RPC message with the given headers. */
export type Transport = (headers: Record<string, string>, body: string) => Promise<RawReply>

/**
 * The headers of a request: the client's own (`base`), `authorization` from a bearer token, then
 * each of `given` in turn, each winning over what came before, whatever its case.
 */
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

/**
 * Posts to `path` of a Fastify app through `inject`: no port, no socket. The reply is read as the
 * app writes it (light-my-request's `payloadAsStream`, from its 6.2; before, once it is complete),
 * so a test answers what a 2025-era call asks while its reply is open.
 */
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

/**
 * Posts to a URL, reading the body as it streams in. `node:http` rather than `fetch`, which drops
 * a `host` header: a test of virtual hosts or of the Host check must be able to set it. Redirects
 * are not followed, and nothing asks for compression.
 */
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

/** The value of a JSON text, or undefined when it does not parse. */
function parseJson (text: string): unknown {
  try {
    return JSON.parse(text)
  } catch {
    return undefined
  }
}

/**
 * Splits an event stream into the JSON of its `data:` fields, one message per event (undefined
 * when it does not parse).
 */
export class EventStreamParser {
  #buffer = ''

  /** Adds a chunk; returns the messages of the events it completed. */
  push (chunk: string): unknown[] {
    this.#buffer = (this.#buffer + chunk).replace(/\r\n/g, '\n')
    const messages: unknown[] = []
    let end = this.#buffer.indexOf('\n\n')
    while (end !== -1) {
      const data = this.#buffer.slice(0, end).split('\n')
        .filter((line) => line.startsWith('data:'))
        .map((line) => line.slice(line.startsWith('data: ') ? 6 : 5))
      if (data.length > 0) messages.push(parseJson(data.join('\n')))
      this.#buffer = this.#buffer.slice(end + 2)
      end = this.#buffer.indexOf('\n\n')
    }
    return messages
  }

  /** Ends the stream; returns the message of a last event that lacked its blank line. */
  end (): unknown[] {
    return this.push('\n\n')
  }
}

/** A read reply: the one JSON-RPC response (or whatever JSON came instead), and the raw text of a non-JSON body. */
export interface ReadReply {
  status: number
  message: unknown
  text: string
}

/** A request the server sent the client on a reply's event stream (2025-era elicitation, sampling, roots, ping). */
export interface ServerRequest {
  jsonrpc: '2.0'
  id: string | number
  method: string
  params?: Record<string, unknown>
}

/**
 * Reads a reply: parses a JSON body, or an event stream, where each message without an `id`
 * is a notification passed to `onNotification` and the message with one is the response.
 * Given `onRequest`, a message with an `id` and a `method` is a request of the server's, passed
 * to it as it arrives. JSON that does not parse reads as no message.
 */
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
