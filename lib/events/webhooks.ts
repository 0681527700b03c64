import { randomBytes, timingSafeEqual } from 'node:crypto'
import { LruMap } from 'toad-cache'
import type { FastifyBaseLogger } from 'fastify'
import type { McpContext } from '../context.js'
import { invalidParams } from '../errors.js'
import { jsonObject, type JsonObject } from '../protocol/wire.js'
import { digest } from '../seal/digest.js'
import { Sealer, type KeyRing } from '../seal/seal.js'
import { canonical } from './cursor.js'
import { callbackFailed, exhausted, forbidden, subscriptionNotFound, unsupported } from './errors.js'
import type { EventFeed, Subscribed } from './feed.js'
import { CallbackRefused, type CallbackGuard, type CheckedCallback } from './guard.js'
import type { EventLog } from './log.js'
import { postJson, type PostOutcome } from './post.js'
import { parseSecret, signedHeaders } from './sign.js'

const RECORD_PURPOSE = 8
/** UTF-8 bytes of a webhook subscription's arguments at most, kept in its record and read by every delivery. */
const ARGUMENTS_BYTES = 16 * 1024
/** Characters of a sealed record opened at most: arguments, URL and secret are bounded, the principal is the app's. */
const RECORD_LENGTH = 1024 * 1024
const MAX_URL_LENGTH = 2048
/** A verified (principal, callback URL) is not asked again for a day. */
const VERIFIED_MS = 86_400_000
const ANSWER_BYTES = 4096

export interface WebhookSettings {
  /** ms a POST may take. */
  timeout: number
  /** Verification POSTs this node sends one host in a minute at most. */
  verificationsPerMinute: number
  /** TTL granted: the default, and the bounds a client's `ttlMs` is clamped to. */
  ttl: { fallback: number, least: number, most: number }
  subscriptionsPerPrincipal: number
  /** For tests: the certificate authorities https callbacks chain to. */
  ca?: string | undefined
}

/** What a subscription's sealed record holds: everything a delivery needs. */
export interface SubscriptionRecord {
  principal: string
  url: string
  name: string
  args: JsonObject
  secret: string
  /** The secret a refresh replaced, still signing beside the new one until `until` (epoch ms). */
  previous?: { secret: string, until: number }
}

/** How long a replaced secret still signs deliveries, so a receiver that keeps the old one a while verifies them. */
const ROTATION_GRACE_MS = 3_600_000

/** `events/subscribe` and `events/unsubscribe`, and the signed POSTs that verification and deliveries share. */
export class Webhooks {
  readonly #log: EventLog
  readonly #feed: EventFeed
  readonly #guard: CallbackGuard
  readonly #sealer: Sealer
  readonly #settings: WebhookSettings
  readonly #logger: FastifyBaseLogger
  readonly #verifications: PerMinute

  constructor (parts: {
    log: EventLog
    feed: EventFeed
    guard: CallbackGuard
    ring: KeyRing
    settings: WebhookSettings
    logger: FastifyBaseLogger
  }) {
    this.#log = parts.log
    this.#feed = parts.feed
    this.#guard = parts.guard
    this.#sealer = new Sealer(parts.ring, RECORD_PURPOSE, RECORD_LENGTH)
    this.#settings = parts.settings
    this.#logger = parts.logger
    this.#verifications = new PerMinute(parts.settings.verificationsPerMinute)
  }

  get timeout (): number {
    return this.#settings.timeout
  }

