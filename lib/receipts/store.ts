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
  // Each receipt one string, `<r|d><holder><until>|<sealed>`: a map of strings is all a collection has to mark.
  readonly #receipts = new Map<string, string>()
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
    if (kept !== undefined) return decodeReceipt(kept) as StoredReceipt
    return this.#put(name, encodeReceipt('r', holder, this.#now() + leaseMs, sealed)) ? 'claimed' : 'full'
  }

  async renew (name: string, holder: string, leaseMs: number): Promise<boolean> {
    const kept = this.#running(name, holder)
    if (kept === undefined) return false
    // In place, past the bound if need be: a lease renewed is never a claim lost for want of a few digits.
    const renewed = encodeReceipt('r', holder, this.#now() + leaseMs, (decodeReceipt(kept) as StoredReceipt).sealed)
    this.#receipts.set(name, renewed)
    this.#bytes += renewed.length - kept.length
    return true
  }

  async complete (name: string, holder: string, sealed: string, ttlMs: number): Promise<ReceiptWrite> {
    const kept = this.#running(name, holder)
    if (kept === undefined) return 'lost'
    this.#drop(name, kept)
    return this.#put(name, encodeReceipt('d', holder, this.#now() + ttlMs, sealed)) ? 'written' : 'full'
  }

  async release (name: string, holder: string): Promise<void> {
    const kept = this.#running(name, holder)
    if (kept !== undefined) this.#drop(name, kept)
  }

  async read (name: string): Promise<StoredReceipt | undefined> {
    const kept = this.#live(name)
    return decodeReceipt(kept)
  }

  #running (name: string, holder: string): string | undefined {
    const kept = this.#live(name)
    return kept !== undefined && kept.startsWith(`r${holder}`) ? kept : undefined
  }

  #put (name: string, value: string): boolean {
    const size = name.length + value.length
    if (this.#bytes + size > this.#maxBytes) this.#sweep()
    if (this.#bytes + size > this.#maxBytes) return false
    this.#receipts.set(name, value)
    this.#bytes += size
    return true
  }

  #live (name: string): string | undefined {
    const kept = this.#receipts.get(name)
    if (kept === undefined || untilOf(kept) > this.#now()) return kept
    this.#drop(name, kept)
    return undefined
  }

  #drop (name: string, value: string): void {
    this.#receipts.delete(name)
    this.#bytes -= name.length + value.length
  }

  #sweep (): void {
    const now = this.#now()
    if (now - this.#swept < 1_000) return
    this.#swept = now
    for (const [name, value] of this.#receipts) if (untilOf(value) <= now) this.#drop(name, value)
  }
}

/** A holder is 22 characters (`StoredReceipt.holder`), so the state and holder make the first 23. */
export const HOLDER_END = 23

/** A receipt as one string, `<r|d><holder><until>|<sealed>`: how mocapi's stores keep it. */
export function encodeReceipt (state: 'r' | 'd', holder: string, until: number, sealed: string): string {
  return `${state}${holder}${until}|${sealed}`
}

function untilOf (value: string): number {
  return Number(value.slice(HOLDER_END, value.indexOf('|', HOLDER_END)))
}

/** The receipt a value of {@link encodeReceipt} holds, or undefined for anything else. */
export function decodeReceipt (value: unknown): StoredReceipt | undefined {
  if (typeof value !== 'string' || value.length < HOLDER_END + 2) return undefined
  const bar = value.indexOf('|', HOLDER_END)
  const until = untilOf(value)
  if (bar === -1 || !Number.isSafeInteger(until) || (value[0] !== 'r' && value[0] !== 'd')) return undefined
  return { state: value[0] === 'r' ? 'running' : 'done', holder: value.slice(1, HOLDER_END), until, sealed: value.slice(bar + 1) }
}
