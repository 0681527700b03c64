// test:fast: needs redis-server
import type { Test } from 'tap'
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import { connect, createServer } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

/** Why tests needing a real redis-server cannot run here, or `undefined` when they can. */
export function missingRedis (): string | undefined {
  const probe = spawnSync('redis-server', ['--version'], { encoding: 'utf8' })
  if (probe.error !== undefined) return `redis-server is not installed (${(probe.error as NodeJS.ErrnoException).code})`
  return undefined
}

/** A loopback port nothing listens on now. */
export async function freePort (): Promise<number> {
  const server = createServer()
  server.listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as { port: number }
  server.close()
  await once(server, 'close')
  return port
}

function answersPing (port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.setTimeout(500)
    socket.once('connect', () => socket.write('PING\r\n'))
    socket.once('data', (data) => { socket.destroy(); resolve(data.toString().startsWith('+PONG')) })
    socket.once('timeout', () => { socket.destroy(); resolve(false) })
    socket.once('error', () => resolve(false))
  })
}

export interface RedisServer {
  url: string
  port: number
  stop: () => Promise<void>
  /** SIGSTOP: the server keeps its connections open and answers nothing, as a frozen host does. */
  freeze: () => void
  /** SIGCONT: it answers again, what it was sent meanwhile included. */
  thaw: () => void
}

/** Starts a throwaway redis-server on a free loopback port (`port` reuses one), stopped when the test ends. */
export async function startRedis (t: Test, port?: number): Promise<RedisServer> {
  port ??= await freePort()
  const child: ChildProcess = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
  const exited = once(child, 'exit')
  const stop = async (): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return
    child.kill('SIGCONT')
    child.kill('SIGTERM')
    await exited
  }
  t.teardown(stop)
  for (let attempt = 0; !(await answersPing(port)); attempt++) {
    if (child.exitCode !== null) throw new Error(`redis-server exited with code ${child.exitCode} before accepting connections on port ${port}`)
    if (attempt === 100) throw new Error(`redis-server did not accept connections on port ${port} within 5s`)
    await sleep(50)
  }
  return { url: `redis://127.0.0.1:${port}`, port, stop, freeze: () => child.kill('SIGSTOP'), thaw: () => child.kill('SIGCONT') }
}

/** Runs `tests` when a redis-server can be started; skips with the reason otherwise, or fails when CI requires it. */
export function withRedis (t: Test, name: string, tests: (t: Test) => Promise<void>): void {
  const missing = missingRedis()
  if (missing !== undefined && process.env.MOCAPI_REQUIRE_SERVERS === '1') {
    t.fail(`MOCAPI_REQUIRE_SERVERS=1 but ${missing}: install Debian's redis-server package`)
  } else t.test(name, { skip: missing }, tests)
}
