import type { FastifyRequest } from 'fastify'
import type { Principal } from '../call.js'
import { isPlainObject } from '../protocol/wire.js'

const ANONYMOUS: Principal = Object.freeze({ value: null, state: 'anonymous' })
const UNBOUND: Principal = Object.freeze({ value: null, state: 'unbound' })

function bound (id: unknown): Principal | undefined {
  if (typeof id === 'string') return { value: id, state: 'bound' }
  if (typeof id === 'number' && Number.isFinite(id)) return { value: String(id), state: 'bound' }
  return undefined
}

/** A user with no usable id is unbound, not anonymous: it fails closed (the replay engine refuses its rounds). */
export function principalOf (
  request: FastifyRequest,
  custom: ((request: FastifyRequest) => unknown) | undefined
): Principal {
  if (custom !== undefined) {
    const value = custom(request)
    return value === null || value === undefined ? ANONYMOUS : bound(value) ?? UNBOUND
  }
  const user = (request as FastifyRequest & { user?: unknown }).user
  if (user === null || user === undefined) return ANONYMOUS
  return bound(user) ?? (isPlainObject(user) ? bound(user.sub) : undefined) ?? UNBOUND
}
