import t from 'tap'
import { UriTemplate } from '../../lib/features/uri-template.js'
import { build, call } from '../helpers.js'

/** The backtracking regular expression a level-1 template used to compile to: the reference for what matches. */
function reference (template: string): { regex: RegExp, names: string[] } {
  const names: string[] = []
  let source = '^'
  let last = 0
  for (const match of template.matchAll(/\{([^}]*)\}/g)) {
    names.push(match[1])
    source += template.slice(last, match.index).replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '((?:[A-Za-z0-9\\-._~]|%[0-9A-Fa-f]{2})+)'
    last = match.index + match[0].length
  }
  return { regex: new RegExp(source + template.slice(last).replace(/[.*+?^${}()|[\]\\]/g, '\\$&') + '$'), names }
}

/** A small deterministic generator, so a failure replays. */
function random (seed: number): () => number {
  let state = seed
  return () => {
    state = (state * 1103515245 + 12345) & 0x7fffffff
    return state / 0x80000000
  }
}

t.test('matches as the greedy regular expression does, on thousands of random templates and URIs', async (t) => {
  const next = random(7)
  const pick = <T>(items: readonly T[]): T => items[Math.floor(next() * items.length)]
  const pieces = ['a', 'b', '.', '-', '/', '%41', '%4', '~', '_', 'x.y', '://', '%E2%9C%93']
  const templates = ['t://{a}', 't://{a}.{b}', 't://{a}{b}', '{a}', '{a}.{b}.{c}', 'x/{a}/y/{b}', '{a}-{b}', 't://{a}%41{b}', '{a}~', 'pre{a}{b}{c}post']
  let checked = 0
  for (const template of templates) {
    const ours = new UriTemplate(template, 'test')
    const { regex, names } = reference(template)
    for (let i = 0; i < 400; i++) {
      let uri = ''
      const length = 1 + Math.floor(next() * 8)
      for (let j = 0; j < length; j++) uri += pick([...pieces, template.replace(/\{[^}]*\}/g, 'v')])
      const expected = regex.exec(uri)
      let values
      if (expected !== null) {
        try {
          values = Object.fromEntries(names.map((name, k) => [name, decodeURIComponent(expected[k + 1])]))
        } catch {
          values = undefined
        }
      }
      t.same(ours.match(uri), values, `${template} ~ ${uri}`)
      checked++
    }
  }
  t.equal(checked, 4000)
})

t.test('a URI that almost matches costs time linear in its length, up to the cap', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.resourceTemplate({ uriTemplate: 'logs://{service}.{date}.{level}', name: 'logs' }, (_uri, v) => `${v.service} ${v.date} ${v.level}`)
      .resourceTemplate({ uriTemplate: 'pairs://{a}{b}', name: 'pairs' }, (_uri, v) => `${v.a}|${v.b}`)
  })
  // The case that held the event loop for seconds with a backtracking match: dots throughout, and no match.
  const near = 'logs://' + 'a.'.repeat(4092) + '!'
  t.equal(near.length, 8192, 'at the cap')
  const start = process.hrtime.bigint()
  const { body } = await call(app, 'resources/read', { uri: near })
  const ms = Number(process.hrtime.bigint() - start) / 1e6
  t.same(body.error, { code: -32602, message: 'Resource not found', data: { uri: near } })
  t.comment(`a near match of 8192 characters against 3 variables: ${ms.toFixed(1)} ms`)
  const over = await call(app, 'resources/read', { uri: 'logs://' + 'a.'.repeat(5000) })
  t.same(over.body.error, { code: -32602, message: 'params.uri is longer than 8192 characters' }, 'past the cap the URI is refused before any match')
  const served = await call(app, 'resources/read', { uri: 'logs://' + 'a.'.repeat(2000) + 'b.c' })
  t.same(served.body.result.contents[0].text, `${'a.'.repeat(1999)}a b c`, 'the longest run goes to the first variable')
  const adjacent = await call(app, 'resources/read', { uri: 'pairs://' + 'x'.repeat(8000) })
  t.same(adjacent.body.result.contents[0].text, `${'x'.repeat(7999)}|x`, 'adjacent variables, no separator')
})

t.test('an escape that is not UTF-8 matches nothing: the read is "not found", not an error', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.resourceTemplate({ uriTemplate: 'users://{id}/profile', name: 'user' }, (_uri, v) => `user ${v.id}`)
  })
  for (const uri of ['users://%FF/profile', 'users://%C3/profile', 'users://%ED%A0%80/profile']) {
    const { status, body } = await call(app, 'resources/read', { uri })
    t.equal(status, 200, uri)
    t.same(body.error, { code: -32602, message: 'Resource not found', data: { uri } }, uri)
  }
  t.same((await call(app, 'resources/read', { uri: 'users://%C3%A9/profile' })).body.result.contents[0].text, 'user é')
})

t.test('templates are checked at registration', async (t) => {
  const app = await build(t)
  const noop = () => 'x'
  t.throws(() => app.mcp.resourceTemplate({ uriTemplate: 't://{a', name: 'x' }, noop), { code: 'FST_MOCAPI_INVALID_DEFINITION', message: /unbalanced brace/ })
  t.throws(() => app.mcp.resourceTemplate({ uriTemplate: 't://{+a}', name: 'x' }, noop), { code: 'FST_MOCAPI_INVALID_DEFINITION', message: /only RFC 6570 level-1/ })
  t.throws(() => app.mcp.resourceTemplate({ uriTemplate: 't://{a}{a}', name: 'x' }, noop), { code: 'FST_MOCAPI_INVALID_DEFINITION', message: /repeats the variable "a"/ })
  t.same(new UriTemplate('fixed://uri', 'x').match('fixed://uri'), {}, 'a template without variables matches itself')
  t.equal(new UriTemplate('fixed://uri', 'x').match('fixed://urix'), undefined)
  t.equal(new UriTemplate('ab', 'x').match('abab'), undefined, 'starts and ends with the template, and is longer')
  t.equal(new UriTemplate('t://{a}', 'x').match('t://'), undefined, 'a variable takes at least one character')
  t.same(new UriTemplate('t://{constructor}', 'x').match('t://v'), { constructor: 'v' }, 'a variable named like a prototype member is an own value')
})
