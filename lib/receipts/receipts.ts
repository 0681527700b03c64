// A call's receipt keeps its reply, so a duplicate (a retry whose reply was lost) gets that reply instead of a run.
import { createHmac } from 'node:crypto'
import type { FastifyBaseLogger } from 'fastify'
import type { CallState } from '../call.js'
import { within } from '../check.js'
import { ErrorCode, McpError, invalidParams, invalidRequest, unboundPrincipal } from '../errors.js'
import { canonicalize } from '../protocol/json.js'
import { PROTOCOL_VERSION, isPlainObject, type JsonObject, type RequestId } from '../protocol/wire.js'
import { digest } from '../seal/digest.js'
import { Sealer, type KeyRing } from '../seal/seal.js'
import { InProcessBus, type NotificationBus } from '../bus/bus.js'
import type { ReceiptEvent } from '../bus/events.js'
import { MemoryReceiptStore, type ReceiptStore, type StoredReceipt } from './store.js'

/** A request's idempotency key, in `_meta` (the header spells it too). */
const META_IDEMPOTENCY_KEY = 'mocapi/idempotencyKey'
const KEY = /^[\x21-\x7e]{1,255}$/
/** Sealed receipts: a kind of token no other sealer opens. */
const RECEIPT_PURPOSE = 6
const WARN_EVERY_MS = 60_000

export interface ReceiptSettings {
  /** Default: a `MemoryReceiptStore`. */
  store?: ReceiptStore | undefined
  ring: KeyRing
  /** ms a keyed receipt lives. */
  ttl: number
  /** UTF-8 bytes of a reply kept at most. */
  maxBytes: number
  /** ms a claim holds before its node is taken for gone, renewed every third of it. */
  lease: number
  /** Duplicates that may wait for their first at once, in this process. */
  maxWaiting: number
  /** Whether retried rounds keep receipts: not with `requestState.singleUse`, which refuses a second retry instead. */
  rounds: boolean
  log: FastifyBaseLogger
  /** Tells every node a receipt is done, so duplicates waiting there read it; none when this node is alone. */
  bus: { publish (event: ReceiptEvent): void } | undefined
  /** A task's handle now (`taskId`, `status`, …) for its owner, or undefined. */
  tasks: { handle (id: string, principal: string | null): Promise<JsonObject | undefined> }
}

/** What a duplicate is answered: the first's reply with its own id. */
export interface Replay {
  readonly json: string
  readonly status: number
}

interface Kept {
  /** The request's fingerprint (a keyed call's name and arguments). */
  f: string
  /** The reply's JSON after `"id":<id>,`, and its HTTP status. */
  b?: string
  s?: number
  /** A task the call became. */
  t?: string
  /** When it ran, had its reply not been kept. */
  n?: number
}

function keyOf (call: CallState): string | undefined {
  const header = call.request.headers['idempotency-key']
  const meta = call.params._meta
  const spelled = isPlainObject(meta) ? meta[META_IDEMPOTENCY_KEY] : undefined
  if (header === undefined && spelled === undefined) return undefined
  const named = header ?? spelled
  if (Array.isArray(header) || (header !== undefined && spelled !== undefined && header !== spelled)) {
    throw invalidParams('The Idempotency-Key header and params._meta["mocapi/idempotencyKey"] name different keys: send one')
  }
  if (typeof named !== 'string' || !KEY.test(named)) {
    throw invalidParams('An idempotency key is 1 to 255 characters from ! to ~ (printable ASCII, no space)')
  }
  return named
}

export class Receipts {
  readonly #settings: ReceiptSettings
  /** A key derived from the ring's first, in hex: names and call ids are SHA-256 of it and the request, cut short. */
  readonly #secret: string
  /** Replies are sealed for a store other nodes read; the memory store is this process's own, which holds the keys. */
  readonly #seals: boolean
  readonly #sealer: Sealer
  readonly #waiting = new Map<string, Set<() => void>>()
  readonly #held = new Set<Claim>()
  readonly #renewal: NodeJS.Timeout
  #waiters = 0
  #warned = -Infinity

  readonly #store: ReceiptStore

  constructor (settings: ReceiptSettings) {
    this.#settings = settings
    this.#store = settings.store ?? new MemoryReceiptStore()
    this.#seals = !(this.#store instanceof MemoryReceiptStore)
    // A prefix secret hashed and cut to 128 bits: no length extension without the other 128 bits of the state.
    this.#secret = createHmac('sha256', settings.ring.primary.key).update('mocapi receipts').digest('hex')
    this.#sealer = new Sealer(settings.ring, RECEIPT_PURPOSE, Math.ceil(settings.maxBytes * 4 / 3) + 4096)
    this.#renewal = setInterval(() => { this.#renew() }, Math.max(1, Math.floor(settings.lease / 3)))
    this.#renewal.unref()
  }

