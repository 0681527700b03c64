/**
 * What the benchmarks' server processes share with the benchmarks that fork them: a forked server says `ready`,
 * answers `cpu` with the CPU it has used, and exits cleanly on a signal or when its parent goes (so that
 * `node --cpu-prof` gets to write its profile, and no server outlives its benchmark).
 */
import { fork, type ChildProcess } from 'node:child_process'

export interface Server { child: ChildProcess, port: number }

/** In a server process, once it listens: closes `close` and exits on SIGINT, SIGTERM or the parent's end. */
export function serveForParent (close: () => Promise<unknown>): void {
  const stop = (): void => { close().then(() => process.exit(0), () => process.exit(1)) }
  process.once('SIGINT', stop)
  process.once('SIGTERM', stop)
  process.once('disconnect', stop)
  process.on('message', (message) => { if (message === 'cpu') process.send?.({ cpu: process.cpuUsage() }) })
  process.send?.('ready')
}

/** Forks `script` with `args` and resolves once it says it is ready. */
export async function forkServer (script: string, args: string[], port: number, env: Record<string, string> = {}): Promise<Server> {
  const child = fork(script, args, { env: { ...process.env, ...env }, stdio: 'inherit' })
  await new Promise((resolve, reject) => {
    child.once('message', resolve)
    child.once('exit', (code) => reject(new Error(`the server ${args.join(' ')} exited with ${code}`)))
  })
  return { child, port }
}

/** The CPU time a server process has used so far, in microseconds. */
export async function serverCpu (server: Server): Promise<number> {
  const reply = new Promise<{ cpu: NodeJS.CpuUsage }>((resolve) => server.child.once('message', resolve as (m: unknown) => void))
  server.child.send('cpu')
  const { cpu } = await reply
  return cpu.user + cpu.system
}
