import t from 'tap'
import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import os from 'node:os'
import path from 'node:path'
import { fileURLToPath } from 'node:url'

// The checker is plain JavaScript, since CI runs it before anything else is compiled; its shapes, as used here.
interface Block { file: string, line: number, mode: 'module' | 'fragment' | 'run' | 'skip', reason?: string, code: string }
interface Checker {
  PRELUDE: { name?: string, declaration: string }[]
  runEnvironment (): Record<string, string>
  extractBlocks (text: string, file: string): { blocks: Block[], problems: string[] }
  generate (block: Block): { text: string, from: number[] }
  checkBlocks (blocks: Block[], options: { root: string, run?: boolean, timeout?: number, log?: (line: string) => void }):
  Promise<{ passed: number, failed: number, skipped: number, failures: string[] }>
  missingBuild (root: string): string[]
  main (argv: string[], options?: { root?: string, log?: (line: string) => void }): Promise<number>
}
const script = fileURLToPath(new URL('../../scripts/check-docs.mjs', import.meta.url))
const checker: Checker = await import(script)
const { extractBlocks, generate, checkBlocks, missingBuild, main } = checker

const fence = '```'
const md = (...lines: string[]): string => lines.join('\n')

/** A package folder to check blocks in, removed when the test ends. */
async function fixture (t: { teardown (fn: () => unknown): void }, files: Record<string, string> = {}): Promise<string> {
  const root = await mkdtemp(path.join(os.tmpdir(), 'mocapi-docs-check-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  await writeFile(path.join(root, 'package.json'), JSON.stringify({ name: 'fixture', type: 'module' }))
  for (const [name, text] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, name)), { recursive: true })
    await writeFile(path.join(root, name), text)
  }
  return root
}

const block = (code: string, mode: Block['mode'] = 'module', line = 10): Block => ({ file: 'doc.md', line, mode, code })

t.test('finds the TypeScript blocks, their first lines and their markers', async (t) => {
  const { blocks, problems } = extractBlocks(md(
    '# Title', // 1
    `${fence}ts`, // 2
    'const a = 1',
    `${fence}ts`,
    fence,
    '<!-- docs-check: fragment -->', // 6
    '',
    `${fence}typescript title="x"`, // 8
    'return 2',
    fence,
    `${fence}sh`, // 11
    '<!-- docs-check: run -->',
    `${fence}ts`,
    fence,
    '1. a list item', // 15
    '   <!-- docs-check: skip shows a mistake -->',
    `   ${fence}ts`, // 17
    '   const b = 2',
    '     nested',
    '',
    `   ${fence}`,
    `${fence}\`md`, // 22: four backticks hold three
    `${fence}ts`,
    'not a block of its own',
    fence,
    `${fence}\``,
    '~~~ts', // 27
    'const c = 3',
    fence,
    '~~~'
  ), 'doc.md')
  t.same(problems, [])
  t.same(blocks, [
    { file: 'doc.md', line: 2, mode: 'module', reason: undefined, code: 'const a = 1\n```ts' },
    { file: 'doc.md', line: 8, mode: 'fragment', reason: undefined, code: 'return 2' },
    { file: 'doc.md', line: 17, mode: 'skip', reason: 'shows a mistake', code: 'const b = 2\n  nested\n' },
    { file: 'doc.md', line: 27, mode: 'module', reason: undefined, code: 'const c = 3\n```' },
  ])
  t.same(extractBlocks(`${fence}ts\r\nconst d = 4\r\n${fence}\r\n`, 'crlf.md').blocks.map((b) => b.code), ['const d = 4'])
})

