import Fastify, { type FastifyInstance, type FastifyServerOptions, type InjectOptions, type LightMyRequestResponse } from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import mocapi, { type MocapiOptions } from '../lib/index.js'
import { EventStreamParser } from '../lib/testing/transport.js'

export const VERSION = '2026-07-28'
/** mocapi's own version, as its package.json says: the default serverInfo. */
export const MOCAPI_VERSION: string = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')).version
/** The `_meta` of every result from a server with the default serverInfo. */
export const SERVER_INFO = { 'io.modelcontextprotocol/serverInfo': { name: 'mocapi', version: MOCAPI_VERSION } }
export const KEY = randomBytes(32).toString('base64')

type Test = { teardown: (fn: () => unknown) => void }

/** A Fastify app with mocapi registered, closed when the test ends. */
export async function build (t: Test, options: MocapiOptions = {}, setup?: (app: FastifyInstance) => void | Promise<void>,
  fastifyOptions: FastifyServerOptions = {}): Promise<FastifyInstance> {
  const app = Fastify(fastifyOptions)
  await app.register(mocapi, { requestState: { keys: [KEY] }, ...options })
  await setup?.(app)
  t.teardown(() => app.close())
  return app
}

/**
 * A listening app behind @fastify/jwt (a token is optional: without one the caller is anonymous), logging into `lines`,
 * closed when the test ends. `token` signs claims for `sub: 'ada'` unless they name another.
 */
export async function jwtServer (t: Test, options: MocapiOptions = {}, setup?: (app: FastifyInstance) => void | Promise<void>) {
  const { lines, options: logging } = capturedLogs()
  const app: FastifyInstance = Fastify({ ...logging, forceCloseConnections: true })
  await app.register(fastifyJwt, { secret: 'a-test-secret-of-thirty-two-bytes!!' })
  app.addHook('onRequest', async (request) => {
    if (request.headers.authorization !== undefined) await request.jwtVerify()
  })
  await app.register(mocapi, { requestState: { keys: [KEY] }, ...options })
  await setup?.(app)
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`
  return { app, url, lines, token: (claims: object = {}) => app.jwt.sign({ sub: 'ada', ...claims }) }
}

/** The `_meta` of a request, with a client that declares `capabilities`. */
export function meta (capabilities: object = { elicitation: {} }, extra: object = {}): Record<string, unknown> {
  return {
    'io.modelcontextprotocol/protocolVersion': VERSION,
    'io.modelcontextprotocol/clientCapabilities': capabilities,
    'io.modelcontextprotocol/clientInfo': { name: 'test-client', version: '1.0.0' },
    ...extra,
  }
}

let nextId = 1

/** The inject options of one JSON-RPC request with the headers a 2026-07-28 client sends. */
export function rpc (method: string, params: Record<string, unknown> = {}, options: { capabilities?: object, headers?: Record<string, string>, id?: unknown, meta?: object } = {}): InjectOptions {
  const name = params.name ?? params.uri
  const headers: Record<string, string> = {
    'content-type': 'application/json',
    accept: 'application/json, text/event-stream',
    'mcp-protocol-version': VERSION,
    'mcp-method': method,
  }
  if (typeof name === 'string') headers['mcp-name'] = /^[\x20-\x7e]*$/.test(name) ? name : `=?base64?${Buffer.from(name).toString('base64')}?=`
  return {
    method: 'POST',
    url: '/mcp',
    headers: { ...headers, ...options.headers },
    payload: { jsonrpc: '2.0', id: options.id ?? nextId++, method, params: { ...params, _meta: options.meta ?? meta(options.capabilities) } },
  }
}

/** Sends one request and returns the status and the parsed body. */
export async function call (app: FastifyInstance, method: string, params: Record<string, unknown> = {}, options: Parameters<typeof rpc>[2] = {}): Promise<{ status: number, body: any, response: LightMyRequestResponse }> {
  const response = await app.inject(rpc(method, params, options))
  return { status: response.statusCode, body: response.body === '' ? undefined : JSON.parse(response.body), response }
}

export interface HttpPostOptions {
  /** A bearer token. */
  token?: string
  /** The request's `_meta` (a client that declares no capabilities by default). */
  meta?: object
  headers?: Record<string, string>
  /** Rewrites the body's JSON text before it is sent (for what JSON.stringify cannot write). */
  text?: (body: string) => string
}

/** A 2026-07-28 request over real HTTP, `Mcp-Name` taken from its name, URI or task id: status, challenge, body. */
export async function postHttp (url: string, method: string, params: Record<string, unknown>, options: HttpPostOptions = {}) {
  const name = params.name ?? params.uri ?? params.taskId
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: options.meta ?? meta({}) } })
  const response = await fetch(url, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': VERSION,
      'mcp-method': method,
      ...(typeof name === 'string' ? { 'mcp-name': name } : {}),
      ...(options.token === undefined ? {} : { authorization: `Bearer ${options.token}` }),
      ...options.headers,
    },
    body: options.text === undefined ? body : options.text(body),
  })
  return { status: response.status, challenge: response.headers.get('www-authenticate'), body: await response.json() as any }
}

/** Opens a `subscriptions/listen` stream over real HTTP and reads its SSE frames one by one. */
export async function listen (url: string, id: number, notifications: object, headers: Record<string, string> = {}) {
  return await openStream(url, id, 'subscriptions/listen', { notifications }, headers)
}

/** POSTs a request whose reply is held as an event stream (`subscriptions/listen`, `events/stream`), read frame by frame. */
export async function openStream (url: string, id: number, method: string, params: object, headers: Record<string, string> = {}) {
  const controller = new AbortController()
  const response = await fetch(url, {
    method: 'POST',
    signal: controller.signal,
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': VERSION, 'mcp-method': method, ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta({}) } }),
  })
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  const parser = new EventStreamParser()
  const frames: any[] = []
  const waiting: any[] = []
  let received = ''
  async function read (): Promise<boolean> {
    const { value, done } = await reader.read()
    if (done) return false
    const text = decoder.decode(value, { stream: true })
    received += text
    waiting.push(...parser.push(text))
    return true
  }
  /** The next message on the stream (comments skipped), or undefined once it ends. */
  async function next (): Promise<any> {
    while (waiting.length === 0) {
      if (!await read()) return undefined
    }
    frames.push(waiting.shift())
    return frames.at(-1)
  }
  /** The whole body as JSON: for a reply that is not a stream (an error). */
  async function json (): Promise<any> {
    while (await read());
    return JSON.parse(received)
  }
  return { response, next, json, frames, close: () => controller.abort() }
}

/** Fastify options whose logger writes each line, parsed, into `lines`. */
export function capturedLogs (level = 'info'): { lines: Array<Record<string, any>>, options: FastifyServerOptions } {
  const lines: Array<Record<string, any>> = []
  return { lines, options: { logger: { level, stream: { write: (line: string) => { lines.push(JSON.parse(line)) } } } } }
}

/** Opens a 2025-era session over real HTTP (`initialize`, no capabilities): its `Mcp-Session-Id`. */
export async function openSession (url: string, protocolVersion = '2025-11-25'): Promise<string> {
  const response = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion, capabilities: {}, clientInfo: { name: 'old', version: '1' } } }),
  })
  await response.text()
  return response.headers.get('mcp-session-id') as string
}
