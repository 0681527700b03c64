import t, { type Test } from 'tap'
import { execFileSync } from 'node:child_process'
import { pbkdf2, randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import http from 'node:http'
import https from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { TLSSocket } from 'node:tls'
import { Webhook } from 'standardwebhooks'
import { CallbackGuard, CallbackRefused, type CheckedCallback } from '../../lib/events/guard.js'
import { postJson } from '../../lib/events/post.js'
import { parseSecret, signedHeaders } from '../../lib/events/sign.js'

type Handler = (request: http.IncomingMessage, response: http.ServerResponse) => void

async function listen (t: Test, server: http.Server): Promise<number> {
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>((resolve) => {
    server.closeAllConnections()
    server.close(() => resolve())
  }))
  return (server.address() as AddressInfo).port
}

function serve (t: Test, handler: Handler): Promise<number> {
  return listen(t, http.createServer(handler))
}

/** Open connections on `server` once the client has had a moment to let go. */
async function openConnections (server: http.Server): Promise<number> {
  await new Promise((resolve) => setTimeout(resolve, 50))
  return new Promise((resolve, reject) => server.getConnections((error, count) => error ? reject(error) : resolve(count)))
}

function local (port: number, path = '/hook', host = '127.0.0.1', scheme = 'http'): CheckedCallback {
  return { url: new URL(`${scheme}://${host}:${port}${path}`), address: '127.0.0.1', family: 4 }
}

const OPTIONS = { timeoutMs: 2_000, maxResponseBytes: 65_536 }

// A key made of 24 to 64 random bytes, as the `whsec_` text a client sends.
const secretOf = (bytes: number): string => `whsec_${randomBytes(bytes).toString('base64')}`

t.test('a whsec_ secret of 24 to 64 bytes gives its key bytes', async (t) => {
  for (const bytes of [24, 32, 64]) {
    const key = randomBytes(bytes)
    t.same(parseSecret(`whsec_${key.toString('base64')}`), key, `${bytes} bytes`)
  }
  const key = randomBytes(32)
  t.same(parseSecret(`whsec_${key.toString('base64').replace(/=+$/, '')}`), key, 'padding may be left off')
})

t.test('anything else is not a secret', async (t) => {
  const valid = secretOf(32)
  const noncanonical = valid.slice(0, -2) + (valid.at(-2) === 'B' ? 'C' : 'B') + '='  // unused bits set: decodes the same
  const bad = [undefined, null, 42, {}, '', 'whsec_', valid.slice(6), `WHSEC_${valid.slice(6)}`, secretOf(23),
    secretOf(65), noncanonical, `${valid}=`, `${valid.slice(0, 20)} ${valid.slice(20)}`,
    `whsec_${randomBytes(32).toString('base64url')}-_`, `whsec_${'='.repeat(44)}`]
  t.same(bad.map((value) => parseSecret(value)), bad.map(() => undefined))
})

t.test('a signed delivery verifies with the standardwebhooks package, and a tampered one does not', async (t) => {
  const secret = secretOf(32)
  const body = JSON.stringify({ eventId: 'inc-123', name: 'incident.created', data: { service: 'api' } })
  const now = Date.now()
  const headers = signedHeaders(parseSecret(secret) as Buffer, 'inc-123', body, now)
  t.equal(headers['webhook-id'], 'inc-123')
  t.equal(headers['webhook-timestamp'], String(Math.floor(now / 1000)))
  t.match(headers['webhook-signature'], /^v1,[A-Za-z0-9+/]{43}=$/)
  t.same(new Webhook(secret).verify(body, headers), JSON.parse(body))
  t.throws(() => new Webhook(secret).verify(body.replace('api', 'web'), headers), /signature/i, 'tampered body')
  t.throws(() => new Webhook(secretOf(32)).verify(body, headers), /signature/i, 'another secret')
  t.throws(() => new Webhook(secret).verify(body, { ...headers, 'webhook-id': 'inc-124' }), /signature/i, 'another id')
})

async function refusal (guard: CallbackGuard, url: string): Promise<{ reason: string, message: string }> {
  try {
    await guard.check(url)
  } catch (error) {
    if (error instanceof CallbackRefused) return { reason: error.reason, message: error.message }
    throw error
  }
  throw new Error(`${url} passed`)
}