t.test('names each misplaced or unknown marker, and a block left open', async (t) => {
  const { problems } = extractBlocks(md(
    '<!-- docs-check: fragmnet -->', // 1
    '<!-- docs-check: skip -->',
    '<!-- docs-check: run now -->',
    '<!-- docs-check: run -->', // 4
    'Some text.',
    '<!-- docs-check: fragment -->', // 6
    '<!-- docs-check: fragment -->', // 7
    `${fence}sh`,
    fence,
    '<!-- docs-check: run -->', // 10
    `${fence}ts`
  ), 'bad.md')
  t.same(problems, [
    'bad.md:1: unknown docs-check marker "fragmnet": expected fragment, run or skip <reason>',
    'bad.md:2: a skipped block needs a reason: <!-- docs-check: skip <why> -->',
    'bad.md:3: unknown docs-check marker "run now": expected fragment, run or skip <reason>',
    'bad.md:4: docs-check marker not followed by a code block',
    'bad.md:6: docs-check marker not followed by a code block',
    'bad.md:7: docs-check marker before a block that is not TypeScript',
    'bad.md: a code block is not closed',
  ])
  t.same(extractBlocks('<!-- docs-check: run -->\n', 'end.md').problems, ['end.md:1: docs-check marker not followed by a code block'])
})

t.test('a fragment keeps its imports on top and runs in an async function, with the prelude it mentions', async (t) => {
  const generated = generate(block(md(
    "import assert from 'node:assert'",
    "import { readFile } from 'node:fs/promises'",
    'import type {',
    '  Stats } from "node:fs"',
    "import * as os from 'node:os'",
    "import 'node:path'",
    '// ctx and app in a comment do not count, nor do strings: "payments"',
    'const { text } = { text: String(amount) }',
    "const object = { card: 1, args: 'x' }",
    'return object.card + readFile.length + os.EOL.length + text.length + args.to + assert.name'
  ), 'fragment', 20))
  t.equal(generated.text, md(
    "import assert from 'node:assert'",
    "import { readFile } from 'node:fs/promises'",
    'import type {',
    '  Stats } from "node:fs"',
    "import * as os from 'node:os'",
    "import 'node:path'",
    'declare const args: Record<string, any>',
    'declare const amount: number',
    'declare const text: string',
    'export async function fragment () {',
    '// ctx and app in a comment do not count, nor do strings: "payments"',
    'const { text } = { text: String(amount) }',
    "const object = { card: 1, args: 'x' }",
    'return object.card + readFile.length + os.EOL.length + text.length + args.to + assert.name',
    '}',
    ''
  ))
  t.same(generated.from, [21, 22, 23, 24, 25, 26, 0, 0, 0, 0, 27, 28, 29, 30, 0])

  const typed = generate(block("import { requestedSchema } from 'mocapi'\nctx.request.user?.sub\nrequestedSchema()", 'fragment'))
  t.equal(typed.text, md(
    "import type * as $mocapi from 'mocapi'",
    "import type * as $jwt from '@fastify/jwt'",
    "import { requestedSchema } from 'mocapi'",
    'declare const ctx: $mocapi.McpContext',
    "declare module '@fastify/jwt' { interface FastifyJWT { user: { sub: string, role?: string } } }",
    'export async function fragment () {',
    'ctx.request.user?.sub',
    'requestedSchema()',
    '}',
    ''
  ), 'a name the fragment imports is not declared again')
})

t.test('a module is checked as written; one that runs and leaves an app is booted and closed', async (t) => {
  t.same(generate(block('const app = 1')), { text: 'const app = 1\nexport {}\n', from: [11, 0] })
  t.same(generate(block('const { app } = x', 'run')), { text: 'const { app } = x\nexport {}\n', from: [11, 0] })
  t.same(generate(block('let n = 1\nconst app = Fastify()\nconst after = 2', 'run')), {
    text: 'let n = 1\nconst app = Fastify()\nconst after = 2\nexport {}\nawait app.ready()\nawait app.close()\n',
    from: [11, 12, 13, 0, 0, 0],
  })
})

t.test('every name of the prelude is documented in docs/contributing.md', async (t) => {
  const guide = await readFile(new URL('../../docs/contributing.md', import.meta.url), 'utf8')
  for (const { name } of checker.PRELUDE) if (name !== undefined) t.match(guide, `\`${name}\``, name)
  t.match(guide, 'request.user')
})

