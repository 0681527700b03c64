import { readFileSync } from 'node:fs'

/** Looks beside `from`'s folder and one above: `lib/` runs from source, `dist/lib/` from an install. */
export function readVersion (from: string | URL = import.meta.url): string {
  for (const relative of ['../package.json', '../../package.json']) {
    try {
      const pkg = JSON.parse(readFileSync(new URL(relative, from), 'utf8')) as { name?: unknown, version?: unknown }
      if (pkg.name === 'mocapi' && typeof pkg.version === 'string') return pkg.version
    } catch {}
  }
  return '0.0.0'
}

export const MOCAPI_VERSION = readVersion()
