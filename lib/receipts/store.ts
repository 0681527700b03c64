import { positiveInteger } from '../check.js'

/** A receipt as a store keeps it: its holder, until when (a claim's lease, or a done receipt's expiry), sealed. */
export interface StoredReceipt {
  readonly state: 'running' | 'done'
  /** 22 base64url characters, random per call: only the call that claimed a receipt completes or releases it. */
  readonly holder: string
  /** Epoch ms. */
  readonly until: number
  /** Opaque to the store: the request's fingerprint, and once done its reply. */
  readonly sealed: string
}

/** How a completion went: `'written'`; `'lost'`, the claim lapsed and another call holds it; `'full'`, no room. */
export type ReceiptWrite = 'written' | 'lost' | 'full'

/**
 * Keeps receipts for every node, named by keyed digests (it sees no principal, key or token); each method resolves once
 * its effect is visible to a `read` on any node. `mocapi/testing`'s `receiptStoreChecks` are what a store must pass.
 */
export interface ReceiptStore {
  /** Atomically: `'claimed'` (none held it, or its lease lapsed), `'full'` (no room), else the receipt holding it. */
  claim (name: string, holder: string, sealed: string, leaseMs: number): Promise<'claimed' | 'full' | StoredReceipt>
  /** Extends the claim of `holder` by `leaseMs` from now; false once it holds it no longer. */
  renew (name: string, holder: string, leaseMs: number): Promise<boolean>
  /** Replaces the claim of `holder` with its done receipt, kept `ttlMs`. */
  complete (name: string, holder: string, sealed: string, ttlMs: number): Promise<ReceiptWrite>
  /** Drops the claim of `holder` (its call was refused before it ran). */
  release (name: string, holder: string): Promise<void>
  /** The receipt of `name`; undefined when there is none or it expired. */
  read (name: string): Promise<StoredReceipt | undefined>
  /** Releases the store's resources when the server closes. */
  close? (): void | Promise<void>
}

/** Options of {@link MemoryReceiptStore}. */
export interface MemoryReceiptStoreOptions {
  /** Characters of receipts held at once; past it a receipt is not kept. Default 64 MiB. */
  maxBytes?: number | undefined
  /** Clock in epoch milliseconds; `Date.now` by default. */
  now?: (() => number) | undefined
}

const DEFAULT_MAX_BYTES = 64 * 1024 * 1024

/** The default store, in this process (a duplicate on another node runs again), bounded in characters. */
export class MemoryReceiptStore implements ReceiptStore {
  readonly #receipts = new Map<string, StoredReceipt>()
  readonly #maxBytes: number
  readonly #now: () => number
  #bytes = 0
  /** When the store last swept: a full store sweeps at most once a second, not on every write. */
  #swept = -Infinity

  constructor (options: MemoryReceiptStoreOptions = {}) {
    this.#maxBytes = positiveInteger(options.maxBytes, 'MemoryReceiptStore maxBytes', DEFAULT_MAX_BYTES)
    this.#now = options.now ?? Date.now
  }

  /** Characters held now, expired receipts not yet swept included. */
  get bytes (): number {
    return this.#bytes
  }

  async claim (name: string, holder: string, sealed: string, leaseMs: number): Promise<'claimed' | 'full' | StoredReceipt> {
    const kept = this.#live(name)
    if (kept !== undefined) return kept
    return this.#put(name, { state: 'running', holder, until: this.#now() + leaseMs, sealed }) ? 'claimed' : 'full'
  }

  async renew (name: string, holder: string, leaseMs: number): Promise<boolean> {
    const kept = this.#live(name)
    if (kept?.state !== 'running' || kept.holder !== holder) return false
    this.#receipts.set(name, { ...kept, until: this.#now() + leaseMs })
    return true
  }

  async complete (name: string, holder: string, sealed: string, ttlMs: number): Promise<ReceiptWrite> {
    const kept = this.#live(name)
    if (kept?.state !== 'running' || kept.holder !== holder) return 'lost'
    this.#drop(name, kept)
    if (this.#put(name, { state: 'done', holder, until: this.#now() + ttlMs, sealed })) return 'written'
    return 'full'
  }

  async release (name: string, holder: string): Promise<void> {
    const kept = this.#receipts.get(name)
    if (kept?.state === 'running' && kept.holder === holder) this.#drop(name, kept)
  }

  async read (name: string): Promise<StoredReceipt | undefined> {
    return this.#live(name)
  }

  #put (name: string, receipt: StoredReceipt): boolean {
    const size = name.length + receipt.sealed.length
    if (this.#bytes + size > this.#maxBytes) this.#sweep()
    if (this.#bytes + size > this.#maxBytes) return false
    this.#receipts.set(name, receipt)
    this.#bytes += size
    return true
  }

  #live (name: string): StoredReceipt | undefined {
    const kept = this.#receipts.get(name)
    if (kept === undefined || kept.until > this.#now()) return kept
    this.#drop(name, kept)
    return undefined
  }

  #drop (name: string, receipt: StoredReceipt): void {
    this.#receipts.delete(name)
    this.#bytes -= name.length + receipt.sealed.length
  }

  #sweep (): void {
    const now = this.#now()
    if (now - this.#swept < 1_000) return
    this.#swept = now
    for (const [name, receipt] of this.#receipts) if (receipt.until <= now) this.#drop(name, receipt)
  }
}
