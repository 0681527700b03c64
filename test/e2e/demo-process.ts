/** How the end-to-end tests start the demo server (examples/demo-server.ts) in a process of its own. */
// test:fast: needs the demo server, in a process of its own
import { fileURLToPath } from 'node:url'

export const demo = fileURLToPath(new URL('../../examples/demo-server.ts', import.meta.url))
/** The demo runs from source through the TypeScript loader the test runs under. */
export const loader = process.execArgv.filter((arg) => arg.includes('typescript'))

/** The test's environment with `set` added, less what would make tap count the demo's lines as the library's. */
export function demoEnv (set: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...set }
  delete env.NODE_V8_COVERAGE
  delete env.NODE_OPTIONS
  for (const name of Object.keys(env)) if (name.startsWith('_TAPJS_PROCESSINFO')) delete env[name]
  return env
}
