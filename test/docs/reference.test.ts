import t from 'tap'
import Fastify from 'fastify'
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
