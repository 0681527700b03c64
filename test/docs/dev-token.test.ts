import t from 'tap'
import Fastify from 'fastify'
import fastifyJwt from '@fastify/jwt'
import { execFileSync } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readFileSync } from 'node:fs'

// docs/deploy.md's development token, run exactly as the page shows it.
const page = readFileSync(new URL('../../docs/deploy.md', import.meta.url), 'utf8')
const block = /<!-- dev-token -->\n```sh\n(node -e "[^\n]*")\n```/.exec(page)

t.test('the development token one-liner of docs/deploy.md makes a token @fastify/jwt accepts', async (t) => {
  t.ok(block, 'the page has the one-liner')
  const script = /^node -e "(.*)"$/.exec(block![1])![1]
  const secret = randomBytes(32).toString('hex')
  const token = execFileSync(process.execPath, ['-e', script], { env: { ...process.env, JWT_SECRET: secret }, encoding: 'utf8' }).trim()
  const app = Fastify()
  await app.register(fastifyJwt, { secret })
  app.get('/me', async (request) => { await request.jwtVerify(); return request.user })
  t.teardown(() => app.close())
  const me = await app.inject({ url: '/me', headers: { authorization: `Bearer ${token}` } })
  t.equal(me.statusCode, 200)
  t.match(me.json(), { sub: 'dev' })
  const other = await app.inject({ url: '/me', headers: { authorization: `Bearer ${token.slice(0, -2)}xx` } })
  t.equal(other.statusCode, 401, 'a token changed by a byte is refused: the check is real')
})