t.test('callbacks to addresses that are not globally routable are refused, naming the host and why', async (t) => {
  const guard = new CallbackGuard([])
  const refused = {
    'https://127.0.0.1/': '"127.0.0.1" is a loopback address',
    'https://[::1]/': '"[::1]" is a loopback address',
    'https://localhost/': '"localhost" resolves to 127.0.0.1, a loopback address',
    'https://10.1.2.3/': '"10.1.2.3" is a private address',
    'https://192.168.0.10:8443/x': '"192.168.0.10" is a private address',
    'https://172.16.5.4/': '"172.16.5.4" is a private address',
    'https://172.31.255.255/': '"172.31.255.255" is a private address',
    'https://169.254.169.254/latest/meta-data': '"169.254.169.254" is a link-local address',
    'https://[fe80::1]/': '"[fe80::1]" is a link-local address',
    'https://[fc00::1]/': '"[fc00::1]" is a unique local address',
    'https://[::ffff:127.0.0.1]/': '"[::ffff:7f00:1]" is a loopback address',
    'https://[::ffff:10.0.0.1]/': '"[::ffff:a00:1]" is a private address',
    'https://0.0.0.0/': '"0.0.0.0" is an unspecified address',
    'https://224.0.0.1/': '"224.0.0.1" is a multicast address',
    'https://100.64.0.1/': '"100.64.0.1" is a carrier-grade NAT address',
    'https://192.0.2.1/': '"192.0.2.1" is a reserved address',
    'https://255.255.255.255/': '"255.255.255.255" is a broadcast address',
    'https://[2002:7f00:1::]/': '"[2002:7f00:1::]" is a special-purpose (6to4) address',
    'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/': 'is a special-purpose (teredo) address',
    'https://0x7f000001/': '"127.0.0.1" is a loopback address',
  }
  for (const [url, why] of Object.entries(refused)) {
    const { reason, message } = await refusal(guard, url)
    t.equal(reason, 'blocked_address', url)
    t.ok(message.includes(why), `${url}: ${message}`)
    t.ok(message.endsWith('; callbacks must reach a public address (events.webhooks.allow lists exceptions)'), url)
  }
})

t.test('a public https callback passes with the address to connect to', async (t) => {
  const guard = new CallbackGuard(['http://127.0.0.1:*'])
  const passed = await guard.check('https://8.8.8.8/hooks?tenant=1')
  t.same({ ...passed, url: passed.url.href }, { url: 'https://8.8.8.8/hooks?tenant=1', address: '8.8.8.8', family: 4 })
  t.same(await guard.check('https://[2606:4700::1111]:8443/'), {
    url: new URL('https://[2606:4700::1111]:8443/'), address: '2606:4700::1111', family: 6,
  })
  t.equal((await guard.check('https://[::ffff:8.8.4.4]/')).address, '::ffff:808:404', 'a mapped public IPv4')
})

t.test('callbacks must be https, without credentials, and a URL', async (t) => {
  const guard = new CallbackGuard([])
  t.same(await refusal(guard, 'http://example.com/hook'), {
    reason: 'not_https',
    message: 'callback URL for "example.com" must be https, got http: (events.webhooks.allow lists exceptions)',
  })
  t.equal((await refusal(guard, 'ftp://example.com/')).reason, 'not_https')
  const credentials = await refusal(guard, 'https://admin:hunter2@example.com/hook')
  t.same(credentials, { reason: 'invalid_url', message: 'callback URL for "example.com" must not carry a user name or password' })
  t.equal((await refusal(guard, 'https://token@example.com/')).reason, 'invalid_url')
  t.same(await refusal(guard, 'not a url'), { reason: 'invalid_url', message: 'callback URL "not a url" is not a valid URL' })
  const long = await refusal(guard, `::${'x'.repeat(5_000)}`)
  t.equal(long.reason, 'invalid_url')
  t.ok(long.message.length < 260, 'a long value is cut')
  t.equal((await refusal(guard, 42 as unknown as string)).message, 'callback URL "42" is not a valid URL')
})

