/**
 * The Python MCP client (`mcp` 2.3.0) against mocapi over real HTTP, in its legacy mode (a 2025-era
 * session) and its default `auto` mode (server/discover, then 2026-07-28). The client is installed
 * with pip into `.python-mcp/` (git-ignored, kept between runs); where no Python, venv or package
 * index can provide it, the test is skipped and says why.
 */
// test:fast: needs Python and the mcp package from pip
import t from 'tap'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import type { AddressInfo } from 'node:net'
import { fileURLToPath } from 'node:url'
import { clientTools } from './client-tools.js'
import { build } from '../helpers.js'

const ROOT = fileURLToPath(new URL('../../', import.meta.url))
const VENV = `${ROOT}.python-mcp`
const PYTHON = `${VENV}/bin/python`
const SCRIPT = fileURLToPath(new URL('../fixtures/python_client.py', import.meta.url))
const MCP = '2.3.0'

/** Installing takes a while on a busy machine; the client itself answers in seconds. */
t.setTimeout(300_000)

/** Runs a command; resolves with its output, or with why it failed. */
function run (command: string, args: string[], timeout: number): Promise<{ ok: boolean, out: string }> {
  return new Promise((resolve) => {
    execFile(command, args, { cwd: ROOT, timeout, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ ok: error === null, out: error === null ? stdout : `${error.message}\n${stderr}` })
    })
  })
}

/** The line of a command's output that says why it failed: what a skip reports. */
function lastWords (out: string): string {
  // eslint-disable-next-line no-control-regex
  const lines = out.replace(/\x1b\[[0-9;]*m/g, '').split('\n').map((line) => line.trim()).filter((line) => line !== '' && !line.startsWith('WARNING'))
  return (lines.find((line) => line.startsWith('ERROR')) ?? lines.at(-1) ?? 'no output').slice(0, 300)
}

/** The venv's Python with mcp 2.3.0, installed if need be; or why it cannot be had. */
async function pythonClient (): Promise<{ python: string } | { skip: string }> {
  const check = ['-c', `import importlib.metadata as m, mcp; assert m.version('mcp') == '${MCP}'`]
  if (existsSync(PYTHON) && (await run(PYTHON, check, 30_000)).ok) return { python: PYTHON }
  const venv = await run('python3', ['-m', 'venv', VENV], 60_000)
  if (!venv.ok) return { skip: `python3 -m venv failed: ${lastWords(venv.out)}` }
  // No retries: an index that cannot be reached (PyPI, on a machine without it) fails fast, and
  // the indexes pip is configured with besides (a local mirror) are tried.
  const pip = await run(`${VENV}/bin/pip`, ['install', '--quiet', '--disable-pip-version-check', '--retries', '0', '--timeout', '20', `mcp==${MCP}`], 240_000)
  if (!pip.ok) return { skip: `pip could not install mcp==${MCP} (no package index or mirror reachable): ${lastWords(pip.out)}` }
  return (await run(PYTHON, check, 30_000)).ok ? { python: PYTHON } : { skip: `mcp==${MCP} installed but does not import` }
}

const client = await pythonClient()

t.test('the Python client, in its legacy mode and in auto mode', { skip: 'skip' in client ? client.skip : false }, async (t) => {
  const app = await build(t, {}, (app) => {
    clientTools(app)
  })
  const methods: string[] = []
  app.addHook('onRequest', async (request) => { methods.push(request.method) })
  await app.listen({ host: '127.0.0.1', port: 0 })
  const url = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}/mcp`
  for (const [mode, version] of [['legacy', '2025-11-25'], ['auto', '2026-07-28']]) {
    methods.length = 0
    const { ok, out } = await run((client as { python: string }).python, [SCRIPT, url, mode], 60_000)
    t.ok(ok, `${mode}: the client ran`, { diagnostic: !ok, out })
    const seen = JSON.parse(out.trim().split('\n').at(-1) as string)
    t.equal(seen.version, version, `${mode}: speaks ${version}`)
    t.same(seen.tools, ['assistant', 'echo', 'greet', 'trip'])
    t.equal(seen.echo, 'hi')
    t.same(seen.greet, ['Hello, Ada', 'No name (decline)', 'No name (cancel)'])
    t.equal(seen.trip, '3 nights in Lisbon')
    t.equal(seen.assistant, 'Paris; file:///home/ada')
    t.same(seen.asked.filter((one: { method: string }) => one.method === 'elicitation/create').map((one: { message: string }) => one.message),
      ['Your name?', 'Your name?', 'Your name?', 'Where to?', 'How many nights in Lisbon?'])
    t.same(seen.asked.slice(-2).map((one: { method: string }) => one.method).sort(), ['roots/list', 'sampling/createMessage'])
    if (mode === 'legacy') t.ok(methods.includes('GET') && methods.includes('DELETE'), 'legacy: its GET stream and its DELETE at the end reached the server')
    else t.notOk(methods.includes('GET'), 'auto: no session, no GET stream')
  }
})
