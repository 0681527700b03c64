/**
 * 2025-era sessions, kept by the client: what a session must remember is sealed into its
 * `Mcp-Session-Id` under the registration's key ring, so any node opens it and none stores it.
 */
import { randomBytes } from 'node:crypto'
import type { ClientCapabilities, Implementation } from '../protocol/wire.js'
import { deepFreeze, isPlainObject } from '../protocol/wire.js'
import type { Principal } from '../context.js'
import { Sealer, type KeyRing } from '../mrtr/seal.js'

/** The purpose byte of session ids: a requestState token never opens as one, nor the reverse. */
const SESSION_PURPOSE = 3

/** A session id longer than this is not one mocapi issued (its client info and capabilities are bounded). */
export const MAX_SESSION_ID_LENGTH = 4096

/** What a 2025-era session remembers. */
export interface Session {
  /** A random id of the session itself, which answers and broadcasts name it by. */
  id: string
  /** The caller the session belongs to; every request of the session must come from it. */
  principal: Principal
  /** The protocol version negotiated at `initialize`. */
  version: string
  /** What the client declared it can do, reduced to what mocapi reads. */
  capabilities: ClientCapabilities
  info: Implementation | undefined
  /** Epoch milliseconds. */
  issuedAt: number
  expiresAt: number
}

const TEXT_LIMIT = 256

function text (value: unknown): string | undefined {
  return typeof value === 'string' ? value.slice(0, TEXT_LIMIT) : undefined
}

/** Present as `{}` when the client declared the object; `undefined` otherwise. */
function flag (value: unknown): object | undefined {
  return isPlainObject(value) ? {} : undefined
}

/**
 * The capabilities mocapi reads, and nothing else: a client's capabilities may be any size, but
 * the session id carrying them must fit in a header.
 */
export function reduceCapabilities (value: unknown): ClientCapabilities {
  const caps: ClientCapabilities = {}
  if (!isPlainObject(value)) return caps
  const { elicitation, sampling, roots } = value
  if (isPlainObject(elicitation)) {
    const form = flag(elicitation.form)
    const url = flag(elicitation.url)
    caps.elicitation = form === undefined && url === undefined ? {} : { ...(form && { form }), ...(url && { url }) }
  }
  if (isPlainObject(sampling)) {
    const tools = flag(sampling.tools)
    const context = flag(sampling.context)
    caps.sampling = { ...(tools && { tools }), ...(context && { context }) }
  }
  if (isPlainObject(roots)) caps.roots = roots.listChanged === true ? { listChanged: true } : {}
  return caps
}

/** The client's name and version, bounded; undefined when it sent none. */
export function reduceInfo (value: unknown): Implementation | undefined {
  if (!isPlainObject(value)) return undefined
  const name = text(value.name)
  const version = text(value.version)
  if (name === undefined || version === undefined) return undefined
  const title = text(value.title)
  return title === undefined ? { name, version } : { name, version, title }
}

/**
 * Session ids a node keeps opened: a 2025-era client sends its id on every request, and opening
 * it each time costs (bench/README.md#opened-sessions). Only ids that opened are kept, so a client
 * sending made-up ids fills nothing; past the bound the oldest go first.
 */
export const MAX_OPENED_SESSIONS = 2048

/** Seals and opens session ids. */
export class SessionCodec {
  readonly #sealer: Sealer
  readonly #ttl: number
  readonly #now: () => number
  readonly #opened = new Map<string, Session>()

  constructor (ring: KeyRing, ttl: number, now: () => number = Date.now) {
    this.#sealer = new Sealer(ring, SESSION_PURPOSE, MAX_SESSION_ID_LENGTH)
    this.#ttl = ttl
    this.#now = now
  }

  /** A new session for a client that sent `initialize`. */
  create (principal: Principal, version: string, capabilities: unknown, info: unknown): Session {
    const issuedAt = this.#now()
    return {
      id: randomBytes(16).toString('base64url'),
      principal,
      version,
      capabilities: reduceCapabilities(capabilities),
      info: reduceInfo(info),
      issuedAt,
      expiresAt: issuedAt + this.#ttl,
    }
  }

  /** The session id of a session: visible ASCII only (base64url), as the transport requires. */
  seal (session: Session): string {
    const { id, principal, version, capabilities, info, issuedAt, expiresAt } = session
    return this.#sealer.seal(JSON.stringify([id, principal.value, principal.state, version, capabilities, info ?? null, issuedAt, expiresAt]))
  }

  /**
   * The session a session id stands for; undefined when it is not a live session id this ring
   * sealed. What it returns is frozen: a kept session serves every request of its client.
   */
  open (sessionId: string): Session | undefined {
    const kept = this.#opened.get(sessionId)
    if (kept !== undefined) {
      if (this.#now() < kept.expiresAt) return kept
      this.#opened.delete(sessionId)
      return undefined
    }
    const session = this.#unseal(sessionId)
    if (session === undefined) return undefined
    if (this.#opened.size >= MAX_OPENED_SESSIONS) this.#opened.delete(this.#opened.keys().next().value as string)
    this.#opened.set(sessionId, session)
    return session
  }

  #unseal (sessionId: string): Session | undefined {
    let plain: unknown
    try {
      plain = JSON.parse(this.#sealer.open(sessionId))
    } catch {
      return undefined
    }
    if (!Array.isArray(plain) || plain.length !== 8) return undefined
    const [id, value, state, version, capabilities, info, issuedAt, expiresAt] = plain as unknown[]
    if (typeof id !== 'string' || (value !== null && typeof value !== 'string') || typeof version !== 'string') return undefined
    if (state !== 'anonymous' && state !== 'bound' && state !== 'unbound') return undefined
    if (!isPlainObject(capabilities) || (info !== null && !isPlainObject(info))) return undefined
    if (typeof issuedAt !== 'number' || typeof expiresAt !== 'number' || this.#now() >= expiresAt) return undefined
    return deepFreeze({ id, principal: { value, state }, version, capabilities, info: (info ?? undefined) as Implementation | undefined, issuedAt, expiresAt })
  }
}
