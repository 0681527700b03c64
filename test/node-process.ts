import { spawn, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { freePort } from './redis-server.js'

type Test = { teardown: (fn: () => unknown) => void }

/**
 * A node process running `fixture` on this test's loader, on a free `PORT`, with `env` added to this process's own:
 * its URL once it prints "listening", a wait for a line of its stdout, its stdout so far, and a SIGKILL. It is killed
 * when the test ends.
 */
export async function nodeProcess (t: Test, fixture: string, name: string, env: Record<string, string>) {
  const port = await freePort()
  const child: ChildProcess = spawn(process.execPath, [...process.execArgv, fixture], {
    env: { ...process.env, ...env, PORT: String(port), NODE_NAME: name },
    stdio: ['ignore', 'pipe', 'inherit'],
  })
  t.teardown(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGKILL')
    await once(child, 'exit')
  })
  let out = ''
  let closed = false
  const waiting = new Set<() => void>()
  child.stdout!.setEncoding('utf8').on('data', (text: string) => {
    out += text
    for (const check of waiting) check()
  })
  child.on('close', () => {
    closed = true
    for (const check of waiting) check()
  })
  const line = (pattern: RegExp): Promise<RegExpExecArray> => new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`node ${name} did not print ${pattern} within 90 s: ${out}`)), 90_000)
    const check = (): void => {
      const found = pattern.exec(out)
      if (found === null && !closed) return
      clearTimeout(timer)
      waiting.delete(check)
      if (found === null) reject(new Error(`node ${name} exited before it printed ${pattern}: ${out}`))
      else resolve(found)
    }
    waiting.add(check)
    check()
  })
  await line(/listening/)
  return { url: `http://127.0.0.1:${port}/mcp`, line, kill: () => child.kill('SIGKILL'), out: () => out }
}
