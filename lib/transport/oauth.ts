import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { describe, knownFields, nonEmptyString, plainObject, stringList } from '../check.js'
import { InvalidOptionError } from '../errors.js'
import { hostnameOf, isKnownHost } from './hosts.js'

/** RFC 9728 protected-resource metadata, in mocapi's option casing. */
export interface ProtectedResourceOptions {
  /** The resource identifier: the MCP endpoint's public URL. Default: derived from each request. */
  resource?: string | undefined
  /** Issuer URLs of the authorization servers that issue tokens for this resource. */
  authorizationServers: string[]
  scopesSupported?: string[] | undefined
  /** Default `['header']`. */
  bearerMethodsSupported?: string[] | undefined
  resourceName?: string | undefined
  resourceDocumentation?: string | undefined
}

const WELL_KNOWN = '/.well-known/oauth-protected-resource'

const KNOWN = new Set(['resource', 'authorizationServers', 'scopesSupported', 'bearerMethodsSupported', 'resourceName', 'resourceDocumentation'])

export function resolveProtectedResource (value: unknown): ProtectedResourceOptions | undefined {
  if (value === undefined) return undefined
  const options = plainObject(value, 'protectedResource')
  knownFields(options, KNOWN, 'protectedResource.')
  if (stringList(options.authorizationServers, 'protectedResource.authorizationServers') === undefined) {
    throw new InvalidOptionError('protectedResource.authorizationServers must be an array of strings, got undefined')
  }
  if (options.resource !== undefined && (typeof options.resource !== 'string' || !URL.canParse(options.resource))) {
    throw new InvalidOptionError(`protectedResource.resource must be an absolute URL, got ${describe(options.resource)}`)
  }
  for (const name of ['scopesSupported', 'bearerMethodsSupported']) stringList(options[name], `protectedResource.${name}`)
  for (const name of ['resourceName', 'resourceDocumentation']) if (options[name] !== undefined) nonEmptyString(options[name], `protectedResource.${name}`)
  return options as unknown as ProtectedResourceOptions
}

/** With no `resource` set, only a known Host derives it: a forged Host must not become what a client authorizes for. */
export class ProtectedResource {
  readonly #options: ProtectedResourceOptions
  readonly #path: string
  readonly #allowedHosts: ReadonlySet<string>

  readonly #catalogs: ReadonlyArray<{ scopesInto (into: Set<string>): void }>

  /** `catalogs`: the tools, prompts and resources, whose declared scopes `scopes_supported` lists as they are now. */
  constructor (
    options: ProtectedResourceOptions,
    path: string,
    allowedHosts: ReadonlySet<string>,
    catalogs: ReadonlyArray<{ scopesInto (into: Set<string>): void }>
  ) {
    this.#options = options
    this.#path = path
    this.#allowedHosts = allowedHosts
    this.#catalogs = catalogs
  }

  resource (request: FastifyRequest): string | undefined {
    if (this.#options.resource !== undefined) return this.#options.resource
    if (!isKnownHost(hostnameOf(request.host), this.#allowedHosts)) return undefined
    return `${request.protocol}://${request.host}${this.#path}`
  }

  metadata (resource: string): Record<string, unknown> {
    const o = this.#options
    const body: Record<string, unknown> = {
      resource,
      authorization_servers: o.authorizationServers,
      bearer_methods_supported: o.bearerMethodsSupported ?? ['header'],
    }
    const scopes = new Set(o.scopesSupported ?? [])
    for (const catalog of this.#catalogs) catalog.scopesInto(scopes)
    if (scopes.size > 0) body.scopes_supported = [...scopes]
    if (o.resourceName !== undefined) body.resource_name = o.resourceName
    if (o.resourceDocumentation !== undefined) body.resource_documentation = o.resourceDocumentation
    return body
  }

  metadataUrl (request: FastifyRequest): string | undefined {
    const resource = this.resource(request)
    if (resource === undefined) return undefined
    const url = new URL(resource)
    return `${url.origin}${WELL_KNOWN}${url.pathname === '/' ? '' : url.pathname}`
  }

  challenge (request: FastifyRequest, reply: FastifyReply): void {
    const metadata = this.metadataUrl(request)
    if (metadata === undefined) return
    const parameter = `resource_metadata="${metadata}"`
    const existing = reply.getHeader('www-authenticate')
    if (typeof existing === 'string' && existing !== '') {
      if (!existing.includes('resource_metadata=')) reply.header('www-authenticate', `${existing}, ${parameter}`)
    } else {
      reply.header('www-authenticate', `Bearer ${parameter}`)
    }
  }

  register (fastify: FastifyInstance): void {
    const configured = this.#options.resource
    if (configured === undefined) {
      fastify.log.warn('mocapi: protectedResource.resource is not set, so the metadata is served only to requests whose Host is a ' +
        'loopback name or listed in allowedHosts; set it to the endpoint\'s public URL in production')
    }
    const handler = async (request: FastifyRequest, reply: FastifyReply) => {
      const resource = this.resource(request)
      if (resource === undefined) {
        return reply.code(421).header('cache-control', 'no-store').send({
          error: 'misdirected_request',
          error_description: 'This host is not one the server knows; set protectedResource.resource or allowedHosts',
        })
      }
      // A URL derived from the request is only as good as its Host: no shared cache keeps it.
      return reply.header('cache-control', configured === undefined ? 'no-store' : 'public, max-age=3600').send(this.metadata(resource))
    }
    const urls = new Set([WELL_KNOWN, `${WELL_KNOWN}${this.#path}`])
    if (configured !== undefined) {
      const pathname = new URL(configured).pathname
      if (pathname !== '/') urls.add(`${WELL_KNOWN}${pathname}`)
    }
    for (const url of urls) fastify.get(url, { config: { mcpPublic: true } }, handler)
  }
}