t.test('runs get random JWT secrets and requestState keys', async (t) => {
  const env = checker.runEnvironment()
  t.equal(Buffer.from(env.KEY_NEW, 'base64').length, 32)
  t.equal(Buffer.from(env.KEY_OLD, 'base64').length, 32)
  t.not(env.KEY_NEW, env.KEY_OLD)
  t.match(env.JWT_SECRET, /^[0-9a-f]{64}$/)
})

t.test('reports type errors at their Markdown lines, and runs what is marked to run', async (t) => {
  const root = await fixture(t, { 'helper.ts': "export const broken: number = 'no'\n" })
  const blocks = [
    block("const n: number = 'one'", 'module', 3),
    block('return amount.toUpperCase()', 'fragment', 7),
    block("import { broken } from '../helper.js'\nconsole.log(broken)", 'module', 12),
    block('const app = 1', 'run', 16),
    block("import assert from 'node:assert'\nassert.equal(Buffer.from(process.env.KEY_NEW!, 'base64').length, 32)", 'run', 20),
    block("if (process.argv.length > 0) throw new Error('thrown from the block')", 'run', 24),
    block('process.exitCode = 3', 'run', 28),
    block('setInterval(() => {}, 1000)', 'run', 32),
    { ...block('not checked at all', 'skip', 36), reason: 'on purpose' },
    block('return args.anything', 'fragment', 40),
    block("const app = {\n  ready: async () => { throw new Error('fails to boot') },\n  close: async () => {},\n}", 'run', 44),
  ]
  const log: string[] = []
  const result = await checkBlocks(blocks, { root, timeout: 3000, log: (line) => log.push(line) })
  t.match(result, { passed: 2, failed: 8, skipped: 1 })
  const failure = (at: string): string => result.failures.filter((text) => text.startsWith(at) || text.includes(`block at ${at})`)).join('\n')
  t.match(failure('doc.md:4:'), /^doc\.md:4:7 - error TS2322: Type 'string' is not assignable to type 'number'\.\n {2}\(the module block at doc\.md:3\)$/)
  t.match(failure('doc.md:8:'), /^doc\.md:8:15 - error TS2339: Property 'toUpperCase' does not exist on type 'number'\./)
  t.match(failure('doc.md:12'), /helper\.ts\(1,14\): error TS2322: .*\n {2}\(the module block at doc\.md:12\)$/)
  t.match(failure('doc.md:16 '), /^doc\.md:16 \(in what the checker adds to the run\) - error TS2339: Property 'ready' does not exist on type '1'/)
  t.match(failure('doc.md:24 '), /^doc\.md:24 - the run block exited with code 1:\ndoc\.md:25\n[^]*Error: thrown from the block\n {4}at <anonymous> \(doc\.md:25:36\)/)
  t.match(failure('doc.md:28 '), /^doc\.md:28 - the run block exited with code 3:/)
  t.match(failure('doc.md:32 '), /^doc\.md:32 - the run block did not end within 3000 ms/)
  t.match(failure('doc.md:44 '), /Error: fails to boot\n {4}at Object\.ready \(doc\.md:46:30\)\n {4}at [^]*doc\.md:44\b/, 'a frame in what the checker adds points at the block')
  t.match(log, ['failed doc.md:3 (module)', 'failed doc.md:7 (fragment)', 'failed doc.md:12 (module)', 'failed doc.md:16 (run)',
    /^ran doc\.md:20 \(run, \d+ ms\)$/, /^failed doc\.md:24 \(run, \d+ ms\)$/, /^failed doc\.md:28/, /^failed doc\.md:32/,
    'skipped doc.md:36: on purpose', 'compiled doc.md:40 (fragment)', /^failed doc\.md:44/])
  t.ok(existsSync(path.join(root, '.docs-check', 'doc-3.ts')), 'the checked files stay after a failure')

  const compiled = await checkBlocks([block("throw new Error('not run')", 'run')], { root, run: false })
  t.same(compiled, { passed: 1, failed: 0, skipped: 0, failures: [] }, 'with run false, a run block is only compiled')
  t.notOk(existsSync(path.join(root, '.docs-check')), 'and the scratch folder goes when all pass')
})