t.test('a host that does not resolve, or not in time, is refused', async (t) => {
  t.same(await refusal(new CallbackGuard([]), 'https://does-not-resolve.invalid/'), {
    reason: 'unresolvable', message: 'callback host "does-not-resolve.invalid" does not resolve (ENOTFOUND)',
  })
  t.equal((await refusal(new CallbackGuard(['http://does-not-resolve.invalid:*']), 'http://does-not-resolve.invalid:1/')).reason,
    'unresolvable', 'allowed origins still resolve')
  // Lookups share libuv's thread pool: keep it busy so the lookup waits longer than the guard does.
  const busy = Array.from({ length: 16 }, () => new Promise((resolve) => pbkdf2('a', 'b', 100_000, 32, 'sha256', resolve)))
  const slow = await refusal(new CallbackGuard([], { lookupTimeoutMs: 10 }), 'https://localhost/')
  t.same(slow, { reason: 'unresolvable', message: 'callback host "localhost" does not resolve (no answer within 10 ms)' })
  await Promise.all(busy)
})

t.test('an allowed origin passes over http to a local address, and its address is returned', async (t) => {
  const guard = new CallbackGuard(['http://127.0.0.1:*', 'HTTP://LocalHost:8080', 'https://hooks.internal.example',
    'http://[::1]:*'])
  t.same(await guard.check('http://127.0.0.1:3000/hook'), { url: new URL('http://127.0.0.1:3000/hook'), address: '127.0.0.1', family: 4 })
  t.same(await guard.check('http://127.0.0.1/'), { url: new URL('http://127.0.0.1/'), address: '127.0.0.1', family: 4 })
  t.same(await guard.check('http://localhost:8080/x'), { url: new URL('http://localhost:8080/x'), address: '127.0.0.1', family: 4 })
  t.same(await guard.check('http://[::1]:9/'), { url: new URL('http://[::1]:9/'), address: '::1', family: 6 })
  t.equal((await refusal(guard, 'http://localhost:8081/')).reason, 'not_https', 'another port')
  t.equal((await refusal(guard, 'https://127.0.0.1:3000/')).reason, 'blocked_address', 'another scheme')
  t.equal((await refusal(guard, 'https://hooks.internal.example:8443/')).reason, 'unresolvable', 'not the default port')
  t.equal((await refusal(guard, 'http://user@127.0.0.1:3000/')).reason, 'invalid_url', 'credentials even when allowed')
})

t.test('allow entries are origins, checked at construction', async (t) => {
  const bad = ['http://127.0.0.1:*/', 'https://hooks.example/path', 'https://hooks.example?x=1', 'https://u:p@hooks.example',
    'ftp://hooks.example', 'hooks.example', 'https://hooks.example:99999', 'https://hooks.example:**', 'https://', 42]
  for (const entry of bad) {
    t.throws(() => new CallbackGuard(['http://127.0.0.1:*', entry as string]), {
      code: 'FST_MOCAPI_INVALID_OPTION',
      message: `mocapi: events.webhooks.allow[1] must be an origin scheme://host[:port] (http or https; the port may be *), got ${typeof entry === 'string' ? JSON.stringify(entry) : entry}`,
    }, String(entry))
  }
  t.throws(() => new CallbackGuard('http://127.0.0.1:*' as unknown as string[]), {
    message: 'mocapi: events.webhooks.allow must be an array of origins, got "http://127.0.0.1:*"',
  })
})

t.test('a 2xx delivers to the checked address with the URL host, JSON and the given headers', async (t) => {
  const seen: Array<{ method?: string, url?: string, headers: http.IncomingHttpHeaders, body: string }> = []
  const server = http.createServer((request, response) => {
    let body = ''
    request.on('data', (chunk) => { body += chunk })
    request.on('end', () => {
      seen.push({ method: request.method, url: request.url, headers: request.headers, body })
      response.writeHead(200, { 'content-type': 'application/json' }).end('{"challenge":"abc"}')
    })
  })
  const port = await listen(t, server)
  const body = JSON.stringify({ type: 'verification', challenge: 'abc', note: 'é' })
  const target = { url: new URL(`http://does-not-resolve.invalid:${port}/hooks/mcp?tenant=7#frag`), address: '127.0.0.1', family: 4 as const }
  const outcome = await postJson(target, { 'webhook-id': 'msg_1', 'X-MCP-Subscription-Id': 'sub-1' }, body, OPTIONS)
  t.same(outcome, { ok: true, status: 200, body: '{"challenge":"abc"}' })
  t.equal(seen.length, 1)
  t.match(seen[0], {
    method: 'POST',
    url: '/hooks/mcp?tenant=7',
    headers: {
      host: `does-not-resolve.invalid:${port}`,
      'content-type': 'application/json',
      'content-length': String(Buffer.byteLength(body)),
      'webhook-id': 'msg_1',
      'x-mcp-subscription-id': 'sub-1',
    },
    body,
  })
  t.equal(await openConnections(server), 0, 'nothing kept alive')
})

