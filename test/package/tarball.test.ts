/**
 * The package as users get it: `npm pack`, installed with fastify into a scratch app outside this
 * repository, then used from ESM and from CommonJS (plain `require`), and compiled from TypeScript
 * (ESM and CommonJS on `nodenext`, CommonJS on `node10` resolution) with this project's typescript.
 *
 * It also links the repository into an app whose Fastify is another version, as README.md#install warns against: the
 * app's TypeScript fails to see mocapi's `app.mcp` until its tsconfig maps `fastify` to the app's copy, as README.md
 * says.
 *
 * Installing needs the npm registry (npm's cache makes it quick): without it the file is skipped,
 * or fails when MOCAPI_REQUIRE_SERVERS=1 (CI).
 */
// test:fast: needs the packed tarball and the npm registry
import t from 'tap'
import { execFile } from 'node:child_process'
import { mkdir, mkdtemp, readFile, readdir, rm, stat, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

t.setTimeout(300_000)

const root = fileURLToPath(new URL('../../', import.meta.url))
const tsc = path.join(root, 'node_modules/typescript/bin/tsc')

// The scratch app runs as a user's would: without tap's loaders and coverage.
const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^(NODE_OPTIONS|NODE_V8_COVERAGE|TAP|_TAPJS)/i.test(name)))

/** Runs a command to its end and returns its stdout; the error carries its output. */
function run (command: string, args: string[], cwd: string, timeout = 120_000): Promise<string> {
  return new Promise((resolve, reject) => {
    execFile(command, args, { cwd, env, timeout, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error === null) resolve(stdout)
      else reject(new Error(`\`${[command, ...args].join(' ')}\` failed in ${cwd}: ${error.message}\n${stdout}${stderr}`))
    })
  })
}

const node = (file: string, cwd: string): Promise<string> => run(process.execPath, [file], cwd, 30_000)

/** Why npm cannot reach its registry, or `undefined` when it can. */
async function registryProblem (): Promise<string | undefined> {
  try {
    await run('npm', ['ping', '--fetch-retries=0', '--fetch-timeout=15000'], os.tmpdir(), 30_000)
    return undefined
  } catch (error) {
    return (error as Error).message.split('\n').find((line) => /npm error (code|errno|network)/.test(line)) ?? 'npm ping failed'
  }
}

async function newest (dir: string): Promise<number> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true })
  const times = await Promise.all(entries.filter((entry) => entry.isFile())
    .map(async (entry) => (await stat(path.join(entry.parentPath, entry.name))).mtimeMs))
  return Math.max(...times)
}

/** Builds dist/ when it is missing or older than lib/; CI has built it already. */
async function ensureBuilt (): Promise<void> {
  const built = await stat(path.join(root, 'dist/lib/index.js')).then((s) => s.mtimeMs, () => 0)
  if (built < await newest(path.join(root, 'lib'))) await run('npm', ['run', 'build'], root)
}

/** A Fastify 5 that is not this repository's, for the app that links the repository. */
const OTHER_FASTIFY = 'fastify@5.6.0'

const installed = (name: string): Promise<string> =>
  readFile(path.join(root, 'node_modules', name, 'package.json'), 'utf8').then((text) => `${name}@${JSON.parse(text).version}`)