  /** The receipt a request has: a retried 2026-07-28 round's, or a `tools/call`'s with an idempotency key. */
  of (call: CallState): Claim | undefined {
    const token = call.params.requestState
    const key = call.method === 'tools/call' ? keyOf(call) : undefined
    if (key === undefined && (typeof token !== 'string' || !this.#settings.rounds || call.client.protocolVersion !== PROTOCOL_VERSION)) return undefined
    if (call.principal.state === 'unbound') {
      // A round's token refuses such a caller itself; a keyed call would be anyone's.
      if (typeof token === 'string') return undefined
      throw unboundPrincipal()
    }
    const who = call.principal.value ?? ''
    if (key !== undefined && typeof token !== 'string') {
      const request = canonicalize({ name: call.params.name, arguments: call.params.arguments ?? {} })
      // What canonical JSON cannot write has no receipt.
      if (request === undefined) return undefined
      call.callId = digest(this.#secret, `c\0${who}\0${key}`)
      const era = call.client.protocolVersion === PROTOCOL_VERSION ? 'm' : 'l'
      const name = digest(this.#secret, `k${era}\0${who}\0${key}`)
      return new Claim(this, name, digest(this.#secret, `f\0${who}\0${key}\0${request}`), key, this.#settings.ttl)
    }
    // A round's request: its target and arguments (as the token binds them), its token and its answers.
    const { _meta, inputResponses, requestState, ...target } = call.params
    const request = canonicalize([call.method, target, inputResponses ?? null])
    if (request === undefined) return undefined
    return new Claim(this, digest(this.#secret, `r\0${who}\0${token as string}\0${request}`), '', undefined)
  }

  get settings (): ReceiptSettings {
    return this.#settings
  }

  get store (): ReceiptStore {
    return this.#store
  }

  seal (name: string, kept: Kept): string {
    const json = JSON.stringify(kept)
    return this.#seals ? this.#sealer.seal(json, name) : json
  }

  open (name: string, receipt: StoredReceipt): Kept | undefined {
    if (receipt.sealed === '') return undefined
    try {
      return JSON.parse(this.#seals ? this.#sealer.open(receipt.sealed, name) : receipt.sealed) as Kept
    } catch {
      return undefined
    }
  }

  /** A claim's holder id: 128 random bits from the ring's pool (a draw of its own per call costs as much again). */
  holder (): string {
    const bytes = Buffer.allocUnsafe(16)
    this.#settings.ring.fillRandom(bytes, 0, 16)
    return bytes.toString('base64url')
  }

  hold (claim: Claim): void {
    this.#held.add(claim)
  }

  letGo (claim: Claim): void {
    this.#held.delete(claim)
  }

  /** Claims held longer than a third of the lease are renewed, so their node is not taken for gone while it runs. */
  #renew (): void {
    const { lease } = this.#settings
    const store = this.#store
    const due = Date.now() - lease / 3
    for (const claim of this.#held) {
      if (claim.since > due) continue
      claim.since = Date.now()
      store.renew(claim.name, claim.holder, lease).then((held) => {
        if (!held) this.#held.delete(claim)
      }, (error: unknown) => { this.failed(error) })
    }
  }

  /** A duplicate waits until its first is done (told over the bus, or on its own poll) or its lease lapses. */
  async wait (name: string, signal: AbortSignal): Promise<void> {
    if (this.#waiters >= this.#settings.maxWaiting) {
      throw invalidRequest(`${this.#waiters} duplicate requests wait on this server already, the most it takes (limits.waitingCalls): try again later`, 429)
    }
    this.#waiters++
    try {
      await new Promise<void>((resolve) => {
        const waiting = this.#waiting.get(name) ?? new Set()
        this.#waiting.set(name, waiting)
        const done = (): void => {
          clearTimeout(timer)
          signal.removeEventListener('abort', done)
          waiting.delete(done)
          if (waiting.size === 0 && this.#waiting.get(name) === waiting) this.#waiting.delete(name)
          resolve()
        }
        const timer = setTimeout(done, Math.min(1_000, Math.max(10, this.#settings.lease / 3)))
        waiting.add(done)
        signal.addEventListener('abort', done, { once: true })
      })
    } finally {
      this.#waiters--
    }
    if (signal.aborted) throw new McpError(ErrorCode.InternalError, 'The duplicate stopped waiting: the client went away')
  }

  /** A receipt is done or let go here: duplicates waiting for it, on any node, look again. */
  announce (name: string): void {
    const { bus } = this.#settings
    if (bus === undefined) this.settled(name)
    else bus.publish({ kind: 'receipt', name })
  }

  /** A receipt is done somewhere: its duplicates here look again. */
  settled (name: string): void {
    for (const done of [...this.#waiting.get(name) ?? []]) done()
  }

  /** A full or failing store keeps no receipt and the call still runs: the operator hears of it once a minute. */
  failed (error: unknown): void {
    const now = Date.now()
    if (now - this.#warned < WARN_EVERY_MS) return
    this.#warned = now
    this.#settings.log.warn({ err: error }, 'mocapi: the receipt store kept no receipt for a call (it is full, or failing); such calls run, and a duplicate of one runs again')
  }

  /** At startup: receipts kept in one node's memory while the bus is shared, so a duplicate on another node runs. */
  warn (bus: NotificationBus): void {
    if (this.#store instanceof MemoryReceiptStore && !(bus instanceof InProcessBus)) {
      this.#settings.log.warn('mocapi: receipts are kept in memory (no receipts.store configured) while the bus is shared: ' +
        'a duplicate that reaches another node runs again; use RedisReceiptStore from mocapi/redis')
    }
  }

  async close (): Promise<void> {
    clearInterval(this.#renewal)
    await this.#store.close?.()
  }
}

/** One request's receipt: claimed before the call runs, then settled with its reply, or released. */
export class Claim {
  readonly name: string
  readonly holder: string
  /** When the claim was made or last renewed. */
  since = Date.now()
  readonly #receipts: Receipts
  readonly #fingerprint: string
  readonly #key: string | undefined
  /** A keyed receipt's life; a round's ends with its token's (and the skew). */
  readonly #ttl: number | undefined
  #claimed = false

  constructor (receipts: Receipts, name: string, fingerprint: string, key: string | undefined, ttl?: number) {
    this.#receipts = receipts
    this.holder = receipts.holder()
    this.name = name
    this.#fingerprint = fingerprint
    this.#key = key
    this.#ttl = ttl
  }

  /**
   * Undefined when this request is to run: it holds the claim (or the store had no room); else its replay. `signal`
   * is read only when the request must wait: most never do, and making a signal costs.
   */
  async claim (call: CallState, signal: () => AbortSignal, waiting: () => void): Promise<Replay | undefined> {
    const receipts = this.#receipts
    const { lease } = receipts.settings
    const store = receipts.store
    for (;;) {
      let held
      try {
        // A running claim holds the request's fingerprint as it is: a keyed digest, which tells the store nothing.
        held = await within(store.claim(this.name, this.holder, this.#fingerprint, lease), 'the receipt store')
      } catch (error) {
        receipts.failed(error)
        return undefined
      }
      if (held === 'full') {
        receipts.failed(new Error('the receipt store is full'))
        return undefined
      }
      if (held === 'claimed') {
        this.#claimed = true
        this.since = Date.now()
        receipts.hold(this)
        return undefined
      }
      const kept = held.state === 'done' ? receipts.open(this.name, held) : undefined
      const fingerprint = held.state === 'done' ? kept?.f : held.sealed
      if (this.#key !== undefined && fingerprint !== undefined && fingerprint !== this.#fingerprint) {
        throw invalidParams(`The idempotency key "${this.#key}" was used for another call: its tool or arguments differed; nothing ran`)
      }
      if (held.state === 'done') return await this.#replay(call, kept)
      waiting()
      await receipts.wait(this.name, signal())
    }
  }

  async #replay (call: CallState, kept: Kept | undefined): Promise<Replay> {
    if (kept?.b === undefined) {
      const ranAt = kept?.n === undefined ? undefined : new Date(kept.n).toISOString()
      throw invalidRequest('This request ran already, but its reply was larger than the server keeps (receipts.maxBytes): ' +
        'it is not run again', 409, { reason: 'reply-not-kept', ranAt })
    }
    let body = kept.b
    if (kept.t !== undefined) {
      const handle = await this.#receipts.settings.tasks.handle(kept.t, call.principal.value)
      if (handle !== undefined) {
        const result = (JSON.parse(`{${body}`) as { result: JsonObject }).result
        body = `${JSON.stringify({ result: { ...result, ...handle } }).slice(1)}`
      }
    }
    return { json: `${prefixOf(call.id)}${body}`, status: kept.s ?? 200 }
  }

  /**
   * Keeps the reply (or that it ran) when the call took effect (its handler ran, or it became a task); a request
   * refused before that keeps nothing, and its duplicate runs. `taskId`: the task the reply hands out.
   */
  async settle (call: CallState, reply: { json: string, status: number, taskId?: string | undefined }, ran: boolean):
  Promise<void> {
    if (!this.#claimed) return
    const receipts = this.#receipts
    receipts.letGo(this)
    const { maxBytes } = receipts.settings
    const store = receipts.store
    try {
      if (!ran) {
        await within(store.release(this.name, this.holder), 'the receipt store')
        receipts.announce(this.name)
        return
      }
      const { json, status, taskId } = reply
      const prefix = prefixOf(call.id)
      const kept: Kept = { f: this.#fingerprint }
      if (Buffer.byteLength(json) > maxBytes || !json.startsWith(prefix)) kept.n = Date.now()
      else {
        kept.b = json.slice(prefix.length)
        kept.s = status
        if (taskId !== undefined) kept.t = taskId
      }
      // A round that ran opened its token, so it is known until when a node may take it.
      const ttl = this.#ttl ?? (call.tokenTakenUntil as number) - Date.now()
      const sealed = receipts.seal(this.name, kept)
      const written = await within(store.complete(this.name, this.holder, sealed, Math.max(1, ttl)), 'the receipt store')
      if (written === 'full') receipts.failed(new Error('the receipt store is full'))
      receipts.announce(this.name)
    } catch (error) {
      receipts.failed(error)
    }
  }
}

/** The start every reply mocapi writes: what a replay swaps for the duplicate's own id. */
function prefixOf (id: RequestId | null): string {
  return `{"jsonrpc":"2.0","id":${JSON.stringify(id)},`
}
