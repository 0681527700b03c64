/** The shapes mocapi/testing's client and its 2025-era session share. */
import type { ResourceContents } from '../features/resources.js'
import type { ClientCapabilities, Implementation, InputRequest, JsonObject, PROTOCOL_VERSION } from '../protocol/wire.js'
import type { InputResponse } from './answers.js'

export const LEGACY_PROTOCOL_VERSIONS = ['2025-11-25', '2025-06-18', '2025-03-26'] as const

/** A 2025 revision of MCP: a client that speaks it opens a session with `initialize`. */
export type LegacyProtocolVersion = typeof LEGACY_PROTOCOL_VERSIONS[number]

export function isLegacyVersion (version: string | undefined): version is LegacyProtocolVersion {
  return (LEGACY_PROTOCOL_VERSIONS as readonly unknown[]).includes(version)
}

/** Options of `createTestClient`; `V` is the protocol version the client speaks. */
export interface TestClientOptions<V extends string = string> {
  /**
   * Declared on every request (at `initialize`, in a 2025 revision). Default: every kind of input
   * (elicitation form and url, sampling, roots).
   */
  capabilities?: ClientCapabilities | undefined
  /** Default `{ name: 'mocapi-test-client', version: '1.0.0' }`. */
  clientInfo?: Implementation | undefined
  /**
   * The revision the client speaks. Default `2026-07-28`: stateless, each request carrying it in `_meta` and the
   * `MCP-Protocol-Version` header. A 2025 revision (`2025-11-25`, `2025-06-18`, `2025-03-26`) makes a client of that
   * era: its first request opens a session (`initialize`, declaring `capabilities` and `clientInfo`, then
   * `notifications/initialized`); later ones carry its `Mcp-Session-Id` and the version the server chose; the
   * elicitation, sampling and roots requests the server sends on a call's event stream are answered with the call's
   * `answers`, each POSTed as a JSON-RPC response. Those name no input key, so the client names them as mocapi does
   * by default, `elicit-<n>`, `sample-<n>` or `roots-<n>` (`n` counting the call's requests as they come): a
   * handler's `{ key }` does not reach a 2025-era client, so answer those by function, queue or `byKind`. Any other
   * version is sent as a 2026-07-28 request that names it (to test how the server refuses it).
   */
  protocolVersion?: V | undefined
  /**
   * Extra HTTP headers on every request. They win over the client's own (`content-type`, `accept`, the `mcp-*`
   * headers, `authorization` from `token`), whatever their case, and `host` is sent as given, to an app and to a URL.
   */
  headers?: Record<string, string> | undefined
  /** Sent as `Authorization: Bearer <token>`. */
  token?: string | undefined
  /** The endpoint's path, for Fastify apps. Default `/mcp`. */
  path?: string | undefined
  /** How many rounds of input one call may take before it fails. Default 10. */
  maxRounds?: number | undefined
  /** Called with each notification of a streamed reply, as it arrives. */
  onNotification?: ((notification: Notification) => void) | undefined
  /**
   * Called on each `input_required` result, before its requests are answered; `round` counts from 1.
   * In a 2025 revision, on each round of requests the server sends, before they are answered.
   */
  onRound?: ((round: number, inputRequests: Record<string, InputRequest>) => void) | undefined
  /**
   * Declare the tasks extension (`io.modelcontextprotocol/tasks`) besides `capabilities`. Either way, a call that
   * becomes a task is followed to its end: `tasks/get` every `pollIntervalMs` of the task, its questions answered
   * with the call's `answers` through `tasks/update` (each a round), its result the call's.
   */
  tasks?: boolean | undefined
  /** ms between two `tasks/get` of a task the client follows. Default: the task's `pollIntervalMs`. */
  taskPollInterval?: number | undefined
  /** How long a call follows its task before it fails, in ms. Default 60 000. */
  taskTimeout?: number | undefined
  /** Called with the task as each `tasks/get` shows it (`status`, `statusMessage`, …). */
  onTask?: ((task: JsonObject) => void) | undefined
}

/** Per-call `_meta` fields (say `progressToken`) and HTTP headers, which win over the client's `headers`. */
export interface CallOptions {
  meta?: JsonObject | undefined
  headers?: Record<string, string> | undefined
  /** Sent as the `Idempotency-Key` header: a retry of the call with the same key gets the first's reply from mocapi. */
  idempotencyKey?: string | undefined
}

/** The HTTP headers a call adds to the client's: its own, and its idempotency key. */
export function callHeaders (options: CallOptions): Record<string, string> | undefined {
  if (options.idempotencyKey === undefined) return options.headers
  return { ...options.headers, 'idempotency-key': options.idempotencyKey }
}

/** A JSON-RPC notification the server streamed during a request (progress, log messages). */
export interface Notification {
  jsonrpc: '2.0'
  method: string
  params?: JsonObject
  [key: string]: unknown
}

/** One round: what the server asked (an `input_required` result, or 2025-era requests sent together), and answers. */
export interface Round {
  inputRequests: Record<string, InputRequest>
  inputResponses: Record<string, InputResponse>
}

/**
 * A complete result as the revision `V` shapes it: with `resultType: 'complete'` in 2026-07-28,
 * without in a 2025 revision, and maybe either when the version is only known as a string.
 */
export type CompleteResult<R, V extends string = typeof PROTOCOL_VERSION> =
  string extends V ? R & { resultType?: 'complete', _meta?: JsonObject }
    : V extends LegacyProtocolVersion ? R & { _meta?: JsonObject }
      : R & { resultType: 'complete', _meta?: JsonObject }

/** The complete result of a call, and how it got there; `V` is the protocol version the client speaks. */
export interface Outcome<R, V extends string = typeof PROTOCOL_VERSION> {
  result: CompleteResult<R, V>
  /** One entry per round of input, in order. */
  rounds: Round[]
  /**
   * HTTP requests made: `rounds.length + 1`; in a 2025 revision, the call's and one per answer sent; for a call that
   * became a task, every `tasks/get` and `tasks/update` besides.
   */
  roundTrips: number
  /** The id of the task the call became, when it did. */
  taskId?: string
  /** Notifications of every round trip, in order. */
  notifications: Notification[]
}

/** The result of `resources/read`. */
export interface ReadResourceResult {
  contents: ResourceContents[]
  ttlMs?: number
  cacheScope?: 'public' | 'private'
}