// What every app below prints: one tool that asks once, called through mocapi/testing.
const expected = { content: [{ type: 'text', text: 'Booked Lisbon' }], roundTrips: 2, redisBus: 'function' }
const body = `
  const app = Fastify()
  await app.register(mocapi, { requestState: { keys: [randomBytes(32).toString('base64')] } })
  app.mcp.tool({ name: 'book', inputSchema: { type: 'object', properties: { to: { type: 'string' } }, required: ['to'] } }, async (args, ctx) => {
    const answer = await ctx.elicit('Fly to ' + args.to + '?', requestedSchema().boolean('confirm'))
    return answer.action === 'accept' && answer.content.confirm ? 'Booked ' + args.to : 'Nothing booked'
  })
  const { result, roundTrips } = await createTestClient(app).callTool('book', { to: 'Lisbon' }, { 'elicit-1': accept({ confirm: true }) })
  await app.close()
  console.log(JSON.stringify({ content: result.content, roundTrips, redisBus: typeof RedisBus }))
`
const imports = `import Fastify from 'fastify'
import { randomBytes } from 'node:crypto'
import mocapi, { requestedSchema } from 'mocapi'
import { createTestClient, accept } from 'mocapi/testing'
import { RedisBus } from 'mocapi/redis'
`
const apps: Record<string, string> = {
  'package.json': JSON.stringify({ private: true }),
  'app.mjs': `${imports}${body}`,
  'app.cjs': `'use strict'
const Fastify = require('fastify')
const { randomBytes } = require('node:crypto')
const mocapi = require('mocapi')   // app.register() takes the module's default export
const { requestedSchema } = require('mocapi')
const { createTestClient, accept } = require('mocapi/testing')
const { RedisBus } = require('mocapi/redis')
async function main () {${body}}
main().catch((error) => { console.error(error); process.exitCode = 1 })
`,
  'typed-esm.mts': `${imports}${body}`,
  'typed-cjs.cts': `${imports}async function main (): Promise<void> {${body}}
main().catch((error: unknown) => { console.error(error); process.exitCode = 1 })
`,
  'typed-node10.ts': `${imports}async function main (): Promise<void> {${body}}
main().catch((error: unknown) => { console.error(error); process.exitCode = 1 })
`,
  // nodenext without skipLibCheck: the shipped declarations must compile in a strict app.
  'tsconfig.json': JSON.stringify({
    compilerOptions: { strict: true, module: 'nodenext', target: 'es2022', types: ['node'] },
    files: ['typed-esm.mts', 'typed-cjs.cts'],
  }),
  // The default of `tsc --init` before TypeScript 5.9, still common in CommonJS projects.
  'tsconfig.node10.json': JSON.stringify({
    compilerOptions: { strict: true, module: 'commonjs', moduleResolution: 'node10', target: 'es2022', types: ['node'], skipLibCheck: true },
    files: ['typed-node10.ts'],
  }),
}

const problem = await registryProblem()
if (problem !== undefined) {
  if (process.env.MOCAPI_REQUIRE_SERVERS === '1') t.fail(`npm cannot reach its registry (${problem}), and MOCAPI_REQUIRE_SERVERS=1 requires the packed-tarball test to run`)
  else t.plan(0, `npm cannot reach its registry (${problem}): the packed-tarball test installs fastify from it (set MOCAPI_REQUIRE_SERVERS=1 to fail instead)`)
} else {
  await tarballTests()
}