t.test('the docs are checked against the build that the package exports', async (t) => {
  const root = await fixture(t, { 'dist/index.js': '', 'dist/index.d.ts': '' })
  await writeFile(path.join(root, 'package.json'), JSON.stringify({
    exports: { '.': { types: './dist/index.d.ts', default: './dist/index.js' }, './extra': './dist/extra.js', './package.json': './package.json' },
  }))
  t.same(missingBuild(root), ['./dist/extra.js'])
  const log: string[] = []
  t.equal(await main([], { root, log: (line) => log.push(line) }), 1)
  t.same(log, ['docs-check: the package is not built (missing ./dist/extra.js): run `npm run build` first'])
  t.same(missingBuild(await fixture(t)), [], 'a package without exports has nothing to build')
})

t.test('the command checks README.md and docs/*.md, and ends with the counts CI reads', async (t) => {
  const root = await fixture(t, {
    'README.md': md(`${fence}ts`, 'const a: string = "a"', fence, '<!-- docs-check: skip on purpose -->', `${fence}ts`, 'nope(', fence),
    'docs/b.md': md('<!-- docs-check: run -->', `${fence}ts`, 'console.log("ran")', fence),
    'docs/a.md': md('<!-- docs-check: fragmnet -->', 'text', `${fence}ts`, 'const n: number = "n"', fence),
    'docs/notes.txt': `${fence}ts\nnot markdown\n${fence}\n`,
  })
  const log: string[] = []
  t.equal(await main([], { root, log: (line) => log.push(line) }), 1)
  t.match(log, [
    'compiled README.md:1 (module)',
    'skipped README.md:5: on purpose',
    'failed docs/a.md:3 (module)',
    /^ran docs\/b\.md:2 \(run, \d+ ms\)$/,
    'docs/a.md:1: unknown docs-check marker "fragmnet": expected fragment, run or skip <reason>',
    /^docs\/a\.md:4:7 - error TS2322/,
  ])
  t.match(log.at(-1), /^docs-check: 2 passed, 2 failed, 1 skipped; 4 TypeScript blocks in 3 files: 2 modules, 0 fragments, 1 to run; the checked files are kept in \.docs-check\/$/)

  const only: string[] = []
  t.equal(await main(['--no-run', 'docs/b.md'], { root, log: (line) => only.push(line) }), 0)
  t.same(only, ['compiled docs/b.md:2 (run)', 'docs-check: 1 passed, 0 failed, 0 skipped; 1 TypeScript block in 1 file: 0 modules, 0 fragments, 1 to run (compiled only: --no-run)'])

  const bare = await fixture(t, { 'README.md': 'No code here.\n' })
  const none: string[] = []
  t.equal(await main(['--timeout=5000'], { root: bare, log: (line) => none.push(line) }), 0, 'a package without docs/ checks README.md alone')
  t.same(none, ['docs-check: 0 passed, 0 failed, 0 skipped; 0 TypeScript blocks in 1 file: 0 modules, 0 fragments, 0 to run'])
})

t.test('the command refuses options it does not know', async (t) => {
  const log: string[] = []
  t.equal(await main(['--fast'], { log: (line) => log.push(line) }), 2)
  t.equal(await main(['--timeout=soon'], { log: (line) => log.push(line) }), 2)
  t.same(log, [
    'docs-check: unknown option --fast\nusage: node scripts/check-docs.mjs [--no-run] [--timeout=<ms>] [file.md ...]',
    'docs-check: --timeout takes milliseconds\nusage: node scripts/check-docs.mjs [--no-run] [--timeout=<ms>] [file.md ...]',
  ])
})

t.test('run as a command, it exits with the code main returns', async (t) => {
  const { code, stdout } = await new Promise<{ code: number | null, stdout: string }>((resolve) => {
    const child = execFile(process.execPath, [script, '--fast'], (_error, stdout) => resolve({ code: child.exitCode, stdout }))
  })
  t.equal(code, 2)
  t.match(stdout, /^docs-check: unknown option --fast/)
})
