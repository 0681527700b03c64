import t from 'tap'
import Fastify from 'fastify'
import type { AddressInfo } from 'node:net'
import { readFileSync } from 'node:fs'
import mocapi from '../../lib/index.js'
import { KEY } from '../helpers.js'

const page = readFileSync(new URL('../../docs/reference.md', import.meta.url), 'utf8')

/** The anchor GitHub gives a heading. */
function slug (heading: string): string {
  return heading.toLowerCase().replace(/[^a-z0-9 _-]/g, '').replace(/ /g, '-')
}

t.test('the table of contents of docs/reference.md links every section', async (t) => {
  const contents = page.slice(0, page.indexOf('\n## '))
  for (const [, heading] of page.matchAll(/^## (.+)$/gm)) {
    t.ok(contents.includes(`](#${slug(heading)})`), `"${heading}" is in the table of contents`)
  }
})

t.test('the app.mcp table of docs/reference.md names every method of app.mcp', async (t) => {
  const app = Fastify()
  t.teardown(() => app.close())
  await app.register(mocapi, { requestState: { keys: [KEY] } })
  const start = page.indexOf('| `app.mcp.…` |')
  const table = page.slice(start, page.indexOf('\n\n', start))
  const methods = Object.getOwnPropertyNames(Object.getPrototypeOf(app.mcp)).filter((name) => name !== 'constructor')
  t.ok(methods.length > 10, 'the methods are found')
  for (const method of methods) t.ok(table.includes(`\`${method}(`), `app.mcp.${method} is in the table`)
})

/** The fenced block after the `<!-- wire: <name> -->` marker. */
function wireBlock (name: string): string {
  const found = new RegExp(`<!-- wire: ${name} -->\\n\`\`\`\\w+\\n([\\s\\S]*?)\`\`\`\\n`).exec(page)
  if (found === null) throw new Error(`docs/reference.md has no "${name}" block`)
  return found[1]
}

/** An HTTP message: its start line, its headers and what follows the first blank line. */
function message (text: string): { start: string, headers: Array<[string, string]>, body: string } {
  const split = text.indexOf('\n\n')
  const [start, ...lines] = text.slice(0, split).split('\n')
  const headers = lines.map((line): [string, string] => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()])
  return { start, headers, body: text.slice(split + 2) }
}

t.test('the subscriptions/listen wire example of docs/reference.md is what mocapi answers, frame for frame', async (t) => {
  const request = message(wireBlock('listen request'))
  const expected = message(wireBlock('listen frames'))
  const app = Fastify()
  await app.register(mocapi, { requestState: { keys: [KEY] }, serverInfo: { name: 'travel', version: '1.0.0' }, heartbeat: false })
  app.mcp.resource({ uri: 'prices://today', name: 'prices' }, () => '1.08')
  await app.listen({ host: '127.0.0.1', port: 0 })
  t.teardown(() => app.close())
  const [method, path] = request.start.split(' ')
  const response = await fetch(`http://127.0.0.1:${(app.server.address() as AddressInfo).port}${path}`, {
    method,
    headers: Object.fromEntries(request.headers),
    body: JSON.stringify(JSON.parse(request.body)),
  })
  t.equal(`HTTP/1.1 ${response.status} ${response.statusText}`, expected.start)
  for (const [name, value] of expected.headers) t.equal(response.headers.get(name), value, `the ${name} header`)
  const reader = response.body!.getReader()
  const decoder = new TextDecoder()
  let received = ''
  const frames = (): number => received.split('\n\n').length - 1
  const read = async (count: number): Promise<void> => {
    while (frames() < count) {
      const { value, done } = await reader.read()
      if (done) return
      received += decoder.decode(value, { stream: true })
    }
  }
  await read(1)
  app.mcp.tool({ name: 'convert_currency' }, () => '1.08')
  app.mcp.notifyResourceUpdated('prices://today')
  await read(3)
  await app.close()
  await read(4)
  t.equal(received, expected.body)
})
