#!/usr/bin/env node
/**
 * `npm run test:fast`: every test file that starts nothing outside its own process (no redis-server, nginx,
 * Chromium, Python, demo process or packed tarball), compiled once and run with plain node.
 *
 * - Which files: a test file is left out when it, or a test module it imports, has a line
 *   `// test:fast: needs <what>` or reads MOCAPI_REQUIRE_SERVERS (npm test runs it). `--list` shows the split.
 * - Compile: the working tree as git sees it is mirrored into .tap/fast/, its TypeScript transpiled by esbuild
 *   (like tap's loader, without type checking: `npm run typecheck` does that) and every other file copied, so a
 *   test reading `../package.json` or `../../docs/x.md` from its own URL finds it. Each test file is then bundled
 *   with what it imports into .tap/fast-bundled/ (shared code in chunks; every module keeps its own
 *   import.meta.url), which halves the startup of loading hundreds of modules one by one.
 * - Run: `--jobs` files at a time (one per core by default), slowest of the last run first, under .taprc's
 *   timeout. A file that fails bundled runs again from .tap/fast/ with source maps, and that run decides: its
 *   output is printed whole, with stack frames in the TypeScript. `--no-bundle` runs every file that way.
 * - Each file prints ok or FAIL with its time; the run ends "N files passed, N failed", non-zero on a failure.
 *
 * Usage: node scripts/test-fast.mjs [--list] [--jobs=N] [--no-bundle] [file or folder ...]
 */
