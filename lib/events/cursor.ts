import { invalidParams, type InvalidRequestStateError } from '../errors.js'
import { Sealer, type KeyRing } from '../seal/seal.js'
import { canonicalize } from '../protocol/json.js'
import type { JsonObject } from '../protocol/wire.js'
import type { Position } from './log.js'

const CURSOR_PURPOSE = 7
/** Longest cursor opened or sealed, in characters: an upstream's own cursor is bounded by it too. */
export const MAX_CURSOR_LENGTH = 4096

/** Arguments as RFC 8785 writes them: one text per meaning, whatever the key order or number spelling. */
export function canonical (args: JsonObject): string {
  const text = canonicalize(args)
  if (text === undefined) throw invalidParams('params.arguments holds a number JSON cannot write')
  return text
}

/** What a cursor holds: a place in the log, or (a type with `check`) the upstream's own cursor. */
export type CursorPlace = { position: Position } | { upstream: string }

/**
 * Cursors are sealed under the key ring and bound (as AEAD additional data) to the caller, the event type and the
 * canonical arguments: one that was issued to another caller or subscription does not open (-32602).
 */
export class EventCursors {
  readonly #sealer: Sealer

  constructor (ring: KeyRing) {
    this.#sealer = new Sealer(ring, CURSOR_PURPOSE, MAX_CURSOR_LENGTH)
  }

  seal (place: CursorPlace, binding: string): string {
    const text = 'position' in place ? `p${place.position}` : `u${place.upstream}`
    return this.#sealer.seal(text, binding)
  }

  /** Throws -32602 for a cursor that is not one this server sealed for this binding, its reason in `cause`. */
  open (cursor: string, binding: string): CursorPlace {
    let text
    try {
      text = this.#sealer.open(cursor, binding)
    } catch (error) {
      const refused = invalidParams('params.cursor is not a cursor this server issued for this caller, event type and arguments')
      refused.cause = (error as InvalidRequestStateError).reason
      throw refused
    }
    // Only this server seals cursors: what opened is one of the two forms it writes.
    return text.startsWith('u') ? { upstream: text.slice(1) } : { position: text.slice(1) }
  }

  /** Whether an upstream cursor of this length still fits in a sealed one. */
  fits (upstream: string): boolean {
    return this.#sealer.tokenLength(Buffer.byteLength(upstream) + 1) <= MAX_CURSOR_LENGTH
  }
}

/** What a cursor is bound to. */
export function bindingOf (principal: string | null, name: string, args: JsonObject): string {
  return `${principal ?? ''}\u0000${name}\u0000${canonical(args)}`
}