async function tarballTests (): Promise<void> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'mocapi-tarball-'))
  t.teardown(() => rm(dir, { recursive: true, force: true }))
  const app = path.join(dir, 'app')

  // dist/ is packed as built (prepack would rebuild it in place, under the other tests' feet).
  await ensureBuilt()
  const [packed] = JSON.parse(await run('npm', ['pack', '--ignore-scripts', '--json', '--pack-destination', dir], root))
  const files: string[] = packed.files.map((file: { path: string }) => file.path)

  await mkdir(app)
  await Promise.all(Object.entries(apps).map(([name, text]) => writeFile(path.join(app, name), text)))
  const peers = await Promise.all(['fastify', 'redis', '@types/node'].map(installed))
  await run('npm', ['install', path.join(dir, packed.filename), ...peers, '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], app)

  t.test('the tarball carries the build, the command, the docs and the license, and nothing else', async (t) => {
    for (const file of ['LICENSE', 'README.md', 'CHANGELOG.md', 'package.json', 'bin/mocapi.js',
      'dist/lib/index.js', 'dist/lib/index.d.ts', 'dist/lib/testing/index.js', 'dist/lib/redis/index.js', 'dist/cli/main.js']) {
      t.ok(files.includes(file), file)
    }
    t.same(files.filter((file) => !/^(dist\/(lib|cli)|bin)\//.test(file)).sort(),
      ['CHANGELOG.md', 'LICENSE', 'README.md', 'package.json'])
    const manifest = JSON.parse(await readFile(path.join(app, 'node_modules/mocapi/package.json'), 'utf8'))
    t.equal(manifest.repository.url, 'git+https://github.com/mocapi/mocapi.git')
    t.equal(manifest.license, 'MIT')
  })

  t.test('every source map carries the sources it names', async (t) => {
    const maps = files.filter((file) => file.endsWith('.js.map'))
    t.ok(maps.length > 10, `${maps.length} source maps`)
    const incomplete: string[] = []
    for (const file of maps) {
      const map = JSON.parse(await readFile(path.join(app, 'node_modules/mocapi', file), 'utf8'))
      const missing = map.sources.filter((source: string, i: number) => typeof map.sourcesContent?.[i] !== 'string' &&
        !files.includes(path.posix.join(path.posix.dirname(file), source)))
      if (missing.length > 0) incomplete.push(`${file}: ${missing.join(', ')}`)
    }
    t.same(incomplete, [])
  })

  t.test('an ESM app imports the package and calls a tool', async (t) => {
    t.same(JSON.parse(await node('app.mjs', app)), expected)
  })

  t.test('a CommonJS app requires the package and calls a tool', async (t) => {
    t.same(JSON.parse(await node('app.cjs', app)), expected)
  })

  t.test('TypeScript apps compile against the package on nodenext, as ESM and as CommonJS, and run', async (t) => {
    await run(process.execPath, [tsc, '-p', 'tsconfig.json'], app)
    t.same(JSON.parse(await node('typed-esm.mjs', app)), expected, 'ESM')
    t.same(JSON.parse(await node('typed-cjs.cjs', app)), expected, 'CommonJS')
  })

  t.test('a TypeScript CommonJS app on node10 resolution compiles, subpaths included, and runs', async (t) => {
    await run(process.execPath, [tsc, '-p', 'tsconfig.node10.json'], app)
    t.same(JSON.parse(await node('typed-node10.js', app)), expected)
  })

  t.test('a linked clone: another Fastify in the app breaks its types, and README.md\'s paths mapping mends them', async (t) => {
    const linked = path.join(dir, 'linked')
    await mkdir(linked)
    await writeFile(path.join(linked, 'package.json'), JSON.stringify({ private: true }))
    await writeFile(path.join(linked, 'app.mts'), `${imports}${body}`)
    // Not this repository's Fastify: another version of Fastify 5. Scripts off: linking must not rebuild dist/ here.
    await run('npm', ['install', `file:${root}`, OTHER_FASTIFY, await installed('@types/node'), '--ignore-scripts',
      '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], linked)
    const compilerOptions = { strict: true, module: 'nodenext', target: 'es2022', types: ['node'] }
    await writeFile(path.join(linked, 'tsconfig.json'), JSON.stringify({ compilerOptions, files: ['app.mts'] }))
    const broken = await run(process.execPath, [tsc, '-p', 'tsconfig.json'], linked).then(() => '', (error: Error) => error.message)
    t.match(broken, /No overload matches this call/, 'app.register(mocapi) does not type-check')
    t.match(broken, /Property 'mcp' does not exist/, 'app.mcp is unknown')
    const page = await readFile(path.join(root, 'README.md'), 'utf8')
    const mapping = JSON.parse(/^```json\n(\{ "compilerOptions": \{ "paths": [^\n]*)\n```$/m.exec(page)![1])
    await writeFile(path.join(linked, 'tsconfig.json'), JSON.stringify({ compilerOptions: { ...compilerOptions, ...mapping.compilerOptions }, files: ['app.mts'] }))
    await run(process.execPath, [tsc, '-p', 'tsconfig.json'], linked)
    t.same(JSON.parse(await node('app.mjs', linked)), expected)
  })

  t.test('the mocapi command runs from the installed package', async (t) => {
    t.match(await run(path.join(app, 'node_modules/.bin/mocapi'), ['--help'], app), /^Usage:\n {2}mocapi call <url> <tool>/)
  })
}