  async subscribe (ctx: McpContext): Promise<JsonObject> {
    const principal = this.#principal(ctx, 'events/subscribe')
    const subscribed = await this.#feed.subscribed(ctx, 'webhook', principal)
    const delivery = ctx.params.delivery as JsonObject
    // A client that names no mode asks for the one mode this method has.
    if (delivery.mode !== undefined && delivery.mode !== 'webhook') {
      throw unsupported(`params.delivery.mode must be 'webhook', got ${JSON.stringify(delivery.mode).slice(0, 100)}`,
        { feature: 'deliveryMode', value: delivery.mode })
    }
    const url = this.#url(delivery.url)
    if (parseSecret(delivery.secret) === undefined) {
      throw invalidParams('params.delivery.secret must be whsec_ followed by the base64 of 24 to 64 random bytes (the Standard Webhooks form)')
    }
    const checked = await this.#checked(url)
    const ttl = this.#ttl(ctx.params.ttlMs)
    const { start, truncated } = await this.#start(subscribed, ctx.params.cursor)
    const { type, args } = subscribed
    const id = subscriptionId(principal, url, type.name, args)
    const record: SubscriptionRecord = { principal, url, name: type.name, args, secret: delivery.secret as string }
    // Every delivery reads the record back: its arguments are kept small, as a subscription's filters are.
    if (Buffer.byteLength(canonical(args)) > ARGUMENTS_BYTES) {
      throw invalidParams(`params.arguments of a webhook subscription take at most ${ARGUMENTS_BYTES} bytes of JSON`)
    }
    await this.#verify(principal, checked, record, id)
    const expiresAt = Date.now() + ttl
    const existing = await this.#log.subscription(id)
    const replaced = existing === undefined ? undefined : this.open(id, existing.sealed)
    const previous = replaced?.secret !== record.secret && replaced !== undefined
      ? { secret: replaced.secret, until: Date.now() + ROTATION_GRACE_MS }
      : replaced?.previous
    if (previous !== undefined) record.previous = previous
    const kept = JSON.stringify(record)
    const stored = await this.#log.putSubscription({
      id, name: type.name, owner: digest('events-owner', principal), sealed: this.#sealer.seal(kept, id), expiresAt,
    }, this.#settings.subscriptionsPerPrincipal)
    if (stored === 'full') {
      throw exhausted(`This caller holds ${this.#settings.subscriptionsPerPrincipal} webhook subscriptions, the most it may ` +
        '(events.subscriptionsPerPrincipal); unsubscribe from one first', 'subscriptions', this.#settings.subscriptionsPerPrincipal)
    }
    // A new subscription given a cursor replays what it missed; a live one goes on where it is.
    if (existing === undefined && start !== undefined) await this.#replay(ctx, subscribed, id, start)
    const head = (await this.#log.read(type.name, '0-0', 0)).head
    return {
      id,
      refreshBefore: new Date(expiresAt).toISOString(),
      cursor: this.#feed.cursors.seal({ position: head }, subscribed.binding),
      truncated,
    }
  }

  async unsubscribe (ctx: McpContext): Promise<JsonObject> {
    const principal = this.#principal(ctx, 'events/unsubscribe')
    const args = ctx.params.arguments ?? {}
    const url = this.#url((ctx.params.delivery as JsonObject).url)
    const id = subscriptionId(principal, url, ctx.params.name as string, args as JsonObject)
    if (!(await this.#log.deleteSubscription(id))) throw subscriptionNotFound()
    return {}
  }

  /** The record of a live subscription; undefined when it is gone or its record does not open (a key retired). */
  open (id: string, sealed: string): SubscriptionRecord | undefined {
    try {
      return JSON.parse(this.#sealer.open(sealed, id)) as SubscriptionRecord
    } catch {
      return undefined
    }
  }

  /**
   * One signed POST: checked again (no DNS rebinding), to the address checked, never redirected; signed with the
   * record's secret, and with the one it replaced while that one's grace lasts.
   */
  async post (
    record: SubscriptionRecord, messageId: string, subscriptionId: string, body: string
  ): Promise<PostOutcome | CallbackRefused> {
    let target
    try {
      target = await this.#guard.check(record.url)
    } catch (error) {
      return error as CallbackRefused
    }
    const secrets = [record.secret]
    if (record.previous !== undefined && record.previous.until > Date.now()) secrets.push(record.previous.secret)
    return await this.#send(target, secrets, messageId, subscriptionId, body)
  }

  async #send (
    target: CheckedCallback, secrets: string[], messageId: string, subscriptionId: string, body: string
  ): Promise<PostOutcome> {
    const keys = secrets.map((secret) => parseSecret(secret) as Buffer)
    const headers = { ...signedHeaders(keys, messageId, body, Date.now()), 'X-MCP-Subscription-Id': subscriptionId }
    const options = { timeoutMs: this.#settings.timeout, maxResponseBytes: ANSWER_BYTES, ca: this.#settings.ca }
    return await postJson(target, headers, body, options)
  }

  #principal (ctx: McpContext, method: string): string {
    if (ctx.principal === null) {
      throw forbidden(`${method} needs an authenticated caller: a webhook subscription belongs to a principal (anonymous callers may poll or stream)`, 'unauthenticated')
    }
    return ctx.principal
  }

  #url (value: unknown): string {
    if (typeof value !== 'string' || value.length === 0 || value.length > MAX_URL_LENGTH) {
      throw invalidParams(`params.delivery.url must be an https URL of at most ${MAX_URL_LENGTH} characters`)
    }
    return value
  }

  async #checked (url: string): Promise<CheckedCallback> {
    try {
      return await this.#guard.check(url)
    } catch (error) {
      const refused = error as CallbackRefused
      throw invalidParams(`params.delivery.url is refused: ${refused.message}`, 200, { reason: refused.reason })
    }
  }

  /** The TTL granted: the default unless asked; else what was asked within the bounds (`null`, no expiry: the most). */
  #ttl (value: unknown): number {
    const { fallback, least, most } = this.#settings.ttl
    if (value === undefined) return fallback
    if (value === null) return most
    if (!Number.isSafeInteger(value) || (value as number) < 0) throw invalidParams(`params.ttlMs must be a non-negative integer or null, got ${JSON.stringify(value)?.slice(0, 100)}`)
    return Math.min(most, Math.max(least, value as number))
  }

