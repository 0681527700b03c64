import t, { type Test } from 'tap'
import { mkdir, mkdtemp, rm, symlink, writeFile } from 'node:fs/promises'
import { createHash } from 'node:crypto'
import { tmpdir } from 'node:os'
import path from 'node:path'
import { pathToFileURL } from 'node:url'
import { createServer } from 'node:net'
import { SKILLS_EXTENSION } from '../../lib/index.js'
import { build, call } from '../helpers.js'
import { openSession } from '../legacy/client.js'

/** A folder of files under a fresh temporary root, removed when the test ends. */
async function folder (t: Test, files: Record<string, string | Buffer>): Promise<string> {
  const root = await mkdtemp(path.join(tmpdir(), 'mocapi-skills-'))
  t.teardown(() => rm(root, { recursive: true, force: true }))
  for (const [at, content] of Object.entries(files)) {
    await mkdir(path.dirname(path.join(root, at)), { recursive: true })
    await writeFile(path.join(root, at), content)
  }
  return root
}

const skillMd = (name: string, description = `The ${name} skill`, extra = '') => `---\nname: ${name}\ndescription: ${description}\n${extra}---\n\n# ${name}\n`
const sha = (text: string | Buffer) => `sha256:${createHash('sha256').update(text).digest('hex')}`

const PDF = skillMd('pdf-processing', 'Extract, fill and assemble PDF documents', 'metadata:\n  version: "1.0"\n')
const FORMS = '# Forms\n'
const LOGO = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0xff, 0xfe])

async function catalog (t: Test) {
  return await folder(t, {
    'pdf-processing/SKILL.md': PDF,
    'pdf-processing/references/FORMS.md': FORMS,
    'pdf-processing/references/deep/notes.txt': 'deep',
    'pdf-processing/logo.png': LOGO,
    'pdf-processing/latin1.txt': Buffer.from([0xe9, 0x74, 0xe9]),
    'pdf-processing/.DS_Store': 'ignored',
    'office/sheet-tidy/SKILL.md': skillMd('sheet-tidy'),
    'README.md': 'not a skill',
  })
}