import { build } from 'esbuild'
import { execFileSync, spawn } from 'node:child_process'
import { copyFileSync, existsSync, lstatSync, mkdirSync, readFileSync, readdirSync, rmSync, symlinkSync, writeFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { availableParallelism } from 'node:os'
import path from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const OUT = path.join(ROOT, '.tap', 'fast')
const BUNDLED = path.join(ROOT, '.tap', 'fast-bundled')
const TIMINGS = path.join(ROOT, '.tap', 'fast-timings.json')
const MARKER = /^\s*\/\/ test:fast: needs (.+)$/m
const USAGE = 'usage: node scripts/test-fast.mjs [--list] [--jobs=N] [--no-bundle] [file or folder ...]'

const started = performance.now()
const args = process.argv.slice(2)
const list = args.includes('--list')
let bundle = !args.includes('--no-bundle')
const jobsArg = args.find((arg) => arg.startsWith('--jobs='))
const jobs = jobsArg === undefined ? availableParallelism() : Number(jobsArg.slice('--jobs='.length))
const unknown = args.find((arg) => arg.startsWith('--') && !['--list', '--no-bundle', jobsArg].includes(arg))
if (unknown !== undefined || !(Number.isInteger(jobs) && jobs > 0)) {
  console.error(`test:fast: ${unknown === undefined ? '--jobs takes a positive integer' : `unknown option ${unknown}`}\n${USAGE}`)
  process.exit(2)
}
const wanted = args.filter((arg) => !arg.startsWith('--')).map((arg) => path.relative(ROOT, path.resolve(arg)))

/** Every file under `dir` whose name passes `keep`, relative to the root. */
function filesUnder (dir, keep) {
  return readdirSync(path.join(ROOT, dir), { recursive: true, withFileTypes: true })
    .filter((entry) => entry.isFile() && keep(entry.name))
    .map((entry) => path.relative(ROOT, path.join(entry.parentPath ?? entry.path, entry.name))).sort()
}

/** The repository files a module imports by a relative specifier (`./x.js` stands for `./x.ts`). */
function localImports (file, text) {
  const found = []
  for (const [, specifier] of text.matchAll(/(?:\bfrom|\bimport)\s*\(?\s*['"](\.{1,2}\/[^'"]+)['"]/g)) {
    const target = path.join(path.dirname(file), specifier)
    const ts = target.replace(/\.js$/, '.ts')
    if (existsSync(path.join(ROOT, ts))) found.push(ts)
    else if (existsSync(path.join(ROOT, target))) found.push(target)
  }
  return found
}

const needsCache = new Map()
/** What a test module needs that test:fast does not start, and which module says so; undefined when nothing. */
function needs (file, seen = new Set()) {
  if (needsCache.has(file)) return needsCache.get(file)
  if (seen.has(file) || !file.startsWith('test/')) return undefined
  seen.add(file)
  const text = readFileSync(path.join(ROOT, file), 'utf8')
  const marker = MARKER.exec(text)
  let found = marker === null ? undefined : { what: marker[1], where: file }
  for (const imported of localImports(file, text)) found ??= needs(imported, seen)
  if (found === undefined && text.includes('MOCAPI_REQUIRE_SERVERS')) found = { what: 'a server: it reads MOCAPI_REQUIRE_SERVERS', where: file }
  needsCache.set(file, found)
  return found
}

const all = filesUnder('test', (name) => name.endsWith('.test.ts'))
const selected = wanted.length === 0 ? all : all.filter((file) => wanted.some((w) => file === w || file.startsWith(w.endsWith('/') ? w : `${w}/`)))
const fast = []
const left = []
for (const file of selected) {
  const need = needs(file)
  if (need === undefined) fast.push(file)
  else left.push(`${file}: needs ${need.what}${need.where === file ? '' : ` (through ${need.where})`}`)
}

if (list) {
  console.log(`test:fast runs ${fast.length} files:\n  ${fast.join('\n  ')}`)
  console.log(`and leaves out ${left.length}, which npm test runs:\n  ${left.join('\n  ')}`)
  process.exit(0)
}
if (wanted.length > 0 && left.length > 0) console.log(`left out, as they need servers (npm test runs them):\n  ${left.join('\n  ')}\n`)
if (fast.length === 0) {
  console.error(`test:fast: no test file to run${wanted.length > 0 ? ` under ${wanted.join(', ')}` : ''}`)
  process.exit(1)
}

// Compile: the working tree as git sees it (tracked files and new ones it does not ignore), its TypeScript
// transpiled and the rest copied, so paths a test builds from its own URL stay true.
rmSync(OUT, { recursive: true, force: true })
const tree = execFileSync('git', ['ls-files', '-z', '--cached', '--others', '--exclude-standard'], { cwd: ROOT, encoding: 'utf8' })
  .split('\0').filter((file) => file !== '' && existsSync(path.join(ROOT, file)) && lstatSync(path.join(ROOT, file)).isFile())
const typescript = new Set(tree.filter((file) => file.endsWith('.ts') && !file.endsWith('.d.ts')))
await build({
  entryPoints: [...typescript].map((file) => path.join(ROOT, file)),
  outdir: OUT,
  outbase: ROOT,
  format: 'esm',
  platform: 'node',
  target: 'node20',
  sourcemap: true,
  logLevel: 'error',
})
for (const file of tree.filter((file) => !typescript.has(file))) {
  mkdirSync(path.dirname(path.join(OUT, file)), { recursive: true })
  copyFileSync(path.join(ROOT, file), path.join(OUT, file))
}
symlinkSync(path.join(ROOT, 'node_modules'), path.join(OUT, 'node_modules'))
const compiledFile = (file) => path.join(OUT, file.replace(/\.ts$/, '.js'))

// Bundle: no source maps (parsing them would cost what bundling saves); a failure runs again unbundled. When a
// file cannot be bundled (an import that does not resolve), every file runs unbundled and that one fails alone.
rmSync(BUNDLED, { recursive: true, force: true })
if (bundle) {
  await build({
    entryPoints: fast.map(compiledFile),
    outdir: BUNDLED,
    outbase: OUT,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    logLevel: 'silent',
    banner: { js: "import { createRequire as __createRequire } from 'node:module'; const require = __createRequire(import.meta.url);" },
    plugins: [{
      name: 'own-import-meta-url',
      setup (build) {
        build.onLoad({ filter: /\.m?js$/ }, async ({ path: file }) => ({
          contents: (await readFile(file, 'utf8')).replaceAll('import.meta.url', JSON.stringify(pathToFileURL(file).href)),
          loader: 'js',
          resolveDir: path.dirname(file),
        }))
      },
    }],
  }).catch((error) => {
    const where = ({ text, location }) => `${location === null ? '' : `${path.relative(OUT, location.file)}:${location.line}: `}${text}`
    console.log(`test:fast: bundling failed, so every file runs unbundled:\n  ${error.errors?.map(where).join('\n  ') ?? error}\n`)
    bundle = false
  })
}
const compiled = performance.now()

// Run: the slowest files of the last run first, so that the queues end together.
let last = {}
try { last = JSON.parse(readFileSync(TIMINGS, 'utf8')) } catch {}
const queue = [...fast].sort((a, b) => (last[b] ?? Infinity) - (last[a] ?? Infinity) || a.localeCompare(b))
const results = []
// Run by node, a test file times out after TAP_TIMEOUT seconds (30 by default); tap's runner takes .taprc's.
const timeout = /^timeout:\s*(\d+)/m.exec(readFileSync(path.join(ROOT, '.taprc'), 'utf8'))?.[1]

/** Runs one test file: its exit code, its output, its time and its counts. */
function runFile (file, bundled) {
  return new Promise((resolve) => {
    const t0 = performance.now()
    const argv = bundled ? [path.join(BUNDLED, file.replace(/\.ts$/, '.js'))] : ['--enable-source-maps', compiledFile(file)]
    const child = spawn(process.execPath, argv, {
      cwd: ROOT,
      env: { ...(timeout === undefined ? {} : { TAP_TIMEOUT: timeout }), ...process.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    let output = ''
    child.stdout.on('data', (chunk) => { output += chunk })
    child.stderr.on('data', (chunk) => { output += chunk })
    child.on('close', (code, signal) => resolve({
      passed: code === 0,
      ending: signal === null ? `exit code ${code}` : `killed by ${signal}`,
      output: output.trimEnd(),
      seconds: (performance.now() - t0) / 1000,
      tests: output.match(/^(?:not )?ok \d+ - /gm)?.length ?? 0,
      asserts: Number(/^# \{ total: (\d+)/m.exec(output)?.[1] ?? 0),
    }))
  })
}

async function run (file) {
  let result = await runFile(file, bundle)
  let note = ''
  if (!result.passed && bundle) {
    const failures = result.output.split('\n').filter((line) => /^\s*not ok /.test(line)).join('\n')
    result = await runFile(file, false)
    note = result.passed
      ? ` (failed bundled, then passed unbundled: a flaky test, or a difference of the bundle)\n${failures}`
      : ' (failed bundled and unbundled: the output below is the unbundled run)'
  }
  results.push({ file, ...result, rerun: note !== '' })
  console.log(`${result.passed ? 'ok  ' : 'FAIL'} ${result.seconds.toFixed(1).padStart(5)}s  ${file} (${result.tests} tests, ${result.asserts} asserts)${note}`)
  if (!result.passed) console.log(`${result.output}\n${result.ending}: ${file}\n`)
}

async function worker () {
  for (let file = queue.shift(); file !== undefined; file = queue.shift()) await run(file)
}
await Promise.all(Array.from({ length: Math.min(jobs, fast.length) }, worker))

const failed = results.filter((result) => !result.passed)
const rerun = results.filter((result) => result.passed && result.rerun)
const tests = results.reduce((sum, result) => sum + result.tests, 0)
const asserts = results.reduce((sum, result) => sum + result.asserts, 0)
writeFileSync(TIMINGS, JSON.stringify({ ...last, ...Object.fromEntries(results.map((result) => [result.file, Number(result.seconds.toFixed(2))])) }, null, 2) + '\n')
console.log(`\ncompiled in ${((compiled - started) / 1000).toFixed(1)}s, ran in ${((performance.now() - compiled) / 1000).toFixed(1)}s, ` +
  `${jobs} at a time${bundle ? '' : ', unbundled'}: ${tests} tests, ${asserts} asserts; ${left.length} files that need servers left out (--list names them)`)
if (rerun.length > 0) console.log(`passed only when run again unbundled: ${rerun.map((result) => result.file).join(', ')}`)
if (failed.length > 0) console.log(`failed: ${failed.map((result) => result.file).join(', ')}`)
console.log(`${results.length - failed.length} files passed, ${failed.length} failed`)
process.exitCode = failed.length > 0 ? 1 : 0
