// test:fast: needs nginx
import type { Test } from 'tap'
import { spawn, spawnSync } from 'node:child_process'
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { once } from 'node:events'
import { connect } from 'node:net'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { freePort } from './redis-server.js'

/** The nginx binary, or null when it is not installed. */
export function findNginx (): string | null {
  for (const dir of [...(process.env.PATH ?? '').split(path.delimiter), '/usr/sbin', '/usr/local/sbin', '/usr/local/nginx/sbin']) {
    if (dir === '') continue
    const candidate = path.join(dir, 'nginx')
    if (existsSync(candidate) && spawnSync(candidate, ['-v']).status === 0) return candidate
  }
  return null
}

/** The temp paths of the modules this nginx was built with, inside `dir` (the defaults need root). */
export function tempPaths (nginx: string, dir: string): string {
  const modules = spawnSync(nginx, ['-V'], { encoding: 'utf8' }).stderr
  return ['fastcgi', 'uwsgi', 'scgi']
    .filter((module) => !modules.includes(`--without-http_${module}_module`))
    .map((module) => `  ${module}_temp_path ${dir}/${module}_temp;`).join('\n')
}

function listening (port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1')
    socket.once('connect', () => { socket.destroy(); resolve(true) })
    socket.once('error', () => resolve(false))
  })
}

/**
 * A real nginx on a free loopback port in front of `upstream` (a loopback port), as an operator would put one:
 * buffering off for event streams, and `readTimeout` seconds of silence before it cuts a connection. Stopped when
 * the test ends; its URL.
 */
export async function startNginx (t: Test, nginx: string, upstream: number, readTimeout: number): Promise<string> {
  const dir = mkdtempSync(path.join(tmpdir(), 'mocapi-nginx-'))
  const port = await freePort()
  writeFileSync(path.join(dir, 'nginx.conf'), `
daemon off;
master_process off;
worker_processes 1;
pid ${dir}/nginx.pid;
error_log ${dir}/error.log warn;
events { worker_connections 256; }
http {
  access_log off;
  client_body_temp_path ${dir}/client_body_temp;
  proxy_temp_path ${dir}/proxy_temp;
${tempPaths(nginx, dir)}
  server {
    listen 127.0.0.1:${port};
    location / {
      proxy_pass http://127.0.0.1:${upstream};
      proxy_http_version 1.1;
      proxy_set_header Host 127.0.0.1;
      proxy_buffering off;
      proxy_read_timeout ${readTimeout}s;
    }
  }
}
`)
  const child = spawn(nginx, ['-p', dir, '-c', path.join(dir, 'nginx.conf')], { stdio: 'ignore' })
  const exited = once(child, 'exit')
  t.teardown(async () => {
    if (child.exitCode === null) {
      child.kill('SIGTERM')
      await exited
    }
    rmSync(dir, { recursive: true, force: true })
  })
  for (let attempt = 0; !(await listening(port)); attempt++) {
    if (child.exitCode !== null || attempt > 100) throw new Error(`nginx did not start (exit ${child.exitCode})`)
    await sleep(50)
  }
  return `http://127.0.0.1:${port}/mcp`
}