t.test('skills/list, skills/get, the files as resources and the folders, over the 2026-07-28 wire', async (t) => {
  const root = await catalog(t)
  const app = await build(t, { pageSize: 1 })
  t.same(await app.mcp.skills(root, { prefix: 'acme' }), ['skill://acme/office/sheet-tidy/SKILL.md', 'skill://acme/pdf-processing/SKILL.md'])

  const discovered = (await call(app, 'server/discover')).body.result
  t.same(discovered.capabilities.extensions, { [SKILLS_EXTENSION]: { directoryRead: true } })
  t.same(discovered.capabilities.resources, { listChanged: true, subscribe: true }, 'skill files are resources')

  const first = (await call(app, 'skills/list')).body.result
  t.same(first.skills, [{
    uri: 'skill://acme/office/sheet-tidy/SKILL.md',
    frontmatter: { name: 'sheet-tidy', description: 'The sheet-tidy skill' },
    resources: [{ uri: 'skill://acme/office/sheet-tidy/SKILL.md', digest: sha(skillMd('sheet-tidy')), size: Buffer.byteLength(skillMd('sheet-tidy')) }],
  }], 'one skill a page, never split')
  t.match(first, { ttlMs: 300_000, cacheScope: 'public', nextCursor: String })
  const second = (await call(app, 'skills/list', { cursor: first.nextCursor })).body.result
  const pdf = {
    uri: 'skill://acme/pdf-processing/SKILL.md',
    frontmatter: { name: 'pdf-processing', description: 'Extract, fill and assemble PDF documents', metadata: { version: '1.0' } },
    resources: [
      { uri: 'skill://acme/pdf-processing/SKILL.md', digest: sha(PDF), size: Buffer.byteLength(PDF) },
      { uri: 'skill://acme/pdf-processing/latin1.txt', digest: sha(Buffer.from([0xe9, 0x74, 0xe9])), size: 3 },
      { uri: 'skill://acme/pdf-processing/logo.png', digest: sha(LOGO), size: LOGO.length },
      { uri: 'skill://acme/pdf-processing/references/FORMS.md', digest: sha(FORMS), size: FORMS.length },
      { uri: 'skill://acme/pdf-processing/references/deep/notes.txt', digest: sha('deep'), size: 4 },
    ],
  }
  t.same(second.skills, [pdf])
  t.equal(second.nextCursor, undefined)

  const got = (await call(app, 'skills/get', { uri: pdf.uri })).body.result
  t.same(got.skill, pdf)
  t.match(got, { ttlMs: 60_000, cacheScope: 'public' })
  t.notOk('nextCursor' in got)
  for (const uri of ['skill://acme/nothing/SKILL.md', 'skill://acme/pdf-processing', 'skill://acme/pdf-processing/logo.png']) {
    t.same((await call(app, 'skills/get', { uri })).body.error, { code: -32602, message: `Unknown skill: ${uri}` }, uri)
  }

  const read = async (uri: string) => (await call(app, 'resources/read', { uri })).body.result.contents[0]
  t.same(await read(pdf.uri), { uri: pdf.uri, mimeType: 'text/markdown', text: PDF })
  t.same(await read('skill://acme/pdf-processing/logo.png'), { uri: 'skill://acme/pdf-processing/logo.png', mimeType: 'image/png', blob: LOGO.toString('base64') })
  t.same(await read('skill://acme/pdf-processing/latin1.txt'), { uri: 'skill://acme/pdf-processing/latin1.txt', mimeType: 'text/plain', blob: '6XTp' }, 'a text file that is not UTF-8 is a blob')
  t.equal((await call(app, 'resources/read', { uri: 'skill://acme/pdf-processing/.DS_Store' })).body.error.code, -32602, 'dot files are not served')

  const listed = []
  let cursor
  do {
    const page: any = (await call(app, 'resources/list', cursor === undefined ? {} : { cursor })).body.result
    listed.push(...page.resources)
    cursor = page.nextCursor
  } while (cursor !== undefined)
  t.same(listed.find((resource) => resource.uri === pdf.uri), {
    uri: pdf.uri, name: 'pdf-processing', description: 'Extract, fill and assemble PDF documents', mimeType: 'text/markdown', size: Buffer.byteLength(PDF),
  }, 'a SKILL.md is listed by its skill\'s name and description')
  t.same(listed.find((resource) => resource.uri.endsWith('FORMS.md')).name, 'pdf-processing/references/FORMS.md')

  const directory = async (uri: string, cursor?: string) => (await call(app, 'resources/directory/read', cursor === undefined ? { uri } : { uri, cursor })).body
  const children = []
  let next: string | undefined
  do {
    const page: any = await directory('skill://acme/pdf-processing', next)
    children.push(...page.result.resources)
    next = page.result.nextCursor
  } while (next !== undefined)
  t.same(children, [
    { uri: 'skill://acme/pdf-processing/SKILL.md', name: 'SKILL.md', mimeType: 'text/markdown', size: Buffer.byteLength(PDF) },
    { uri: 'skill://acme/pdf-processing/latin1.txt', name: 'latin1.txt', mimeType: 'text/plain', size: 3 },
    { uri: 'skill://acme/pdf-processing/logo.png', name: 'logo.png', mimeType: 'image/png', size: LOGO.length },
    { uri: 'skill://acme/pdf-processing/references/', name: 'references', mimeType: 'inode/directory' },
  ], 'direct children, a page at a time, the subfolder as a directory')
  t.same((await directory('skill://acme/pdf-processing/references/')).result.resources, [
    { uri: 'skill://acme/pdf-processing/references/FORMS.md', name: 'FORMS.md', mimeType: 'text/markdown', size: FORMS.length },
  ], 'a directory URI may end with /')
  t.same((await directory('skill://acme/pdf-processing/references/deep')).result.resources[0].name, 'notes.txt')
  for (const uri of [pdf.uri, 'skill://acme/', 'skill://acme/pdf-processing/nothing/', 'notes://x']) {
    t.same((await directory(uri)).error, { code: -32602, message: `Not a directory this server serves: ${uri}` }, uri)
  }
  t.same((await directory('skill://acme/pdf-processing', 'bogus')).error, { code: -32602, message: 'Invalid cursor' })
  t.equal((await directory('skill://' + 'x'.repeat(9000))).error.message, 'params.uri is longer than 8192 characters')
  t.equal((await call(app, 'skills/get', { uri: 'skill://' + 'x'.repeat(9000) })).body.error.message, 'params.uri is longer than 8192 characters')
})

