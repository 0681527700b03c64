/**
 * A webhook endpoint for tests of event subscriptions (`events/subscribe`): it checks each POST's Standard Webhooks
 * signature against the subscription's `whsec_` secret, answers verification challenges, and hands the test every
 * delivery it accepted.
 */
import { createHmac, timingSafeEqual } from 'node:crypto'
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { JsonObject } from '../protocol/wire.js'
import { isObject } from './errors.js'

/** The most a delivery's body may hold: the 256 KiB the events extension allows. */
export const MAX_WEBHOOK_BODY = 256 * 1024

/** How far a delivery's `webhook-timestamp` may be from the receiver's clock. */
const TOLERANCE_MS = 5 * 60_000

const DEFAULT_NEXT_TIMEOUT = 5_000

/** A delivery the receiver accepted: its signature checked. */
export interface WebhookDelivery {
  /** `webhook-id`: the occurrence's `eventId` for an event, stable across retries. */
  id: string
  /** `X-MCP-Subscription-Id`, when sent. */
  subscriptionId: string | undefined
  /** `webhook-timestamp`, in Unix seconds. */
  timestamp: number
  /** The parsed body: an occurrence (`eventId`, `name`, `timestamp`, `data`, `cursor`) or an envelope (`type`). */
  body: JsonObject
  /** The body exactly as it came. */
  raw: string
  /** The HTTP status the receiver answered with. */
  status: number
}

/** A POST the receiver refused before taking it as a delivery, and why. */
export interface RefusedWebhook {
  /** 400 a bad body, 401 a bad or missing signature, 405 not a POST, 413 too large, 500 `respond` threw. */
  status: number
  reason: string
  /** `webhook-id`, when sent. */
  id: string | undefined
}

export interface WebhookReceiverOptions {
  /** The subscription's secret, `whsec_` and base64: what the client sends as `delivery.secret`. */
  secret: string
  /** The status to answer an event or envelope with (a verification is always answered 200). Default 204. */
  respond?: ((delivery: WebhookDelivery) => number | Promise<number>) | undefined
  /** The address to listen on. Default `127.0.0.1`. */
  host?: string | undefined
}

export interface WebhookReceiver {
  /** Where to deliver: `http://127.0.0.1:<port>/hooks`. */
  readonly url: string
  /** Every delivery accepted, verifications included, in arrival order. */
  readonly deliveries: readonly WebhookDelivery[]
  /** Every POST refused. */
  readonly refused: readonly RefusedWebhook[]
  /**
   * The next event or envelope (`gap`, `terminated`; never a verification) that no earlier `next()` returned,
   * waiting up to `timeoutMs` (default 5000) for it to arrive.
   */
  next (timeoutMs?: number): Promise<WebhookDelivery>
  /** Stops listening; pending `next()` calls reject. */
  close (): Promise<void>
}

/** Why `verifyWebhook` refused a delivery; `status` is what a receiver answers (400 or 401). */
export class WebhookError extends Error {
  readonly status: number

  constructor (status: number, message: string) {
    super(message)
    this.name = 'WebhookError'
    this.status = status
  }
}

type HeaderBag = Headers | Record<string, string | readonly string[] | undefined>

/** The signing key: the bytes after `whsec_`. */
function keyOf (secret: string): Buffer {
  if (typeof secret !== 'string' || !secret.startsWith('whsec_')) {
    throw new TypeError(`a webhook secret is "whsec_" and base64, got ${typeof secret === 'string' ? `a string of ${secret.length} characters without that prefix` : typeof secret}`)
  }
  const text = secret.slice('whsec_'.length)
  const key = Buffer.from(text, 'base64')
  if (key.length === 0 || key.toString('base64').replace(/=+$/, '') !== text.replace(/=+$/, '')) {
    throw new TypeError('a webhook secret is "whsec_" and base64, and what follows whsec_ is not base64')
  }
  return key
}

function header (headers: HeaderBag, name: string): string | undefined {
  if (typeof (headers as Headers).get === 'function') return (headers as Headers).get(name) ?? undefined
  for (const [key, value] of Object.entries(headers as Record<string, unknown>)) {
    if (value === undefined || key.toLowerCase() !== name) continue
    return Array.isArray(value) ? value.join(', ') : String(value)
  }
  return undefined
}

function required (headers: HeaderBag, name: string): string {
  const value = header(headers, name)
  if (value === undefined || value === '') throw new WebhookError(401, `the delivery has no ${name} header`)
  return value
}

