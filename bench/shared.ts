/** What the benches that pair scenarios in rounds share: medians, alternating rounds, a throwaway redis-server. */
import { spawn, spawnSync, type ChildProcess } from 'node:child_process'
import { once } from 'node:events'
import net from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'

export const median = (values: number[]): number => {
  const sorted = [...values].sort((a, b) => a - b)
  const mid = sorted.length >> 1
  return sorted.length % 2 === 1 ? sorted[mid] : (sorted[mid - 1] + sorted[mid]) / 2
}

/** Runs `scenarios` in `rounds` alternating rounds after a discarded warm-up of each; the runs of each. */
export async function alternate<R> (scenarios: Array<() => Promise<R>>, rounds: number): Promise<R[][]> {
  for (const scenario of scenarios) await scenario()
  const runs: R[][] = scenarios.map(() => [])
  for (let round = 0; round < rounds; round++) {
    for (const [i, scenario] of scenarios.entries()) runs[i].push(await scenario())
  }
  return runs
}

export async function freePort (): Promise<number> {
  const server = net.createServer().listen(0, '127.0.0.1')
  await once(server, 'listening')
  const { port } = server.address() as net.AddressInfo
  server.close()
  await once(server, 'close')
  return port
}

function answersPing (port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = net.connect(port, '127.0.0.1')
    socket.once('connect', () => socket.write('PING\r\n'))
    socket.once('data', (data) => { socket.destroy(); resolve(data.toString().startsWith('+PONG')) })
    socket.once('error', () => resolve(false))
  })
}

/** A Redis to use: REDIS_URL, or a throwaway redis-server; undefined when neither is there. */
export async function redis (): Promise<{ url: string, child?: ChildProcess } | undefined> {
  if (process.env.REDIS_URL !== undefined) return { url: process.env.REDIS_URL }
  if (spawnSync('redis-server', ['--version']).status !== 0) return undefined
  const port = await freePort()
  const child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: 'ignore' })
  for (let attempt = 0; !(await answersPing(port)); attempt++) {
    if (attempt === 50) throw new Error(`redis-server did not answer on port ${port}`)
    await sleep(100)
  }
  return { url: `redis://127.0.0.1:${port}`, child }
}