t.test('the answer status decides the outcome, and a redirect is not followed', async (t) => {
  let redirected = 0
  const elsewhere = await serve(t, (_request, response) => { redirected++; response.end('moved here') })
  const port = await serve(t, (request, response) => {
    const status = Number(request.url?.slice(1))
    if (status === 302) response.setHeader('location', `http://127.0.0.1:${elsewhere}/`)
    response.writeHead(status).end(`status ${status}`)
  })
  const outcomes: Record<number, unknown> = {}
  for (const status of [204, 302, 400, 410, 413, 425, 500, 503]) outcomes[status] = await postJson(local(port, `/${status}`), {}, '{}', OPTIONS)
  t.same(outcomes, {
    204: { ok: true, status: 204, body: '' },
    302: { ok: false, status: 302, error: 'http_4xx' },
    400: { ok: false, status: 400, error: 'http_4xx' },
    410: { ok: false, status: 410, error: 'http_4xx' },
    413: { ok: false, status: 413, error: 'http_4xx' },
    425: { ok: false, status: 425, error: 'http_4xx' },
    500: { ok: false, status: 500, error: 'http_5xx' },
    503: { ok: false, status: 503, error: 'http_5xx' },
  })
  t.equal(redirected, 0, 'the redirect target is never reached')
})

t.test('a receiver that never answers times out within the bound and keeps no connection', async (t) => {
  const server = http.createServer(() => {})
  const port = await listen(t, server)
  const started = Date.now()
  t.same(await postJson(local(port), {}, '{}', { ...OPTIONS, timeoutMs: 200 }), { ok: false, error: 'timeout' })
  const took = Date.now() - started
  t.ok(took >= 190 && took < 1_000, `took ${took} ms`)
  t.equal(await openConnections(server), 0)
})

t.test('a receiver that answers its status and then stalls times out with that status', async (t) => {
  const server = http.createServer((_request, response) => { response.writeHead(200, { 'content-length': '100' }).write('{"chall') })
  const port = await listen(t, server)
  t.same(await postJson(local(port), {}, '{}', { ...OPTIONS, timeoutMs: 200 }), { ok: false, status: 200, error: 'timeout' })
  t.equal(await openConnections(server), 0)
})

t.test('a receiver that hangs up or resets mid-answer is judged on its status', async (t) => {
  const port = await serve(t, (request, response) => {
    const reset = request.url === '/reset'
    response.writeHead(reset ? 503 : 200, { 'content-length': '100' }).write('{"chall', () => setTimeout(() => {
      if (reset) response.socket?.resetAndDestroy()
      else response.socket?.destroy()
    }, 20))
  })
  t.same(await postJson(local(port), {}, '{}', OPTIONS), { ok: true, status: 200, body: '{"chall' })
  t.same(await postJson(local(port, '/reset'), {}, '{}', OPTIONS), { ok: false, status: 503, error: 'http_5xx' })
})

t.test('a receiver that hangs up before answering, or is not listening, is connection_refused', async (t) => {
  const port = await serve(t, (request) => { request.socket.destroy() })
  t.same(await postJson(local(port), {}, '{}', OPTIONS), { ok: false, error: 'connection_refused' })
  const closed = http.createServer()
  await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve))
  const free = (closed.address() as AddressInfo).port
  await new Promise((resolve) => closed.close(resolve))
  t.same(await postJson(local(free), {}, '{}', OPTIONS), { ok: false, error: 'connection_refused' })
})