function checkTimestamp (text: string, nowMs: number): number {
  if (!/^\d{1,15}$/.test(text)) throw new WebhookError(401, `webhook-timestamp must be Unix seconds, got ${JSON.stringify(text.slice(0, 40))}`)
  const seconds = Number(text)
  const off = Math.abs(nowMs - seconds * 1000)
  if (off > TOLERANCE_MS) throw new WebhookError(401, `webhook-timestamp ${seconds} is ${Math.round(off / 1000)} s from now, more than 5 minutes`)
  return seconds
}

function checkSignature (key: Buffer, id: string, timestamp: string, raw: Buffer, signatures: string): void {
  const expected = Buffer.from(createHmac('sha256', key).update(`${id}.${timestamp}.`).update(raw).digest('base64'))
  // Several signatures, space-separated, while a secret rotates: any one may match.
  for (const signature of signatures.split(' ')) {
    if (!signature.startsWith('v1,')) continue
    const given = Buffer.from(signature.slice(3))
    if (given.length === expected.length && timingSafeEqual(given, expected)) return
  }
  throw new WebhookError(401, 'no v1 signature in webhook-signature matches the body under this secret')
}

function parseBody (text: string): JsonObject {
  let body: unknown
  try {
    body = JSON.parse(text)
  } catch {
    throw new WebhookError(400, 'the body is not JSON')
  }
  if (!isObject(body)) throw new WebhookError(400, 'the body is not a JSON object')
  return body
}

/**
 * Checks a Standard Webhooks delivery signed with `secret` (`whsec_…`): the `webhook-id`, `webhook-timestamp` (at
 * most 5 minutes from `nowMs`) and `webhook-signature` headers over the raw body. Returns the parsed body, or throws
 * a `WebhookError` whose `status` is what to answer (401 signature, 400 body). `headers` is a fetch `Headers` or
 * Node's `request.headers`. A secret that is not `whsec_` and base64 throws a TypeError.
 */
export function verifyWebhook (
  secret: string,
  headers: HeaderBag,
  rawBody: string | Uint8Array,
  nowMs = Date.now()
): JsonObject {
  const key = keyOf(secret)
  const raw = typeof rawBody === 'string' ? Buffer.from(rawBody) : Buffer.from(rawBody.buffer, rawBody.byteOffset, rawBody.byteLength)
  const id = required(headers, 'webhook-id')
  const timestamp = required(headers, 'webhook-timestamp')
  const signatures = required(headers, 'webhook-signature')
  checkTimestamp(timestamp, nowMs)
  checkSignature(key, id, timestamp, raw, signatures)
  return parseBody(raw.toString('utf8'))
}

/** The body, or undefined as soon as it passes `MAX_WEBHOOK_BODY` (the rest is read and dropped). */
function readBody (request: IncomingMessage): Promise<Buffer | undefined> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = []
    let size = Number(request.headers['content-length']) > MAX_WEBHOOK_BODY ? Infinity : 0
    const over = (): boolean => {
      if (size <= MAX_WEBHOOK_BODY) return false
      chunks.length = 0
      resolve(undefined)
      return true
    }
    request.on('data', (chunk: Buffer) => {
      size += chunk.length
      if (!over()) chunks.push(chunk)
    })
    request.on('end', () => resolve(Buffer.concat(chunks)))
    request.on('error', reject)
    over()
  })
}

interface Waiter { resolve: (delivery: WebhookDelivery) => void, reject: (error: Error) => void, timer: NodeJS.Timeout }

class Receiver implements WebhookReceiver {
  readonly deliveries: WebhookDelivery[] = []
  readonly refused: RefusedWebhook[] = []
  readonly #secret: string
  readonly #respond: (delivery: WebhookDelivery) => number | Promise<number>
  readonly #server: Server
  readonly #waiters: Waiter[] = []
  readonly #queue: WebhookDelivery[] = []
  #url = ''

