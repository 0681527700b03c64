#!/usr/bin/env node
/**
 * Docs that compile: type-checks every TypeScript block (```ts, ```typescript) of README.md and
 * docs/*.md against the built package, and runs the blocks marked to run. The markers, the
 * fragment prelude and the environment of runs are described in docs/contributing.md.
 *
 *   node scripts/check-docs.mjs [--no-run] [--timeout=<ms>] [file.md ...]
 *
 * Each block is its own program, as a file of a user's app would be: under `strict` and
 * `exactOptionalPropertyTypes` (the strictest app a reader may copy it into), `nodenext`, in a
 * scratch folder inside this package (.docs-check/), so `mocapi`, `mocapi/testing` and
 * `mocapi/redis` resolve through the package's own `exports` to dist/, as they do for users.
 */
import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import path from 'node:path'
import { fileURLToPath } from 'node:url'
import ts from 'typescript'

const PROJECT = fileURLToPath(new URL('..', import.meta.url))
const SCRATCH = '.docs-check'
const TYPESCRIPT = new Set(['ts', 'typescript'])
const MARKER = /^\s*<!--\s*docs-check:\s*(.*?)\s*-->\s*$/
const FENCE = /^( *)(`{3,}|~{3,})\s*(.*)$/

/**
 * What a fragment may use without declaring it: the names of a handler or an app, and a few
 * stand-ins for the reader's own code. Each is declared only in the fragments that mention it.
 */
const NAMES = [
  ['app', '$fastify.FastifyInstance', ['fastify', 'mocapi'], 'a Fastify app with mocapi registered'],
  ['ctx', '$mocapi.McpContext', ['mocapi'], 'the context a handler gets'],
  ['args', 'Record<string, any>', [], "a tool handler's arguments"],
  ['mocapi', 'typeof $mocapi.default', ['mocapi'], "mocapi's default export"],
  ['requestedSchema', 'typeof $mocapi.requestedSchema', ['mocapi'], "mocapi's `requestedSchema`"],
  ['Fastify', 'typeof $fastify.default', ['fastify'], "fastify's default export"],
  ['fastifyJwt', 'typeof $jwt.default', ['@fastify/jwt'], "@fastify/jwt's default export"],
  ['buildApp', '() => Promise<$fastify.FastifyInstance>', ['fastify', 'mocapi'], "the reader's app factory"],
  ['refundHandler', '$mocapi.ToolHandler', ['mocapi'], "a tool handler of the reader's"],
  ['payments', '{ charge (...args: unknown[]): Promise<unknown> }', [], "the reader's payment service"],
  ['card', 'string', [], 'a payment card'],
  ['amount', 'number', [], 'an amount'],
  ['text', 'string', [], 'a text'],
]
export const PRELUDE = [
  ...NAMES.map(([name, type, from, about]) => ({ name, from, declaration: `declare const ${name}: ${type}`, about })),
  {
    pattern: /\brequest\.user\b/,
    from: ['@fastify/jwt'],
    declaration: "declare module '@fastify/jwt' { interface FastifyJWT { user: { sub: string, role?: string } } }",
    about: '`request.user`: the app verifies tokens with @fastify/jwt, and they carry `sub` and maybe `role`',
  },
]
const ALIASES = { fastify: '$fastify', mocapi: '$mocapi', '@fastify/jwt': '$jwt' }

/** The environment of a block that runs, besides the checker's own. */
export function runEnvironment () {
  const key = () => randomBytes(32).toString('base64')
  return { JWT_SECRET: randomBytes(32).toString('hex'), KEY_NEW: key(), KEY_OLD: key() }
}

/** A block's marker comment: `fragment`, `run` or `skip <reason>`. */
function parseMarker (text) {
  const [, mode, reason] = /^(\S*)\s*(.*)$/.exec(text)
  if (mode === 'skip') return reason === '' ? { problem: 'a skipped block needs a reason: <!-- docs-check: skip <why> -->' } : { mode, reason }
  if ((mode === 'fragment' || mode === 'run') && reason === '') return { mode }
  return { problem: `unknown docs-check marker "${text}": expected fragment, run or skip <reason>` }
}

/**
 * The TypeScript blocks of a Markdown text, each with its mode (`module` unless marked), the line
 * of its opening fence and its code; and the problems with markers.
 */
export function extractBlocks (text, file) {
  const lines = text.split(/\r?\n/)
  const blocks = []
  const problems = []
  let marker
  let fence
  lines.forEach((line, i) => {
    if (fence !== undefined) {
      const close = FENCE.exec(line)
      if (close !== null && close[2][0] === fence.char && close[2].length >= fence.length && close[3].trim() === '') {
        if (fence.block !== undefined) blocks.push({ ...fence.block, code: fence.code.join('\n') })
        fence = undefined
      } else {
        fence.code.push(line.slice(Math.min(fence.indent, line.length - line.trimStart().length)))
      }
      return
    }
    const comment = MARKER.exec(line)
    const open = FENCE.exec(line)
    if (comment !== null) {
      if (marker !== undefined) problems.push(`${file}:${marker.line}: docs-check marker not followed by a code block`)
      const parsed = parseMarker(comment[1])
      if (parsed.problem !== undefined) problems.push(`${file}:${i + 1}: ${parsed.problem}`)
      else marker = { ...parsed, line: i + 1 }
    } else if (open !== null) {
      const lang = open[3].split(/\s+/)[0].toLowerCase()
      let block
      if (TYPESCRIPT.has(lang)) block = { file, line: i + 1, mode: marker?.mode ?? 'module', reason: marker?.reason }
      else if (marker !== undefined) problems.push(`${file}:${marker.line}: docs-check marker before a block that is not TypeScript`)
      fence = { char: open[2][0], length: open[2].length, indent: open[1].length, code: [], block }
      marker = undefined
    } else if (marker !== undefined && line.trim() !== '') {
      problems.push(`${file}:${marker.line}: docs-check marker not followed by a code block`)
      marker = undefined
    }
  })
  if (marker !== undefined) problems.push(`${file}:${marker.line}: docs-check marker not followed by a code block`)
  if (fence !== undefined) problems.push(`${file}: a code block is not closed`)
  return { blocks, problems }
}

/** The names a block mentions, leaving out property names, comments and strings. */
function mentions (source) {
  const names = new Set()
  const visit = (node) => {
    const parent = node.parent
    const property = (ts.isPropertyAccessExpression(parent) || ts.isPropertyAssignment(parent)) && parent.name === node
    if (ts.isIdentifier(node) && !property) names.add(node.text)
    ts.forEachChild(node, visit)
  }
  ts.forEachChild(source, visit)
  return names
}

/** What the checker needs to know of a block: its import lines and the names they bind, the names it mentions, whether it declares `app`. */
function outline (code) {
  const source = ts.createSourceFile('block.ts', code, ts.ScriptTarget.Latest, true, ts.ScriptKind.TS)
  const importLines = new Set()
  const bound = new Set()
  let declaresApp = false
  for (const statement of source.statements) {
    if (ts.isImportDeclaration(statement)) {
      const first = source.getLineAndCharacterOfPosition(statement.getStart(source)).line
      const last = source.getLineAndCharacterOfPosition(statement.getEnd()).line
      for (let line = first; line <= last; line++) importLines.add(line)
      const clause = statement.importClause
      if (clause?.name !== undefined) bound.add(clause.name.text)
      const named = clause?.namedBindings
      if (named !== undefined && ts.isNamespaceImport(named)) bound.add(named.name.text)
      else named?.elements.forEach((element) => bound.add(element.name.text))
    } else if (ts.isVariableStatement(statement)) {
      declaresApp ||= statement.declarationList.declarations.some((d) => ts.isIdentifier(d.name) && d.name.text === 'app')
    }
  }
  return { importLines, bound, declaresApp, mentioned: mentions(source) }
}

/**
 * The file a block is checked as: its text, and for each line of it the Markdown line it comes
 * from (0 for lines the checker adds). A fragment's imports stay at the top, the rest goes into an
 * async function, and the prelude declares the names it mentions that it does not import.
 */
export function generate (block) {
  const code = block.code.split('\n')
  const out = []
  const add = (text, from = 0) => out.push({ text, from })
  const fromBlock = (i) => block.line + 1 + i
  const { importLines, bound, declaresApp, mentioned } = outline(block.code)
  if (block.mode === 'fragment') {
    const used = PRELUDE.filter(({ name, pattern }) => name === undefined ? pattern.test(block.code) : mentioned.has(name) && !bound.has(name))
    const modules = new Set(used.flatMap((entry) => entry.from))
    for (const module of modules) add(`import type * as ${ALIASES[module]} from '${module}'`)
    code.forEach((line, i) => { if (importLines.has(i)) add(line, fromBlock(i)) })
    for (const { declaration } of used) add(declaration)
    add('export async function fragment () {')
    code.forEach((line, i) => { if (!importLines.has(i)) add(line, fromBlock(i)) })
    add('}')
  } else {
    code.forEach((line, i) => add(line, fromBlock(i)))
    add('export {}')
    // A block that runs and leaves an app behind: boot it (onReady hooks included), then close it.
    if (block.mode === 'run' && declaresApp) {
      add('await app.ready()')
      add('await app.close()')
    }
  }
  return { text: out.map((line) => line.text).join('\n') + '\n', from: out.map((line) => line.from) }
}

const COMPILER_OPTIONS = {
  strict: true,
  exactOptionalPropertyTypes: true,
  module: ts.ModuleKind.NodeNext,
  moduleResolution: ts.ModuleResolutionKind.NodeNext,
  target: ts.ScriptTarget.ES2022,
  lib: ['lib.es2023.d.ts'],
  types: ['node'],
  typeRoots: [path.join(PROJECT, 'node_modules/@types')],
  skipLibCheck: true,
}

const FORMAT_HOST = { getCanonicalFileName: (name) => name, getCurrentDirectory: () => process.cwd(), getNewLine: () => '\n' }

/** A diagnostic as a line to print; one in the block's own file points at the Markdown, as `file:line:column`. */
function describe (diagnostic, file, block, from) {
  const where = `(the ${block.mode} block at ${block.file}:${block.line})`
  if (diagnostic.file === undefined || path.resolve(diagnostic.file.fileName) !== file) {
    return `${ts.formatDiagnostic(diagnostic, FORMAT_HOST).trimEnd()}\n  ${where}`
  }
  const { line, character } = diagnostic.file.getLineAndCharacterOfPosition(diagnostic.start)
  const at = from[line] === 0 ? `${block.file}:${block.line} (in what the checker adds to the ${block.mode})` : `${block.file}:${from[line]}:${character + 1}`
  return `${at} - error TS${diagnostic.code}: ${ts.flattenDiagnosticMessageText(diagnostic.messageText, '\n  ')}\n  ${where}`
}

function runBlock (file, root, timeout) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, ['--enable-source-maps', file], { cwd: root, env: { ...process.env, ...runEnvironment() } })
    let output = ''
    child.stdout.on('data', (chunk) => { output += chunk })
    child.stderr.on('data', (chunk) => { output += chunk })
    const timer = setTimeout(() => child.kill('SIGKILL'), timeout)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      resolve({ ok: code === 0, output, why: signal === 'SIGKILL' ? `did not end within ${timeout} ms` : `exited with code ${code}` })
    })
  })
}

const plural = (n, noun) => `${n} ${noun}${n === 1 ? '' : 's'}`
const slug = (block) => `${block.file.replace(/\.md$/, '').replace(/[^A-Za-z0-9]+/g, '-').toLowerCase()}-${block.line}`

/** A compiler host for one program per block that parses the declaration files they share once. */
function sharedHost (dir) {
  const host = ts.createCompilerHost(COMPILER_OPTIONS)
  const parsed = new Map()
  const getSourceFile = host.getSourceFile
  host.getSourceFile = (name, ...rest) => {
    if (name.startsWith(dir)) return getSourceFile.call(host, name, ...rest)
    if (!parsed.has(name)) parsed.set(name, getSourceFile.call(host, name, ...rest))
    return parsed.get(name)
  }
  return host
}

/** Type-checks one block as its own program, then runs it when it is marked to run; returns what failed. */
async function checkBlock (block, { dir, host, root, run, timeout, log }) {
  const name = slug(block)
  const file = path.join(dir, `${name}.ts`)
  const { text, from } = generate(block)
  writeFileSync(file, text)
  const runs = run && block.mode === 'run'
  const program = ts.createProgram([file], { ...COMPILER_OPTIONS, noEmit: !runs, sourceMap: true }, host)
  const diagnostics = ts.getPreEmitDiagnostics(program)
  const failures = diagnostics.map((diagnostic) => describe(diagnostic, file, block, from))
  if (failures.length > 0 || !runs) {
    log(`${failures.length > 0 ? 'failed' : 'compiled'} ${block.file}:${block.line} (${block.mode})`)
    return failures
  }
  program.emit()
  const started = Date.now()
  const result = await runBlock(file.replace(/\.ts$/, '.js'), root, timeout)
  log(`${result.ok ? 'ran' : 'failed'} ${block.file}:${block.line} (${block.mode}, ${Date.now() - started} ms)`)
  if (result.ok) return []
  // Stack frames in the block point at the Markdown.
  const output = result.output.replace(new RegExp(`[^\\s(]*${name}\\.ts:(\\d+)(:\\d+)?`, 'g'),
    (_, line, column) => from[line - 1] > 0 ? `${block.file}:${from[line - 1]}${column ?? ''}` : `${block.file}:${block.line}`)
  return [`${block.file}:${block.line} - the run block ${result.why}:\n${output.trimEnd().split('\n').slice(-20).join('\n')}`]
}

/**
 * Checks blocks inside `root`, a package folder: type-checks each, and runs the `run` blocks that
 * compile unless `run` is false. Returns the counts of blocks, and the failures as lines to print.
 */
export async function checkBlocks (blocks, { root, run = true, timeout = 20_000, log = () => {} }) {
  const dir = path.join(root, SCRATCH)
  rmSync(dir, { recursive: true, force: true })
  mkdirSync(dir)
  const context = { dir, host: sharedHost(dir), root, run, timeout, log }
  const result = { passed: 0, failed: 0, skipped: 0, failures: [] }
  for (const block of blocks) {
    if (block.mode === 'skip') {
      log(`skipped ${block.file}:${block.line}: ${block.reason}`)
      result.skipped++
      continue
    }
    const failures = await checkBlock(block, context)
    result.failures.push(...failures)
    if (failures.length === 0) result.passed++
    else result.failed++
  }
  if (result.failed === 0) rmSync(dir, { recursive: true, force: true })
  return result
}

/** The files a package's `exports` name that are missing: the build that the docs are checked against. */
export function missingBuild (root) {
  const { exports = {} } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'))
  const targets = Object.values(exports).flatMap((target) => typeof target === 'string' ? [target] : Object.values(target))
  return targets.filter((target) => !existsSync(path.join(root, target)))
}

const USAGE = 'usage: node scripts/check-docs.mjs [--no-run] [--timeout=<ms>] [file.md ...]'

/**
 * The command: checks the given Markdown files (default README.md and docs/*.md) and ends with a
 * line `docs-check: N passed, N failed, N skipped` that CI counts. Returns the exit code.
 */
export async function main (argv, { root = PROJECT, log = console.log } = {}) {
  const flags = argv.filter((arg) => arg.startsWith('--'))
  const files = argv.filter((arg) => !arg.startsWith('--'))
  const run = !flags.includes('--no-run')
  const timeout = Number(flags.find((flag) => flag.startsWith('--timeout='))?.slice('--timeout='.length) ?? 20_000)
  const unknown = flags.filter((flag) => flag !== '--no-run' && !flag.startsWith('--timeout='))
  if (unknown.length > 0 || !(timeout > 0)) {
    log(unknown.length > 0 ? `docs-check: unknown option ${unknown[0]}\n${USAGE}` : `docs-check: --timeout takes milliseconds\n${USAGE}`)
    return 2
  }
  if (files.length === 0) {
    const docs = path.join(root, 'docs')
    files.push('README.md', ...(existsSync(docs) ? readdirSync(docs).filter((name) => name.endsWith('.md')).sort().map((name) => `docs/${name}`) : []))
  }
  const missing = missingBuild(root)
  if (missing.length > 0) {
    log(`docs-check: the package is not built (missing ${missing.join(', ')}): run \`npm run build\` first`)
    return 1
  }
  const blocks = []
  const problems = []
  for (const file of files) {
    const found = extractBlocks(readFileSync(path.join(root, file), 'utf8'), file)
    blocks.push(...found.blocks)
    problems.push(...found.problems)
  }
  const result = await checkBlocks(blocks, { root, run, timeout, log })
  const failed = result.failed + problems.length
  for (const failure of [...problems, ...result.failures]) log(failure)
  const count = (mode) => blocks.filter((block) => block.mode === mode).length
  log(`docs-check: ${result.passed} passed, ${failed} failed, ${result.skipped} skipped; ` +
    `${plural(blocks.length, 'TypeScript block')} in ${plural(files.length, 'file')}: ${plural(count('module'), 'module')}, ` +
    `${plural(count('fragment'), 'fragment')}, ${count('run')} to run${run ? '' : ' (compiled only: --no-run)'}` +
    (result.failed > 0 ? `; the checked files are kept in ${SCRATCH}/` : ''))
  return failed === 0 ? 0 : 1
}

if (process.argv[1] !== undefined && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = await main(process.argv.slice(2))
}
