import { positiveInteger } from '../check.js'
import type { BusEvent } from './events.js'

export type { BusEvent } from './events.js'

/**
 * Carries events between the nodes of a deployment. The default is in-process; a shared bus (Redis pub/sub, say)
 * lets a change announced on one node reach listeners on all, and with `send` and `receive` carries 2025-era
 * clients' answers to the node that waits for them. Events are plain JSON; a bus passes them on as they are.
 */
export interface NotificationBus {
  /** Announces an event to every node's listeners. */
  publish (event: BusEvent): void | Promise<void>
  /** Receives every event announced by any node; returns the unsubscribe function. */
  subscribe (listener: (event: BusEvent) => void): (() => void) | Promise<() => void>
  /** Delivers a message to the node listening as `node`; resolves whether one received it. */
  send? (node: string, message: object): Promise<boolean>
  /** Receives the messages sent to `node`; returns the function that stops it. */
  receive? (node: string, listener: (message: object) => void): (() => void) | Promise<() => void>
  /**
   * Tells `listener` when the bus stops carrying events (`'down'`, with the error that said so) and carries them
   * again (`'up'`): once per change, only after it first delivered; returns the function that stops it. Events
   * published while down are lost, so mocapi logs both changes and, on `'up'`, tells its open streams of every
   * change they listen to. A bus that cannot go down (the in-process one) leaves it out.
   */
  /**
   * Claims `id` for `ttlMs` ms, atomically across the deployment: resolves true for the first claim, false while the
   * claim holds (`requestState.singleUse` claims each round's token with it).
   */
  claim? (id: string, ttlMs: number): Promise<boolean>
  watch? (listener: (state: 'down' | 'up', cause?: unknown) => void): () => void
  /** Releases the bus's resources when the server closes. */
  close? (): void | Promise<void>
}

/**
 * The in-process bus: an event reaches this process's listeners only. Apps that share one instance behave as the
 * nodes of one deployment (tests of cross-node flows use this).
 */
export class InProcessBus implements NotificationBus {
  readonly #listeners = new Set<(event: BusEvent) => void>()
  readonly #nodes = new Map<string, (message: object) => void>()
  /** Claimed ids and when each claim ends (ms since the epoch), in the order they were claimed. */
  readonly #claims = new Map<string, number>()
  readonly #maxClaims: number

  /** `maxClaims`: claims held at once (default 100 000); past it, a claim is refused until one ends: never a reuse. */
  constructor (options: { maxClaims?: number } = {}) {
    this.#maxClaims = positiveInteger(options.maxClaims, 'InProcessBus maxClaims', 100_000)
  }

  publish (event: BusEvent): void {
    for (const listener of this.#listeners) listener(event)
  }

  subscribe (listener: (event: BusEvent) => void): () => void {
    this.#listeners.add(listener)
    return () => { this.#listeners.delete(listener) }
  }

  async send (node: string, message: object): Promise<boolean> {
    const listener = this.#nodes.get(node)
    if (listener === undefined) return false
    // As over a network: never in the sender's own turn.
    setImmediate(listener, message)
    return true
  }

  async claim (id: string, ttlMs: number): Promise<boolean> {
    const now = Date.now()
    const until = this.#claims.get(id)
    if (until !== undefined && until > now) return false
    this.#claims.delete(id)
    if (this.#claims.size >= this.#maxClaims) this.#sweep(now)
    if (this.#claims.size >= this.#maxClaims) {
      throw new Error(`mocapi: the in-process bus holds ${this.#maxClaims} claims, its limit (maxClaims): none is refused for reuse, so this one fails`)
    }
    this.#claims.set(id, now + ttlMs)
    return true
  }

  /** Drops ended claims: a bounded walk, run only when the map is full. */
  #sweep (now: number): void {
    for (const [id, until] of this.#claims) if (until <= now) this.#claims.delete(id)
  }

  receive (node: string, listener: (message: object) => void): () => void {
    this.#nodes.set(node, listener)
    return () => { this.#nodes.delete(node) }
  }
}
