// Checkers for options and definitions: each throws an `FST_MOCAPI_*` error naming the bad value.
import { InvalidOptionError, type RegistrationErrorConstructor } from './errors.js'
import { describe, isPlainObject } from './protocol/wire.js'

export { describe }

/** `ttlMs` and `cacheScope` stamped on a cacheable result. */
export interface CacheHint {
  /** How long a client may reuse the result, in ms. */
  ttlMs?: number | undefined
  /** `public` when every caller sees the same result, `private` when it varies by the caller's authorization. */
  cacheScope?: 'public' | 'private' | undefined
}

export function noop (): void {}

/** The longest delay a Node timer keeps: a longer one fires after 1 ms. */
export const MAX_TIMER_MS = 2 ** 31 - 1

/** How long a request waits on a shared store or bus (a claim, a receipt) before it takes it for failed. */
export const STORE_WAIT_MS = 2_000

/** `promise`, or a rejection saying `what` did not answer within `ms`: a frozen server must not hold a request. */
export function within<T> (promise: Promise<T>, what: string, ms = STORE_WAIT_MS): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  const late = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not answer within ${ms} ms`)), ms)
  })
  return Promise.race([promise, late]).finally(() => clearTimeout(timer))
}

/** Fails with `<name> must be <what>, got <value>`. */
export function fail (
  name: string,
  what: string,
  value: unknown,
  E: RegistrationErrorConstructor = InvalidOptionError
): never {
  throw new E(`${name} must be ${what}, got ${describe(value)}`)
}

export function plainObject (value: unknown, name: string, E?: RegistrationErrorConstructor): Record<string, unknown> {
  if (!isPlainObject(value)) fail(name, 'an object', value, E)
  return value
}

/** Fails with `unknown option <prefix><key>`, or `<where> has an unknown field "<key>"`. */
export function knownFields (
  value: Record<string, unknown>,
  known: ReadonlySet<string>,
  where: string,
  E: RegistrationErrorConstructor = InvalidOptionError
): void {
  for (const key of Object.keys(value)) {
    if (!known.has(key)) {
      throw new E(E === InvalidOptionError ? `unknown option ${where}${key}` : `${where} has an unknown field "${key}"`)
    }
  }
}

export function nonEmptyString (value: unknown, name: string, E?: RegistrationErrorConstructor): string {
  if (typeof value !== 'string' || value === '') fail(name, 'a non-empty string', value, E)
  return value
}

export function optionalString (value: unknown, name: string, E?: RegistrationErrorConstructor): string | undefined {
  if (value !== undefined && typeof value !== 'string') fail(name, 'a string', value, E)
  return value
}

export function positiveInteger (
  value: unknown,
  name: string,
  fallback: number,
  E?: RegistrationErrorConstructor
): number {
  if (value === undefined) return fallback
  if (!Number.isSafeInteger(value) || (value as number) <= 0) fail(name, 'a positive integer', value, E)
  return value as number
}

/** A positive integer of at most `max`; `why`, in the message, says where the bound comes from. */
export function boundedInteger (
  value: unknown,
  name: string,
  fallback: number,
  max: number,
  why: string,
  E?: RegistrationErrorConstructor
): number {
  const n = positiveInteger(value, name, fallback, E)
  if (n > max) fail(name, `at most ${max} (${why})`, value, E)
  return n
}

export function nonNegativeInteger (
  value: unknown,
  name: string,
  fallback: number,
  E?: RegistrationErrorConstructor
): number {
  if (value === undefined) return fallback
  if (!Number.isSafeInteger(value) || (value as number) < 0) fail(name, 'a non-negative integer', value, E)
  return value as number
}

export function stringList (value: unknown, name: string, E?: RegistrationErrorConstructor): string[] | undefined {
  if (value === undefined) return undefined
  if (!Array.isArray(value)) fail(name, 'an array of strings', value, E)
  value.forEach((item, i) => nonEmptyString(item, `${name}[${i}]`, E))
  return value
}

export function optionalBoolean (
  value: unknown,
  name: string,
  fallback: boolean,
  E?: RegistrationErrorConstructor
): boolean {
  if (value === undefined) return fallback
  if (typeof value !== 'boolean') fail(name, 'true or false', value, E)
  return value
}

export function optionalFunction<F extends (...args: any[]) => unknown> (
  value: unknown,
  name: string,
  E?: RegistrationErrorConstructor
): F | undefined {
  if (value !== undefined && typeof value !== 'function') fail(name, 'a function', value, E)
  return value as F | undefined
}

export function oneOf<const V extends string> (
  value: unknown,
  values: readonly V[],
  name: string,
  fallback: V,
  E?: RegistrationErrorConstructor
): V {
  if (value === undefined) return fallback
  if (!values.includes(value as V)) fail(name, values.map((v) => `'${v}'`).join(' or '), value, E)
  return value as V
}

export function cacheHint (
  value: unknown,
  name: string,
  fallback: Required<CacheHint>,
  E?: RegistrationErrorConstructor
): Required<CacheHint> {
  if (value === undefined) return fallback
  const hint = plainObject(value, name, E)
  knownFields(hint, CACHE_FIELDS, E === undefined || E === InvalidOptionError ? `${name}.` : name, E)
  return {
    ttlMs: nonNegativeInteger(hint.ttlMs, `${name}.ttlMs`, fallback.ttlMs, E),
    cacheScope: oneOf(hint.cacheScope, ['public', 'private'], `${name}.cacheScope`, fallback.cacheScope, E),
  }
}

const CACHE_FIELDS = new Set(['ttlMs', 'cacheScope'])