t.test('a 2025-era session is told of the extension and lists the skills', async (t) => {
  const root = await catalog(t)
  const app = await build(t)
  await app.mcp.skills(pathToFileURL(root + path.sep))
  await app.listen({ host: '127.0.0.1', port: 0 })
  const session = await openSession(`http://127.0.0.1:${(app.server.address() as { port: number }).port}/mcp`)
  t.same(session.initialized.result.capabilities.extensions, { [SKILLS_EXTENSION]: { directoryRead: true } })
  const listed = await session.call('skills/list')
  t.same(listed.response.result.skills.map((skill: any) => skill.uri), ['skill://office/sheet-tidy/SKILL.md', 'skill://pdf-processing/SKILL.md'])
  const got = await session.call('skills/get', { uri: 'skill://pdf-processing/SKILL.md' })
  t.equal(got.response.result.skill.frontmatter.name, 'pdf-processing')
})

t.test('scopes and canAccess work as for any resource, and make the reads private', async (t) => {
  const root = await catalog(t)
  let open = false
  const app = await build(t, {}, undefined)
  app.addHook('onRequest', async (request) => {
    const scope = request.headers['x-scope']
    if (typeof scope === 'string') (request as any).user = { sub: 'ada', scope }
  })
  await app.mcp.skills(path.join(root, 'office'), { prefix: 'gated', scopes: ['docs:read'] })
  await app.mcp.skills(path.join(root, 'pdf-processing', '..'), { prefix: 'hidden', canAccess: () => open })
  const uri = 'skill://gated/sheet-tidy/SKILL.md'
  const withScope = { headers: { 'x-scope': 'docs:read' } }
  const without = { headers: { 'x-scope': 'other' } }
  const listed = (await call(app, 'skills/list', {}, without)).body.result
  t.same(listed.skills.map((skill: any) => skill.uri), [uri], 'a scoped skill is listed; a hidden one is not')
  t.equal(listed.cacheScope, 'private')
  const refused = await call(app, 'skills/get', { uri }, without)
  t.equal(refused.status, 403)
  t.match(refused.response.headers['www-authenticate'], /insufficient_scope/)
  t.equal((await call(app, 'resources/read', { uri }, without)).status, 403)
  t.equal((await call(app, 'resources/directory/read', { uri: 'skill://gated/sheet-tidy' }, without)).status, 403)
  const got = (await call(app, 'skills/get', { uri }, withScope)).body.result
  t.match(got, { skill: { uri }, cacheScope: 'private' })
  t.equal((await call(app, 'resources/read', { uri }, withScope)).body.result.cacheScope, 'private')
  t.equal((await call(app, 'resources/directory/read', { uri: 'skill://gated/sheet-tidy/' }, withScope)).body.result.cacheScope, 'private')

  const hidden = 'skill://hidden/pdf-processing/SKILL.md'
  t.same((await call(app, 'skills/get', { uri: hidden })).body.error, { code: -32602, message: `Unknown skill: ${hidden}` })
  t.equal((await call(app, 'resources/directory/read', { uri: 'skill://hidden/pdf-processing' })).body.error.code, -32602)
  t.equal((await call(app, 'resources/read', { uri: hidden })).body.error.code, -32602)
  open = true
  t.equal((await call(app, 'skills/get', { uri: hidden })).body.result.skill.uri, hidden)
  t.equal((await call(app, 'resources/directory/read', { uri: 'skill://hidden/pdf-processing' })).body.result.resources.length, 4)
})