  constructor (options: WebhookReceiverOptions) {
    keyOf(options.secret)
    if (options.respond !== undefined && typeof options.respond !== 'function') {
      throw new TypeError(`webhookReceiver's respond must be a function, got ${typeof options.respond}`)
    }
    this.#secret = options.secret
    this.#respond = options.respond ?? (() => 204)
    this.#server = createServer((request, response) => {
      this.#handle(request, response).catch(() => response.destroy())
    })
  }

  get url (): string {
    return this.#url
  }

  async listen (host: string): Promise<this> {
    await new Promise<void>((resolve, reject) => {
      this.#server.once('error', reject)
      this.#server.listen(0, host, () => resolve())
    })
    const { port } = this.#server.address() as AddressInfo
    this.#url = `http://${host.includes(':') ? `[${host}]` : host}:${port}/hooks`
    return this
  }

  next (timeoutMs = DEFAULT_NEXT_TIMEOUT): Promise<WebhookDelivery> {
    const ready = this.#queue.shift()
    if (ready !== undefined) return Promise.resolve(ready)
    if (!this.#server.listening) return Promise.reject(new Error('the webhook receiver is closed'))
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        resolve,
        reject,
        timer: setTimeout(() => {
          this.#waiters.splice(this.#waiters.indexOf(waiter), 1)
          reject(new Error(`no webhook delivery within ${timeoutMs} ms (${this.deliveries.length} accepted, ${this.refused.length} refused so far)`))
        }, timeoutMs),
      }
      this.#waiters.push(waiter)
    })
  }

  async close (): Promise<void> {
    for (const waiter of this.#waiters.splice(0)) {
      clearTimeout(waiter.timer)
      waiter.reject(new Error('the webhook receiver is closed'))
    }
    const closed = new Promise((resolve) => this.#server.close(resolve))
    this.#server.closeAllConnections()
    await closed
  }

  #refuse (response: ServerResponse, status: number, reason: string, id: string | undefined): void {
    this.refused.push({ status, reason, id })
    response.writeHead(status, { 'content-type': 'application/json', connection: 'close' }).end(JSON.stringify({ error: reason }))
  }

  async #handle (request: IncomingMessage, response: ServerResponse): Promise<void> {
    const id = header(request.headers, 'webhook-id')
    if (request.method !== 'POST') {
      response.setHeader('allow', 'POST')
      return this.#refuse(response, 405, `${request.method} is not POST`, id)
    }
    const raw = await readBody(request)
    if (raw === undefined) return this.#refuse(response, 413, `the body is over ${MAX_WEBHOOK_BODY} bytes`, id)
    let body: JsonObject
    try {
      body = verifyWebhook(this.#secret, request.headers, raw)
    } catch (error) {
      return this.#refuse(response, (error as WebhookError).status, (error as Error).message, id)
    }
    if (body.type === 'verification' && typeof body.challenge !== 'string') {
      return this.#refuse(response, 400, 'a verification body carries a string challenge', id)
    }
    const delivery: WebhookDelivery = {
      id: id as string,
      subscriptionId: header(request.headers, 'x-mcp-subscription-id'),
      timestamp: Number(header(request.headers, 'webhook-timestamp')),
      body,
      raw: raw.toString('utf8'),
      status: 200,
    }
    this.deliveries.push(delivery)
    if (body.type === 'verification') {
      response.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ challenge: body.challenge }))
      return
    }
    delivery.status = await this.#statusFor(delivery)
    response.writeHead(delivery.status).end()
    this.#hand(delivery)
  }

  async #statusFor (delivery: WebhookDelivery): Promise<number> {
    try {
      const status = await this.#respond(delivery)
      if (Number.isInteger(status) && status >= 200 && status <= 599) return status
      this.refused.push({ status: 500, reason: `respond returned ${String(status)}, not an HTTP status (200-599)`, id: delivery.id })
    } catch (error) {
      this.refused.push({ status: 500, reason: `respond threw: ${(error as Error).message}`, id: delivery.id })
    }
    return 500
  }

  #hand (delivery: WebhookDelivery): void {
    const waiter = this.#waiters.shift()
    if (waiter === undefined) {
      this.#queue.push(delivery)
      return
    }
    clearTimeout(waiter.timer)
    waiter.resolve(delivery)
  }
}

/**
 * A webhook endpoint on `127.0.0.1` (a free port) for a test's `events/subscribe`: `delivery.url` is its `url`,
 * `delivery.secret` the same `secret`. It checks every POST's signature (`verifyWebhook`), answers verification
 * challenges, answers events and envelopes with `respond`'s status (default 204), and records what it accepted and
 * refused. `await receiver.next()` waits for the next event; `await receiver.close()` at the end of the test.
 */
export async function webhookReceiver (options: WebhookReceiverOptions): Promise<WebhookReceiver> {
  if (!isObject(options)) throw new TypeError(`webhookReceiver takes { secret, respond?, host? }, got ${String(options)}`)
  return new Receiver(options).listen(options.host ?? '127.0.0.1')
}
