import { InvalidDefinitionError } from '../errors.js'
import type { JsonObject } from '../protocol/wire.js'

/** What a completer sees: the value typed so far and the other arguments already chosen. */
export interface CompletionContext {
  /** Arguments (or template variables) the client already resolved. */
  arguments: Record<string, string>
}

/** Suggests values for one prompt argument or template variable. */
export type Completer = (value: string, context: CompletionContext) => readonly string[] | Promise<readonly string[]>

/** A completer, or the fixed list of values it completes from (filtered by prefix). */
export type CompletionSource = Completer | readonly string[]

const MAX_COMPLETIONS = 100

export function toCompleter (source: CompletionSource | undefined, where: string): Completer | undefined {
  if (source === undefined) return undefined
  if (typeof source === 'function') return source
  if (!Array.isArray(source) || !source.every((value) => typeof value === 'string')) {
    throw new InvalidDefinitionError(`${where} must be a function or an array of strings`)
  }
  const values = [...source]
  return (value) => {
    const prefix = value.toLowerCase()
    return values.filter((candidate) => candidate.toLowerCase().startsWith(prefix))
  }
}

export async function complete (
  completer: Completer | undefined,
  value: string,
  context: CompletionContext
): Promise<JsonObject> {
  const all = completer === undefined ? [] : await completer(value, context)
  if (!Array.isArray(all) || !all.every((item) => typeof item === 'string')) {
    throw new TypeError('a completer must return an array of strings')
  }
  return {
    completion: { values: all.slice(0, MAX_COMPLETIONS), total: all.length, hasMore: all.length > MAX_COMPLETIONS },
  }
}
