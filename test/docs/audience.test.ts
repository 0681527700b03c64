/**
 * docs/deploy.md's tokens from an authorization server, over real HTTP: an issuer serving its public key set (a JWKS)
 * on a port of its own, and an app whose @fastify/jwt fetches keys from it with get-jwks and accepts only tokens whose
 * audience is the `resource` that mocapi's RFC 9728 metadata names, configured as the page shows.
 */
import t, { type Test } from 'tap'
import Fastify, { type FastifyInstance, type FastifyRequest } from 'fastify'
import fastifyJwt, { type TokenOrHeader } from '@fastify/jwt'
import buildGetJwks from 'get-jwks'
import { generateKeyPairSync, sign, type KeyObject } from 'node:crypto'
import http from 'node:http'
import type { AddressInfo } from 'node:net'
import mocapi from '../../lib/index.js'
import { KEY, postHttp } from '../helpers.js'

const RESOURCE = 'https://tools.example.com/mcp'
const METADATA = 'https://tools.example.com/.well-known/oauth-protected-resource/mcp'
const KID = 'issuer-key-1'

interface Issuer { url: string, key: KeyObject, fetches: () => number }

/** An authorization server's key set: one RS256 public key at /.well-known/jwks.json; counts the fetches. */
async function startIssuer (t: Test): Promise<Issuer> {
  const { publicKey, privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048 })
  const jwks = JSON.stringify({ keys: [{ ...publicKey.export({ format: 'jwk' }), kid: KID, alg: 'RS256', use: 'sig' }] })
  let fetches = 0
  const server = http.createServer((request, response) => {
    if (request.url !== '/.well-known/jwks.json') return response.writeHead(404).end()
    fetches++
    response.writeHead(200, { 'content-type': 'application/json' }).end(jwks)
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise((resolve) => server.close(resolve)))
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, key: privateKey, fetches: () => fetches }
}

/** An RS256 JWT: `claims` over an issuer's defaults (iss, sub, an hour to live), signed with `key`. */
function token (key: KeyObject, claims: Record<string, unknown>, kid = KID): string {
  const now = Math.floor(Date.now() / 1000)
  const part = (value: object): string => Buffer.from(JSON.stringify(value)).toString('base64url')
  const input = `${part({ alg: 'RS256', typ: 'at+jwt', kid })}.${part({ sub: 'alice', iat: now, exp: now + 3600, ...claims })}`
  return `${input}.${sign('sha256', Buffer.from(input), key).toString('base64url')}`
}

/** The app of docs/deploy.md#tokens-from-an-authorization-server, with `issuer` for ISSUER, listening on loopback. */
async function startApp (t: Test, issuer: string): Promise<{ app: FastifyInstance, url: string }> {
  const ISSUER = issuer
  const jwks = buildGetJwks({ issuersWhitelist: [ISSUER] })
  async function signingKey (_request: FastifyRequest, token: TokenOrHeader): Promise<string> {
    const { kid, alg } = 'header' in token ? token.header : token
    return await jwks.getPublicKey({ domain: ISSUER, kid, alg })
  }
  const app = Fastify()
  await app.register(fastifyJwt, {
    decode: { complete: true },
    secret: signingKey,
    verify: { algorithms: ['RS256'], allowedIss: ISSUER, allowedAud: RESOURCE, requiredClaims: ['iss', 'aud', 'exp'] },
  })
  app.addHook('onRequest', async (request) => {
    if (request.routeOptions.config.mcpPublic !== true) await request.jwtVerify()
  })
  await app.register(mocapi, {
    requestState: { keys: [KEY] },
    protectedResource: { resource: RESOURCE, authorizationServers: [ISSUER] },
  })
  app.mcp.tool({ name: 'whoami' }, (_args, ctx) => `you are ${ctx.principal}`)
  t.teardown(() => app.close())
  await app.listen({ host: '127.0.0.1', port: 0 })
  return { app, url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` }
}

t.test('a token for the resource that the RFC 9728 metadata names reaches the tool; one for another audience is 401 with the challenge', async (t) => {
  const issuer = await startIssuer(t)
  const { url } = await startApp(t, issuer.url)
  const metadata = await (await fetch(`${url}/.well-known/oauth-protected-resource/mcp`)).json() as { resource: string, authorization_servers: string[] }
  t.same(metadata.authorization_servers, [issuer.url])

  const mine = await postHttp(`${url}/mcp`, 'tools/call', { name: 'whoami' }, { token: token(issuer.key, { iss: issuer.url, aud: metadata.resource }) })
  t.equal(mine.status, 200, JSON.stringify(mine.body))
  t.same(mine.body.result.content, [{ type: 'text', text: 'you are alice' }])
  const listed = await postHttp(`${url}/mcp`, 'tools/call', { name: 'whoami' }, { token: token(issuer.key, { iss: issuer.url, aud: ['https://other.example.com/mcp', RESOURCE] }) })
  t.equal(listed.status, 200, 'an audience list that names the resource is accepted')

  const theirs = await postHttp(`${url}/mcp`, 'tools/call', { name: 'whoami' }, { token: token(issuer.key, { iss: issuer.url, aud: 'https://other.example.com/mcp' }) })
  t.equal(theirs.status, 401)
  t.equal(theirs.challenge, `Bearer resource_metadata="${METADATA}"`)
  t.equal(theirs.body.error.code, -32600)
  t.notOk(theirs.body.result, 'the tool did not run')
  t.equal(issuer.fetches(), 1, 'the key set was fetched once, then kept')
})

t.test('no audience, another issuer, an expired token, a forged signature, an unknown key, no token: each 401 with the challenge', async (t) => {
  const issuer = await startIssuer(t)
  const { url } = await startApp(t, issuer.url)
  const now = Math.floor(Date.now() / 1000)
  const stranger = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey
  const cases: Array<[string, string | undefined]> = [
    ['a token without aud', token(issuer.key, { iss: issuer.url })],
    ['a token without iss', token(issuer.key, { aud: RESOURCE })],
    ['a token of another issuer', token(issuer.key, { iss: 'https://other-issuer.example.com', aud: RESOURCE })],
    ['a token without exp', token(issuer.key, { iss: issuer.url, aud: RESOURCE, exp: undefined })],
    ['an expired token', token(issuer.key, { iss: issuer.url, aud: RESOURCE, iat: now - 7200, exp: now - 600 })],
    ['a token signed by a key the issuer never published, under its kid', token(stranger, { iss: issuer.url, aud: RESOURCE })],
    ['a token naming a kid the issuer does not publish', token(stranger, { iss: issuer.url, aud: RESOURCE }, 'unknown')],
    ['no token', undefined],
  ]
  for (const [name, bearer] of cases) {
    const { status, challenge, body } = await postHttp(`${url}/mcp`, 'tools/call', { name: 'whoami' }, { token: bearer })
    t.equal(status, 401, `${name}: ${JSON.stringify(body)}`)
    t.equal(challenge, `Bearer resource_metadata="${METADATA}"`, name)
    t.notOk(body.result, `${name}: the tool did not run`)
  }
})
