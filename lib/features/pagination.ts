import { invalidParams } from '../errors.js'

function cursorAt (offset: number): string {
  return Buffer.from(`o:${offset}`).toString('base64url')
}

export function paginate<T> (
  items: readonly T[],
  cursor: unknown,
  pageSize: number
): { page: T[], nextCursor?: string } {
  let offset = 0
  if (cursor !== undefined && cursor !== '') {
    const match = typeof cursor === 'string' && /^[A-Za-z0-9_-]+$/.test(cursor)
      ? /^o:(\d{1,9})$/.exec(Buffer.from(cursor, 'base64url').toString('latin1'))
      : null
    offset = match === null ? NaN : Number(match[1])
    if (!(offset > 0 && offset < items.length)) throw invalidParams('Invalid cursor')
  }
  const end = offset + pageSize
  const page = items.slice(offset, end)
  return end < items.length ? { page, nextCursor: cursorAt(end) } : { page }
}