t.test('a huge answer is cut at maxResponseBytes and the rest is not read', async (t) => {
  const LIMIT = 64 * 1024 * 1024
  let written = 0
  let closed = false
  const server = http.createServer((_request, response) => {
    response.writeHead(500)
    const chunk = Buffer.alloc(16_384, 'x')
    // Writes until the socket's buffer is full, then again on each drain, until the client goes away.
    const more = (): void => {
      if (closed || written >= LIMIT) return
      written += chunk.length
      if (response.write(chunk)) setImmediate(more)
      else response.once('drain', more)
    }
    response.on('close', () => { closed = true })
    more()
  })
  const port = await listen(t, server)
  t.same(await postJson(local(port), {}, '{}', { ...OPTIONS, maxResponseBytes: 1_000 }), { ok: false, status: 500, error: 'http_5xx' })
  const ok = await serve(t, (_request, response) => { response.end('y'.repeat(5_000)) })
  t.same(await postJson(local(ok), {}, '{}', { ...OPTIONS, maxResponseBytes: 1_000 }), { ok: true, status: 200, body: 'y'.repeat(1_000) })
  t.equal(await openConnections(server), 0)
  t.ok(closed && written < LIMIT, `the receiver stopped after ${written} bytes`)
})

function certificate (dir: string, name: string): { key: Buffer, cert: Buffer } {
  const key = join(dir, `${name}.key`)
  const cert = join(dir, `${name}.crt`)
  execFileSync('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes',
    '-keyout', key, '-out', cert, '-days', '1', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1'], { stdio: 'ignore' })
  return { key: readFileSync(key), cert: readFileSync(cert) }
}

t.test('https delivers with SNI for the URL host, and a certificate from another CA is a tls_error', async (t) => {
  const dir = mkdtempSync(join(tmpdir(), 'mocapi-webhook-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const { key, cert } = certificate(dir, 'server')
  const other = certificate(dir, 'other')
  const names: unknown[] = []
  const server = https.createServer({ key, cert }, (request, response) => {
    names.push((request.socket as TLSSocket).servername)
    response.end('ok')
  })
  const port = await listen(t, server)
  t.same(await postJson(local(port, '/', 'localhost', 'https'), {}, '{}', { ...OPTIONS, ca: cert }), { ok: true, status: 200, body: 'ok' })
  t.same(await postJson(local(port, '/', '127.0.0.1', 'https'), {}, '{}', { ...OPTIONS, ca: cert }), { ok: true, status: 200, body: 'ok' })
  t.same(names, ['localhost', false], 'SNI carries the host name, never an address')
  t.same(await postJson(local(port, '/', 'localhost', 'https'), {}, '{}', { ...OPTIONS, ca: other.cert }), { ok: false, error: 'tls_error' })
  t.same(await postJson(local(port, '/', 'localhost', 'https'), {}, '{}', OPTIONS), { ok: false, error: 'tls_error' })
  const plain = await serve(t, (_request, response) => { response.end('not tls') })
  t.same(await postJson(local(plain, '/', 'localhost', 'https'), {}, '{}', { ...OPTIONS, ca: cert }), { ok: false, error: 'tls_error' })
  t.equal(names.length, 2, 'the refused handshakes sent nothing')
})

t.test('check then post: the delivery reaches the address the guard checked', async (t) => {
  const hosts: Array<string | undefined> = []
  const port = await serve(t, (request, response) => { hosts.push(request.headers.host); response.writeHead(204).end() })
  const checked = await new CallbackGuard(['http://127.0.0.1:*']).check(`http://127.0.0.1:${port}/hook`)
  t.same(await postJson(checked, {}, '{}', OPTIONS), { ok: true, status: 204, body: '' })
  const elsewhere = { url: new URL(`http://does-not-resolve.invalid:${port}/x`), address: '127.0.0.1', family: 4 as const }
  t.same(await postJson(elsewhere, {}, '{}', OPTIONS), { ok: true, status: 204, body: '' })
  const v6 = { url: new URL(`http://[::1]:${port}/x`), address: '127.0.0.1', family: 4 as const }
  t.same(await postJson(v6, {}, '{}', OPTIONS), { ok: true, status: 204, body: '' })
  t.same(hosts, [`127.0.0.1:${port}`, `does-not-resolve.invalid:${port}`, `[::1]:${port}`])
})
