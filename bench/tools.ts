/**
 * The tools every benchmarked server registers, as plain JSON Schema, so mocapi and the official SDK serve the same
 * definitions: `add` and `book` (which asks one question), and with BENCH_TOOLS=60 fifty-eight lookups besides, for the
 * 60-tool workloads (`tools/list` lists all of them; `tools/call` calls `add` among them).
 */

/** How many tools a server process registers: 2 (`add` and `book`) unless BENCH_TOOLS says more. */
export const toolCount = Math.max(2, Number(process.env.BENCH_TOOLS ?? 2))

export const addInput = { type: 'object', properties: { a: { type: 'number' }, b: { type: 'number' } }, required: ['a', 'b'] }
export const bookInput = { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] }

/** The question of `book`, as mocapi renders `requestedSchema().boolean('confirm').choose('cabin', […])`. */
export const bookAnswer = {
  type: 'object' as const,
  properties: { confirm: { type: 'boolean' as const }, cabin: { type: 'string' as const, enum: ['economy', 'business'] } },
  required: ['confirm', 'cabin'],
}

export const lookupInput = {
  type: 'object',
  properties: {
    id: { type: 'string', description: 'The record to read' },
    fields: { type: 'array', items: { type: 'string' }, description: 'Fields to return; all when absent' },
    limit: { type: 'integer', minimum: 1, maximum: 100 },
  },
  required: ['id'],
}

/** The tools a server registers beside `add` and `book`: `toolCount - 2` lookups, each with a description. */
export const lookups = Array.from({ length: toolCount - 2 }, (_, i) => ({
  name: `lookup_${String(i + 1).padStart(2, '0')}`,
  description: `Reads one record of table ${i + 1} by its id, with the fields asked for.`,
}))

/** What a lookup answers, on both servers. */
export const lookupText = (name: string, id: string): string => `${name}: no record ${id}`
