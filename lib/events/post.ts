// One bounded POST to a checked callback: to the address the guard checked, never redirected, never kept alive.
import http from 'node:http'
import https from 'node:https'
import { isIP } from 'node:net'
import type { CheckedCallback } from './guard.js'

export type PostError = 'connection_refused' | 'timeout' | 'tls_error' | 'http_4xx' | 'http_5xx'

export type PostOutcome =
  | { ok: true, status: number, body: string }
  | { ok: false, status?: number, error: PostError }

export interface PostOptions {
  /** The whole exchange (connect, send, read the answer), in ms. */
  timeoutMs: number
  /** The most of the answer's body that is read; the rest is left unread. */
  maxResponseBytes: number
  /** The certificate authorities an https callback's certificate must chain to; default Node's. */
  ca?: string | Buffer
}

type Stage = 'connect' | 'tls' | 'exchange'

function answered (status: number, body: string): PostOutcome {
  if (status >= 200 && status < 300) return { ok: true, status, body }
  // Redirects are never followed: a 3xx fails like a 4xx.
  return { ok: false, status, error: status >= 500 ? 'http_5xx' : 'http_4xx' }
}

function unanswered (stage: Stage): PostOutcome {
  return { ok: false, error: stage === 'tls' ? 'tls_error' : 'connection_refused' }
}

/** POSTs `body` as JSON to `target.address` with the URL's Host and (https) SNI; says how the receiver answered. */
export function postJson (
  target: CheckedCallback,
  headers: Record<string, string>,
  body: string,
  options: PostOptions
): Promise<PostOutcome> {
  const { url, address, family } = target
  const secure = url.protocol === 'https:'
  const name = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname
  return new Promise((resolve) => {
    let stage: Stage = 'connect'
    let status: number | undefined
    const chunks: Buffer[] = []
    let size = 0
    const finish = (outcome: PostOutcome): void => {
      clearTimeout(timer)
      request.destroy()
      resolve(outcome)
    }
    const request = (secure ? https : http).request({
      host: address,
      family,
      port: url.port,
      path: `${url.pathname}${url.search}`,
      method: 'POST',
      headers: {
        ...headers,
        host: url.host,
        'content-type': 'application/json',
        'content-length': String(Buffer.byteLength(body)),
      },
      agent: false,
      // SNI and the certificate check use the URL's host name; '' sends no SNI for an IP address.
      servername: isIP(name) === 0 ? name : '',
      ca: options.ca,
    })
    const timer = setTimeout(() => {
      finish(status === undefined ? { ok: false, error: 'timeout' } : { ok: false, status, error: 'timeout' })
    }, options.timeoutMs)
    const read = (): void => finish(answered(status as number, Buffer.concat(chunks).toString('utf8')))
    request.on('socket', (socket) => {
      socket.once('connect', () => { stage = secure ? 'tls' : 'exchange' })
      socket.once('secureConnect', () => { stage = 'exchange' })
    })
    request.on('error', () => (status === undefined ? finish(unanswered(stage)) : read()))
    request.on('response', (response) => {
      status = response.statusCode
      response.on('data', (chunk: Buffer) => {
        const room = options.maxResponseBytes - size
        chunks.push(chunk.subarray(0, room))
        size += Math.min(chunk.length, room)
        if (chunk.length >= room) read()
      })
      response.on('end', read)
      response.on('error', read)
    })
    request.end(body)
  })
}
