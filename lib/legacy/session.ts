// A 2025-era session is sealed into its `Mcp-Session-Id`, so any node opens it and none stores it.
import { FifoMap } from 'toad-cache'
import { randomBytes } from 'node:crypto'
import type { ClientCapabilities, Implementation } from '../protocol/wire.js'
import { deepFreeze, isPlainObject } from '../protocol/wire.js'
import type { Principal } from '../call.js'
import { invalidParams, invalidRequest } from '../errors.js'
import { Sealer, type KeyRing } from '../seal/seal.js'
import { UI_EXTENSION, VIEW_MIME_TYPE, showsViews } from '../protocol/extensions.js'

/** The purpose byte of session ids: a requestState token never opens as one, nor the reverse. */
const SESSION_PURPOSE = 3

/** A session id longer than this is not one mocapi issued (what it seals is bounded: see {@link MAX_FIELD_BYTES}). */
export const MAX_SESSION_ID_LENGTH = 4096

// Bytes of JSON (six for an escaped control character) of the principal and each clientInfo: 256 characters fit.
const MAX_FIELD_BYTES = 1024

export interface Session {
  id: string
  /** The caller the session belongs to; every request of the session must come from it. */
  principal: Principal
  version: string
  capabilities: ClientCapabilities
  info: Implementation | undefined
  issuedAt: number
  expiresAt: number
}

const TEXT_LIMIT = 256

function text (value: unknown): string | undefined {
  return typeof value === 'string' ? value.slice(0, TEXT_LIMIT) : undefined
}

function flag (value: unknown): object | undefined {
  return isPlainObject(value) ? {} : undefined
}

/** Only what mocapi reads, as the id must fit in a header; of the extensions, views (kept as the mime type served). */
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
  if (showsViews(value)) caps.extensions = { [UI_EXTENSION]: { mimeTypes: [VIEW_MIME_TYPE] } }
  return caps
}

export function reduceInfo (value: unknown): Implementation | undefined {
  if (!isPlainObject(value)) return undefined
  const name = text(value.name)
  const version = text(value.version)
  if (name === undefined || version === undefined) return undefined
  const title = text(value.title)
  return title === undefined ? { name, version } : { name, version, title }
}

function encodedBytes (value: string | null): number {
  return Buffer.byteLength(JSON.stringify(value))
}

const INFO_FIELDS = ['name', 'version', 'title'] as const

/** Opened ids kept, as opening one per request costs (bench/README.md#opened-sessions); made-up ids never open. */
export const MAX_OPENED_SESSIONS = 2048

function plaintextOf (session: Session): string {
  const { id, principal, version, capabilities, info, issuedAt, expiresAt } = session
  const fields = [id, principal.value, principal.state, version, capabilities, info ?? null, issuedAt, expiresAt]
  return JSON.stringify(fields)
}

export class SessionCodec {
  readonly #sealer: Sealer
  readonly #ttl: number
  readonly #now: () => number
  readonly #opened = new FifoMap<Session>(MAX_OPENED_SESSIONS)

  constructor (ring: KeyRing, ttl: number, now: () => number = Date.now) {
    this.#sealer = new Sealer(ring, SESSION_PURPOSE, MAX_SESSION_ID_LENGTH)
    this.#ttl = ttl
    this.#now = now
  }

  /** What cannot fit in a session id is refused with HTTP 400 naming it, never sealed into a token too long. */
  create (principal: Principal, version: string, capabilities: unknown, info: unknown): Session {
    const principalBytes = encodedBytes(principal.value)
    if (principalBytes > MAX_FIELD_BYTES) {
      throw invalidRequest(`The caller's principal is too long for a 2025-era session: it takes ${principalBytes} bytes as JSON, ` +
        `and a session id holds a principal of at most ${MAX_FIELD_BYTES}`)
    }
    const reduced = reduceInfo(info)
    for (const field of INFO_FIELDS) {
      const value = reduced?.[field]
      if (value === undefined) continue
      const bytes = encodedBytes(value)
      if (bytes > MAX_FIELD_BYTES) {
        throw invalidParams(`params.clientInfo.${field} is too long for a session id: it takes ${bytes} bytes as JSON (a control ` +
          `character or a lone surrogate takes 6), and a session id holds at most ${MAX_FIELD_BYTES} per clientInfo field`, 400)
      }
    }
    const issuedAt = this.#now()
    const session: Session = {
      id: randomBytes(16).toString('base64url'),
      principal,
      version,
      capabilities: reduceCapabilities(capabilities),
      info: reduced,
      issuedAt,
      expiresAt: issuedAt + this.#ttl,
    }
    // Only clientInfo can take the whole past the limit: the principal and the rest are far below it.
    const length = this.#sealer.tokenLength(Buffer.byteLength(plaintextOf(session)))
    if (length > MAX_SESSION_ID_LENGTH) {
      throw invalidParams(`params.clientInfo does not fit in a session id with this principal: the id would take ${length} characters, ` +
        `and one holds at most ${MAX_SESSION_ID_LENGTH}; send a shorter clientInfo.name, clientInfo.version or clientInfo.title`, 400)
    }
    return session
  }

  seal (session: Session): string {
    return this.#sealer.seal(plaintextOf(session))
  }

  /** Undefined unless a live id this ring sealed; frozen, as a kept session serves every request of its client. */
  open (sessionId: string): Session | undefined {
    const kept = this.#opened.get(sessionId)
    if (kept !== undefined) {
      if (this.#now() < kept.expiresAt) return kept
      this.#opened.delete(sessionId)
      return undefined
    }
    const session = this.#unseal(sessionId)
    if (session === undefined) return undefined
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
    const known = (info ?? undefined) as Implementation | undefined
    return deepFreeze({ id, principal: { value, state }, version, capabilities, info: known, issuedAt, expiresAt })
  }
}