  async #start (subscribed: Subscribed, cursor: unknown): Promise<{ start: string | undefined, truncated: boolean }> {
    // No cursor: deliveries start with what comes next, and the reply's cursor is the head, read once there.
    if (cursor === undefined || cursor === null) return { start: undefined, truncated: false }
    const { place, truncated } = await this.#feed.start(subscribed, cursor, undefined)
    return { start: (place as { position: string }).position, truncated }
  }

  /** Enqueues the deliveries of what matches after `after`, as many as one read returns (`maxEvents`' cap). */
  async #replay (ctx: McpContext, subscribed: Subscribed, id: string, after: string): Promise<void> {
    const most = this.#feed.maxEvents(Number.MAX_SAFE_INTEGER)
    const batch = await this.#feed.read(ctx, subscribed, { position: after }, most)
    const name = subscribed.type.name
    const jobs = batch.events.map(({ place }) => deliveryJob(id, name, (place as { position: string }).position))
    if (jobs.length > 0) await this.#log.enqueue(jobs, Date.now())
  }

  /** A (principal, URL) not verified in the last day must echo a signed challenge, else the subscribe fails. */
  async #verify (principal: string, target: CheckedCallback, record: SubscriptionRecord, id: string): Promise<void> {
    const key = `verified|${digest('events-verified', `${principal}\u0000${record.url}`)}`
    if (await this.#log.marked(key)) return
    const host = target.url.host
    if (!this.#verifications.take(target.url.hostname)) {
      const most = this.#settings.verificationsPerMinute
      throw exhausted(`This server sent ${target.url.hostname} ${most} verification challenges in the last minute, the most it sends one host ` +
        '(events.webhooks.verificationsPerMinute); try again in a minute', 'verifications', most)
    }
    const challenge = randomBytes(24).toString('base64url')
    const body = JSON.stringify({ type: 'verification', challenge })
    const outcome = await this.#send(target, [record.secret], `msg_verification_${randomBytes(12).toString('base64url')}`, id, body)
    if (!outcome.ok) {
      const reason = outcome.status === undefined ? outcome.error : 'challenge_failed'
      this.#logger.warn({ mcp: { host, reason, status: outcome.status } }, 'mocapi: a webhook callback failed its verification')
      throw callbackFailed(`The callback at ${host} did not answer the verification challenge with 2xx (${outcome.status ?? outcome.error})`, reason)
    }
    const echoed = jsonObject(outcome.body)?.challenge
    if (typeof echoed !== 'string' || !sameText(echoed, challenge)) {
      this.#logger.warn({ mcp: { host, reason: 'challenge_failed' } }, 'mocapi: a webhook callback failed its verification')
      throw callbackFailed(`The callback at ${host} answered the verification without echoing its challenge`, 'challenge_failed')
    }
    await this.#log.mark(key, VERIFIED_MS)
  }
}

/** Hosts tracked at most: past it the least recently counted is forgotten, so the limiter's map stays bounded. */
const TRACKED_HOSTS = 10_000

/** A count per key that lapses a minute after it was last raised, over a bounded map. */
class PerMinute {
  readonly #most: number
  readonly #counts = new LruMap<number>(TRACKED_HOSTS, 60_000)

  constructor (most: number) {
    this.#most = most
  }

  take (key: string): boolean {
    const count = this.#counts.get(key) ?? 0
    if (count >= this.#most) return false
    this.#counts.set(key, count + 1)
    return true
  }
}

function sameText (a: string, b: string): boolean {
  const left = Buffer.from(a)
  const right = Buffer.from(b)
  return left.length === right.length && timingSafeEqual(left, right)
}

/** Stable across refreshes, restarts and nodes: the same principal, callback, type and arguments, the same id. */
export function subscriptionId (principal: string, url: string, name: string, args: JsonObject): string {
  return `sub_${digest('events-subscription', canonical({ principal, url, name, args }))}`
}

export function deliveryJob (subscription: string, name: string, position: string): { id: string, body: string } {
  return { id: `deliver|${subscription}|${position}`, body: JSON.stringify({ subscription, name, position }) }
}