t.test('what a registration refuses, naming the file or skill, with nothing served', async (t) => {
  const app = await build(t)
  const refuse = async (files: Record<string, string | Buffer>, message: RegExp | string, options?: object) => {
    const root = await folder(t, files)
    await t.rejects(app.mcp.skills(root, options as never), { code: 'FST_MOCAPI_INVALID_DEFINITION', message }, String(message))
    return root
  }
  await refuse({ 'Bad_Name/SKILL.md': skillMd('bad-name') }, /the folder name "Bad_Name" breaks the Agent Skills naming rules/)
  await refuse({ 'two--hyphens/SKILL.md': skillMd('two--hyphens') }, /the folder name "two--hyphens" breaks/)
  await refuse({ 'mine/SKILL.md': skillMd('yours') }, /mine\/SKILL\.md: its name "yours" must be the name of its folder, "mine"/)
  await refuse({ 'mine/SKILL.md': '# no frontmatter\n' }, /mine\/SKILL\.md must begin with YAML frontmatter between --- lines/)
  await refuse({ 'mine/SKILL.md': '---\nname: [mine\n---\n' }, /mine\/SKILL\.md: its frontmatter is not YAML/)
  await refuse({ 'mine/SKILL.md': '---\n- a list\n---\n' }, /its frontmatter must be a mapping with name and description/)
  await refuse({ 'mine/SKILL.md': '---\nname: mine\ndescription: d\nlimit: .inf\n---\n' }, /its frontmatter holds the number Infinity, which JSON cannot carry/)
  await refuse({ 'mine/SKILL.md': '---\nname: 42\ndescription: d\n---\n' }, /name must follow the Agent Skills naming rules .*, got 42/)
  await refuse({ 'mine/SKILL.md': '---\ndescription: d\n---\n' }, /name must follow the Agent Skills naming rules .*, got nothing/)
  await refuse({ 'mine/SKILL.md': '\ufeff---\nname: yours\ndescription: d\n---\n' }, /its name "yours" must be the name of its folder/, undefined)
  await refuse({ 'mine/SKILL.md': '---\nname: mine\n---\n' }, /description must be a non-empty string of at most 1024 characters/)
  await refuse({ 'mine/SKILL.md': skillMd('mine', 'x'.repeat(1025)) }, /description must be a non-empty string of at most 1024 characters/)
  await refuse({ 'SKILL.md': skillMd('root') }, /SKILL\.md: the registered folder holds skills in folders of their own/)
  await refuse({ 'mine/SKILL.md/inner.md': 'a folder named SKILL.md' }, /mine\/SKILL\.md is not a regular file/)

  const many: Record<string, string> = { 'big/SKILL.md': skillMd('big') }
  for (let i = 0; i < 512; i++) many[`big/files/${i}.txt`] = 'x'
  await refuse(many, /the skill in .*big has more than 512 files, the extension's limit per skill/)
  await refuse({ 'heavy/SKILL.md': skillMd('heavy'), 'heavy/a.bin': Buffer.alloc(9 * 1024 * 1024), 'heavy/b.bin': Buffer.alloc(8 * 1024 * 1024) },
    /the skill in .*heavy holds more than 16777216 bytes \(16 MiB\), the extension's limit per skill/)
  let deep = 'deep'
  for (let i = 0; i < 17; i++) deep += `/d${i}`
  await refuse({ [`${deep}/SKILL.md`]: skillMd('d16') }, /lies more than 16 folders deep/)
  let inside = 'inside/SKILL.md'
  const insideFiles: Record<string, string> = { [inside]: skillMd('inside') }
  inside = 'inside'
  for (let i = 0; i < 17; i++) inside += `/d${i}`
  insideFiles[`${inside}/file.txt`] = 'x'
  await refuse(insideFiles, /the skill in .*inside: .* lies more than 16 folders deep/)

  const outside = await folder(t, { 'secret.txt': 'secret' })
  const linked = await folder(t, { 'linked/SKILL.md': skillMd('linked') })
  await symlink(path.join(outside, 'secret.txt'), path.join(linked, 'linked', 'secret.txt'))
  await t.rejects(app.mcp.skills(linked), { message: /linked\/secret\.txt is a symlink: a skill serves regular files inside its folder only/ })
  const linkedSkill = await folder(t, {})
  await symlink(path.join(linked, 'linked'), path.join(linkedSkill, 'elsewhere'))
  await t.rejects(app.mcp.skills(linkedSkill), { message: /elsewhere is a symlink: skills are served from regular files inside the folder only/ })

  const linkedRoot = path.join(await folder(t, {}), 'root')
  await symlink(linked, linkedRoot)
  await t.rejects(app.mcp.skills(linkedRoot), { message: /root is not a folder \(a symlink\)$/ })
  const socketed = await folder(t, { 'wired/SKILL.md': skillMd('wired') })
  const socket = createServer()
  await new Promise<void>((resolve) => socket.listen(path.join(socketed, 'wired', 'control.sock'), resolve))
  t.teardown(() => socket.close())
  await t.rejects(app.mcp.skills(socketed), { message: /wired\/control\.sock is not a regular file/ })
  await t.rejects(app.mcp.skills(path.join(outside, 'nothing')), { message: /skills: .*nothing is not a folder that can be read/ })
  await t.rejects(app.mcp.skills(path.join(outside, 'secret.txt')), { message: /secret\.txt is not a folder$/ })
  await t.rejects(app.mcp.skills(''), { message: 'mocapi: skills: the folder must be a path or a file: URL, got ""' })
  await t.rejects(app.mcp.skills(42 as never), { message: 'mocapi: skills: the folder must be a path or a file: URL, got number' })
  await t.rejects(app.mcp.skills(new URL('https://example.com/skills/')), { message: /the folder must be a path or a file: URL, got https:\/\/example\.com\/skills\// })
  const good = await folder(t, { 'fine/SKILL.md': skillMd('fine'), 'fine/AUTHORS': 'Ada\n' })
  await t.rejects(app.mcp.skills(good, { prefix: 'Acme' }), { message: /skills prefix must be a name of lowercase letters, digits and hyphens .*, got "Acme"/ })
  await t.rejects(app.mcp.skills(good, { colour: 'red' } as never), { code: 'FST_MOCAPI_INVALID_DEFINITION', message: /colour/ })
  await t.rejects(app.mcp.skills(good, { scopes: 'docs' } as never), { message: /skills scopes must be an array/ })
  await t.rejects(app.mcp.skills(good, 'opts' as never), { message: /skills options must be an object/ })
  t.equal((await call(app, 'skills/list')).body.error.code, -32601, 'nothing refused was served: no skill, no skills/list')

  t.same(await app.mcp.skills(good), ['skill://fine/SKILL.md'])
  t.same((await call(app, 'skills/get', { uri: 'skill://fine/SKILL.md' })).body.result.skill.resources.map((file: any) => file.uri),
    ['skill://fine/SKILL.md', 'skill://fine/AUTHORS'], 'SKILL.md first, though AUTHORS sorts before it')
  t.equal((await call(app, 'resources/read', { uri: 'skill://fine/AUTHORS' })).body.result.contents[0].blob, Buffer.from('Ada\n').toString('base64'), 'no extension, no known type: a blob')
  await t.rejects(app.mcp.skills(good), { message: 'mocapi: skills: skill://fine/SKILL.md is already registered' })
  t.throws(() => app.mcp.removeResource('skill://fine/SKILL.md'), { message: /skill:\/\/fine\/SKILL\.md is a file of a skill/ })
  t.equal(app.mcp.removeResource('skill://fine/other.md'), false)
})

t.test('a skill whose file URI another resource holds is refused whole, its other files unserved', async (t) => {
  const app = await build(t)
  app.mcp.resource({ uri: 'skill://taken/notes.md', name: 'notes' }, () => 'mine')
  const root = await folder(t, { 'taken/SKILL.md': skillMd('taken'), 'taken/a.md': 'a', 'taken/notes.md': 'theirs' })
  await t.rejects(app.mcp.skills(root), { code: 'FST_MOCAPI_DUPLICATE_DEFINITION' })
  t.equal((await call(app, 'resources/read', { uri: 'skill://taken/SKILL.md' })).body.error.code, -32602)
  t.equal((await call(app, 'resources/read', { uri: 'skill://taken/a.md' })).body.error.code, -32602)
  t.equal((await call(app, 'resources/read', { uri: 'skill://taken/notes.md' })).body.result.contents[0].text, 'mine')
  t.same((await call(app, 'server/discover')).body.result.capabilities.extensions, undefined)
  const pair = await folder(t, { 'alpha/SKILL.md': skillMd('alpha'), 'taken/SKILL.md': skillMd('taken'), 'taken/notes.md': 'theirs' })
  await t.rejects(app.mcp.skills(pair), { code: 'FST_MOCAPI_DUPLICATE_DEFINITION' })
  t.equal((await call(app, 'skills/list')).body.error.code, -32601, 'the skill served before the refused one was taken back')
  t.equal((await call(app, 'resources/read', { uri: 'skill://alpha/SKILL.md' })).body.error.code, -32602)
  const again = await folder(t, { 'taken/SKILL.md': skillMd('taken') })
  app.mcp.resource({ uri: 'skill://other/SKILL.md', name: 'x' }, () => 'x')
  const other = await folder(t, { 'other/SKILL.md': skillMd('other') })
  await t.rejects(app.mcp.skills(other), { message: 'mocapi: skills: skill://other/SKILL.md is already registered' })
  t.same(await app.mcp.skills(again), ['skill://taken/SKILL.md'], 'nothing of the refused one was left behind')
  t.same(await app.mcp.skills(pair, { prefix: 'later' }), ['skill://later/alpha/SKILL.md', 'skill://later/taken/SKILL.md'])
  t.equal((await call(app, 'resources/directory/read', { uri: 'skill://alpha' })).body.error.code, -32602, 'its folders were taken back too')
})

t.test('a frontmatter takes at most 64 KiB as written and as JSON with its aliases expanded, and a bomb is refused quickly', async (t) => {
  const app = await build(t)
  const bound = 64 * 1024
  const blob = 'x'.repeat(1000)
  // 63 aliases of one 1000-character value, and a pad that brings the JSON to `bound + over` bytes.
  const expanded = (over: number) => {
    const json = (pad: string) => Buffer.byteLength(JSON.stringify({ name: 'big', description: 'd', blob, pad, copies: Array(63).fill(blob) }))
    const pad = 'p'.repeat(1 + bound + over - json('p'))
    t.equal(json(pad), bound + over)
    return `---\nname: big\ndescription: d\nblob: &b ${blob}\npad: ${pad}\ncopies: [${Array(63).fill('*b').join(', ')}]\n---\n`
  }
  const under = await folder(t, { 'big/SKILL.md': expanded(0) })
  t.same(await app.mcp.skills(under), ['skill://big/SKILL.md'])
  const { frontmatter } = (await call(app, 'skills/get', { uri: 'skill://big/SKILL.md' })).body.result.skill
  t.equal(frontmatter.copies.length, 63)
  t.equal(Buffer.byteLength(JSON.stringify(frontmatter)), bound, 'exactly the bound is served, aliases expanded')

  const refuse = async (name: string, skillMd: string, reason: string) => {
    const root = await folder(t, { [`${name}/SKILL.md`]: skillMd })
    const started = performance.now()
    await t.rejects(app.mcp.skills(root, { prefix: 'refused' }), {
      code: 'FST_MOCAPI_INVALID_DEFINITION', message: `mocapi: skills: ${path.join(root, name, 'SKILL.md')}: its frontmatter ${reason}`,
    }, reason)
    return performance.now() - started
  }
  await refuse('big', expanded(1), 'is more than 65536 bytes (64 KiB) as JSON, its aliases expanded')

  // As written: a comment fills the frontmatter to the bound, or one byte past it.
  const written = (over: number) => {
    const fields = 'name: wordy\ndescription: d'
    const block = `# ${'c'.repeat(bound + over - fields.length - 3)}\n${fields}`
    t.equal(Buffer.byteLength(block), bound + over)
    return `---\n${block}\n---\n`
  }
  t.same(await app.mcp.skills(await folder(t, { 'wordy/SKILL.md': written(0) }), { prefix: 'written' }), ['skill://written/wordy/SKILL.md'])
  await refuse('wordy', written(1), 'is more than 65536 bytes (64 KiB) as written')

  // Two anchors, so that each stays below the `yaml` package's own count of aliases per anchor.
  // A key written twice, after one that is a collection (told apart as YAML does, by the node).
  await refuse('twice', '---\n? [x]\n: 1\n? [x]\n: 2\nname: twice\nname: twice\ndescription: d\n---\n', 'repeats the key "name" in one mapping')

  const aliases = (count: number) => `---\nname: many\ndescription: d\na: &a x\nc: &c y\nb: [${Array.from({ length: count }, (_, i) => i % 2 === 0 ? '*a' : '*c').join(', ')}]\n---\n`
  t.same(await app.mcp.skills(await folder(t, { 'many/SKILL.md': aliases(100) }), { prefix: 'aliased' }), ['skill://aliased/many/SKILL.md'])
  await refuse('many', aliases(101), 'holds 101 aliases, more than 100')

  // A billion laughs: nine levels of nine aliases each, 9^9 values once expanded.
  let laughs = '---\nname: laughs\ndescription: d\nl0: &l0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n'
  for (let level = 1; level < 9; level++) laughs += `l${level}: &l${level} [${Array(9).fill(`*l${level - 1}`).join(', ')}]\n`
  const took = await refuse('laughs', laughs + '---\n', 'is not YAML (Excessive alias count indicates a resource exhaustion attack)')
  t.ok(took < 2000, `refused in ${Math.round(took)} ms, never expanded`)
  t.same((await call(app, 'skills/list')).body.result.skills.map((skill: any) => skill.uri),
    ['skill://big/SKILL.md', 'skill://written/wordy/SKILL.md', 'skill://aliased/many/SKILL.md'], 'nothing refused is served')
})

t.test('a frontmatter nested past 64 levels is refused before the parser recurses into it, every time', async (t) => {
  const app = await build(t)
  const nested = (depth: number) => `---\nname: deep\ndescription: d\nmetadata: ${'['.repeat(depth)}1${']'.repeat(depth)}\n---\n`
  t.same(await app.mcp.skills(await folder(t, { 'deep/SKILL.md': nested(63) })), ['skill://deep/SKILL.md'], '64 levels with the mapping around them')
  const refusal = (root: string) => ({
    code: 'FST_MOCAPI_INVALID_DEFINITION',
    message: `mocapi: skills: ${path.join(root, 'deep', 'SKILL.md')}: its frontmatter nests collections more than 64 deep`,
  })
  const over = await folder(t, { 'deep/SKILL.md': nested(64) })
  await t.rejects(app.mcp.skills(over, { prefix: 'over' }), refusal(over))
  // Left to the parser, a stack ended again and again can have V8 end the process (Node 20, 900 levels will do).
  const deep = await folder(t, { 'deep/SKILL.md': `---\n${'['.repeat(3000)}${']'.repeat(3000)}\n---\n` })
  for (let attempt = 0; attempt < 10; attempt++) {
    await t.rejects(app.mcp.skills(deep, { prefix: 'again' }), refusal(deep), `attempt ${attempt}`)
  }
})

t.test('a text file is served with its bytes, a BOM kept, as the digest and size listed say', async (t) => {
  const bom = '\ufeff'
  const root = await folder(t, {
    'bom/SKILL.md': `${bom}${skillMd('bom')}`,
    'bom/notes.md': `${bom}# Notes\n`,
    'bom/data.json': `${bom}{"a":1}`,
  })
  const app = await build(t)
  await app.mcp.skills(root)
  const { skill } = (await call(app, 'skills/get', { uri: 'skill://bom/SKILL.md' })).body.result
  t.equal(skill.resources.length, 3)
  for (const listed of skill.resources) {
    const [content] = (await call(app, 'resources/read', { uri: listed.uri })).body.result.contents
    t.ok(content.text.startsWith(bom), `${listed.uri}: the BOM is kept`)
    const bytes = Buffer.from(content.text, 'utf8')
    t.same({ digest: sha(bytes), size: bytes.length }, { digest: listed.digest, size: listed.size }, listed.uri)
  }
})

/** What a client sees of one skill: its manifest, its files' texts and its folders' listings. */
async function seen (app: Awaited<ReturnType<typeof build>>, uri: string, folders: string[]) {
  const manifest = (await call(app, 'skills/get', { uri })).body.result.skill
  const texts = []
  for (const file of manifest.resources) texts.push((await call(app, 'resources/read', { uri: file.uri })).body.result?.contents[0].text)
  const listings = []
  for (const folder of folders) listings.push((await call(app, 'resources/directory/read', { uri: folder })).body.result?.resources)
  return { manifest, texts, listings }
}

t.test('a skill inside the folder of a skill served before is refused, the outer skill left whole', async (t) => {
  const app = await build(t)
  const outer = await folder(t, { 'acme/SKILL.md': skillMd('acme'), 'acme/pdf/notes.md': '# acme notes\n' })
  t.same(await app.mcp.skills(outer), ['skill://acme/SKILL.md'])
  const before = await seen(app, 'skill://acme/SKILL.md', ['skill://acme', 'skill://acme/pdf'])
  t.same(before.texts, [skillMd('acme'), '# acme notes\n'])

  const inner = await folder(t, { 'pdf/SKILL.md': skillMd('pdf'), 'pdf/guide.md': '# pdf guide\n' })
  await t.rejects(app.mcp.skills(inner, { prefix: 'acme' }), {
    code: 'FST_MOCAPI_INVALID_DEFINITION',
    message: 'mocapi: skills: skill://acme/pdf/SKILL.md and skill://acme/SKILL.md nest, one inside the other\'s folder: each skill needs a folder of its own',
  })
  const other = await folder(t, { 'b/SKILL.md': skillMd('b') })
  await t.rejects(app.mcp.skills(other, { prefix: 'acme' }), { message: /skill:\/\/acme\/b\/SKILL\.md and skill:\/\/acme\/SKILL\.md nest/ }, 'below the skill, beside its folders')

  t.same(await seen(app, 'skill://acme/SKILL.md', ['skill://acme', 'skill://acme/pdf']), before, 'manifest, files and folders unchanged')
  t.throws(() => app.mcp.removeResource('skill://acme/pdf/notes.md'), { message: /is a file of a skill/ }, 'its file still cannot be removed')
  t.equal((await call(app, 'resources/read', { uri: 'skill://acme/pdf/SKILL.md' })).body.error.code, -32602, 'nothing of the refused one is served')
  t.equal((await call(app, 'resources/read', { uri: 'skill://acme/pdf/guide.md' })).body.error.code, -32602)
  t.same((await call(app, 'skills/list')).body.result.skills.map((skill: any) => skill.uri), ['skill://acme/SKILL.md'])
})

t.test('a skill whose folder would hold a skill served before is refused, the inner skill left whole', async (t) => {
  const app = await build(t)
  const inner = await folder(t, { 'pdf/SKILL.md': skillMd('pdf'), 'pdf/guide.md': '# pdf guide\n' })
  t.same(await app.mcp.skills(inner, { prefix: 'acme' }), ['skill://acme/pdf/SKILL.md'])
  const before = await seen(app, 'skill://acme/pdf/SKILL.md', ['skill://acme/pdf'])
  t.same(before.texts, [skillMd('pdf'), '# pdf guide\n'])

  const outer = await folder(t, { 'acme/SKILL.md': skillMd('acme'), 'acme/pdf/notes.md': '# acme notes\n' })
  await t.rejects(app.mcp.skills(outer), {
    code: 'FST_MOCAPI_INVALID_DEFINITION',
    message: 'mocapi: skills: skill://acme/SKILL.md and skill://acme/pdf/SKILL.md nest, one inside the other\'s folder: each skill needs a folder of its own',
  })
  t.same(await seen(app, 'skill://acme/pdf/SKILL.md', ['skill://acme/pdf']), before, 'manifest, files and folders unchanged')
  t.throws(() => app.mcp.removeResource('skill://acme/pdf/guide.md'), { message: /is a file of a skill/ }, 'its file still cannot be removed')
  t.equal((await call(app, 'resources/read', { uri: 'skill://acme/SKILL.md' })).body.error.code, -32602, 'nothing of the refused one is served')
  t.equal((await call(app, 'resources/read', { uri: 'skill://acme/pdf/notes.md' })).body.error.code, -32602)
  t.equal((await call(app, 'resources/directory/read', { uri: 'skill://acme' })).body.error.code, -32602)
  t.same((await call(app, 'skills/list')).body.result.skills.map((skill: any) => skill.uri), ['skill://acme/pdf/SKILL.md'])
  t.same(await app.mcp.skills(outer, { prefix: 'elsewhere' }), ['skill://elsewhere/acme/SKILL.md'], 'under a prefix of its own it is served')
})
