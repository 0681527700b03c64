// The challenge names every scope the operation needs, so a host can step the user up and call again.
import type { FastifyRequest } from 'fastify'
import { describe, fail } from '../check.js'
import type { McpContext } from '../context.js'
import { ErrorCode, InvalidDefinitionError, McpError } from '../errors.js'

/** The scopes a request's verified token grants; undefined when it carries none. */
type ScopesOf = (request: FastifyRequest) => readonly string[] | undefined

// RFC 6749 §3.3: scope-token = 1*( %x21 / %x23-5B / %x5D-7E ).
const SCOPE_TOKEN = /^[\x21\x23-\x5b\x5d-\x7e]{1,200}$/
const MAX_SCOPES = 64

export function scopeList (value: unknown, where: string): readonly string[] | undefined {
  if (value === undefined) return undefined
  if (!Array.isArray(value) || value.length > MAX_SCOPES) {
    fail(`${where} scopes`, `an array of at most ${MAX_SCOPES} OAuth scopes`, value, InvalidDefinitionError)
  }
  for (const [i, scope] of value.entries()) {
    if (typeof scope !== 'string' || !SCOPE_TOKEN.test(scope)) {
      fail(`${where} scopes[${i}]`, 'an OAuth scope token (no spaces, quotes or backslashes)', scope, InvalidDefinitionError)
    }
  }
  return value.length === 0 ? undefined : Object.freeze([...new Set(value as string[])])
}

/** The default: the token's `scope` (space-separated, RFC 8693) or `scp` (an array, or space-separated). */
function tokenScopes (request: FastifyRequest): readonly string[] | undefined {
  const user = (request as { user?: unknown }).user
  if (typeof user !== 'object' || user === null) return undefined
  const { scope, scp } = user as { scope?: unknown, scp?: unknown }
  const claim = scope ?? scp
  if (typeof claim === 'string') return claim.split(' ').filter((item) => item !== '')
  if (Array.isArray(claim)) return claim.filter((item): item is string => typeof item === 'string')
  return undefined
}

export class ScopeChallenge extends McpError {
  readonly needed: readonly string[]

  constructor (what: string, needed: readonly string[], missing: readonly string[] | undefined) {
    super(ErrorCode.InvalidRequest, missing === undefined
      ? `${what} needs a token with the scope${needed.length === 1 ? '' : 's'} ${needed.join(' ')}: sign in`
      : `${what} needs the scope${missing.length === 1 ? '' : 's'} ${missing.join(' ')}, which the token does not grant`, {
      statusCode: missing === undefined ? 401 : 403,
      data: { requiredScopes: needed, ...(missing === undefined ? {} : { missingScopes: missing }) },
    })
    this.needed = needed
  }

  header (metadata: string | undefined): string {
    const parts = this.statusCode === 403 ? ['error="insufficient_scope"'] : []
    parts.push(`scope="${this.needed.join(' ')}"`)
    if (metadata !== undefined) parts.push(`resource_metadata="${metadata}"`)
    return `Bearer ${parts.join(', ')}`
  }
}

export class Scopes {
  readonly #of: ScopesOf
  /** Requests whose bad `scopes` answer was logged already: a listen stream asks again on every change. */
  readonly #logged = new WeakSet<FastifyRequest>()

  constructor (of: ScopesOf | undefined) {
    this.#of = of ?? tokenScopes
  }

  check (needed: readonly string[] | undefined, ctx: McpContext, kind: string, name: string): void {
    if (needed === undefined) return
    const what = `${kind} ${name.length > 200 ? `${name.slice(0, 200)}…` : name}`
    const request = ctx.request
    if ((request as { user?: unknown }).user == null) throw new ScopeChallenge(what, needed, undefined)
    const granted = this.#granted(request)
    const missing = needed.filter((scope) => !granted.includes(scope))
    if (missing.length > 0) throw new ScopeChallenge(what, needed, missing)
  }

  grants (needed: readonly string[] | undefined, request: FastifyRequest): boolean {
    if (needed === undefined) return true
    if ((request as { user?: unknown }).user == null) return false
    const granted = this.#granted(request)
    return needed.every((scope) => granted.includes(scope))
  }

  /** Fails closed: an option that throws or answers anything but an array of strings grants nothing. */
  #granted (request: FastifyRequest): readonly string[] {
    let granted: unknown
    try {
      granted = this.#of(request)
    } catch (error) {
      this.#fault(request, 'mocapi: the scopes option threw; the caller is taken to hold no scope', error)
      return []
    }
    if (granted === undefined) return []
    // An array holding anything but strings grants nothing at all, not its strings: the answer is plainly broken.
    if (!Array.isArray(granted) || !granted.every((scope) => typeof scope === 'string')) {
      const shown = Array.isArray(granted)
        ? `an array holding ${describe(granted.find((scope) => typeof scope !== 'string'))}`
        : describe(typeof granted === 'string' ? granted.slice(0, 100) : granted)
      this.#fault(request, `mocapi: the scopes option returned ${shown}, not an array of strings; the caller is taken to hold no scope`)
      return []
    }
    return granted
  }

  #fault (request: FastifyRequest, message: string, error?: unknown): void {
    if (this.#logged.has(request)) return
    this.#logged.add(request)
    if (error === undefined) request.log.error(message)
    else request.log.error({ err: error }, message)
  }
}
