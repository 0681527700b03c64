import Fastify from 'fastify'
import { expect, test } from 'tstyche'
import {
  McpClientError, accept, answers, byKind, cancel, createTestClient, decline, roots, sampled, textOf,
  type AnswerFunction, type Answers, type CallToolResult, type CreateMessageParams, type CreateMessageResult, type ElicitResult,
  type GetPromptResult, type InputRequestView, type ListRootsResult, type Outcome, type ReadResourceResult, type RequestedSchema,
  type Round, type TestClient, type TestTarget, type LegacyProtocolVersion, type CompleteResult,
} from '../lib/testing/index.js'

const client = createTestClient(Fastify())

test('a client of a Fastify app or of a URL', () => {
  expect(createTestClient).type.toBeCallableWith(Fastify())
  expect(createTestClient).type.toBeCallableWith('http://127.0.0.1:3000/mcp', { token: 't', maxRounds: 3 })
  expect(createTestClient).type.toBeCallableWith(new URL('http://127.0.0.1:3000/mcp'))
  expect(createTestClient).type.not.toBeCallableWith(3000)
  expect(createTestClient).type.not.toBeCallableWith(Fastify(), { maxRounds: '3' })
  expect(client).type.toBe<TestClient>()
})

test('a client of several apps or URLs, used in turn', () => {
  expect(createTestClient).type.toBeCallableWith([Fastify(), Fastify()])
  expect(createTestClient).type.toBeCallableWith(['http://a:3000/mcp', new URL('http://b:3000/mcp')], { token: 't' })
  expect(createTestClient).type.toBeCallableWith([Fastify(), 'http://b:3000/mcp'])
  expect(createTestClient).type.toBeCallableWith(['http://a:3000/mcp', 'http://b:3000/mcp'] as const)
  const fleet: TestTarget[] = [Fastify(), 'http://b:3000/mcp']
  expect(createTestClient(fleet)).type.toBe<TestClient>()
  expect<TestTarget>().type.toBeAssignableFrom(new URL('http://a:3000/mcp'))
  expect(createTestClient).type.not.toBeCallableWith([3000])
  expect(createTestClient).type.not.toBeCallableWith([Fastify(), { url: 'http://b:3000/mcp' }])
})

test('the answer callback sees the union, narrowed by kind', async () => {
  await client.callTool('book', { to: 'Lisbon' }, (request) => {
    expect(request).type.toBe<InputRequestView>()
    expect(request.key).type.toBe<string>()
    if (request.kind === 'elicit') {
      expect(request.schema).type.toBe<RequestedSchema>()
      expect(request.message).type.toBe<string>()
      return accept({ confirm: true, cabin: 'economy', seats: 2, tags: ['a'] })
    }
    if (request.kind === 'elicitUrl') {
      expect(request.url).type.toBe<string>()
      return decline()
    }
    if (request.kind === 'sample') {
      expect(request.params).type.toBe<CreateMessageParams>()
      return sampled('Paris')
    }
    expect(request.kind).type.toBe<'roots'>()
    return roots('file:///home')
  })
})

test('answers: a function, an object by key, or a queue', () => {
  expect<Answers>().type.toBeAssignableFrom((_request: InputRequestView) => cancel())
  expect<Answers>().type.toBeAssignableFrom(async () => accept())
  expect<Answers>().type.toBeAssignableFrom({ 'elicit-1': accept({ ok: true }), seat: () => decline() })
  expect<Answers>().type.toBeAssignableFrom([accept({ n: 1 }), decline(), () => cancel()])
  expect<Answers>().type.toBeAssignableFrom(answers([accept()]))
  expect<Answers>().type.not.toBeAssignableFrom({ 'elicit-1': { action: 'maybe' } })
  expect<Answers>().type.not.toBeAssignableFrom(() => 'yes')
  expect(answers([])).type.toBe<AnswerFunction>()
})

test('byKind types each handler by its kind', () => {
  expect(byKind).type.toBeCallableWith({ elicit: (request: { schema: RequestedSchema }) => accept({ x: request.schema.type }) })
  expect(byKind).type.toBeCallableWith({ sample: () => sampled('x'), roots: () => roots() })
  expect(byKind).type.not.toBeCallableWith({ sample: () => accept() })
  expect(byKind).type.not.toBeCallableWith({ roots: () => sampled('x') })
  expect(byKind).type.not.toBeCallableWith({ elicit: (request: { url: string }) => accept({ u: request.url }) })
})

test('builders', () => {
  expect(accept({ a: 'x', b: 1, c: true, d: ['y'] })).type.toBe<ElicitResult>()
  expect(accept).type.not.toBeCallableWith({ nested: { a: 1 } })
  expect(sampled('x')).type.toBe<CreateMessageResult>()
  expect(roots('file:///a', { uri: 'file:///b', name: 'b' })).type.toBe<ListRootsResult>()
})

test('results are typed per method, with the rounds they took', async () => {
  const tool = await client.callTool('book')
  expect(tool).type.toBe<Outcome<CallToolResult>>()
  expect(tool.result.resultType).type.toBe<'complete'>()
  expect(tool.result.isError).type.toBe<boolean | undefined>()
  expect(tool.rounds).type.toBe<Round[]>()
  expect(tool.roundTrips).type.toBe<number>()
  const prompt = await client.getPrompt('plan', { city: 'Kyoto' })
  expect(prompt.result.messages).type.toBe<GetPromptResult['messages']>()
  expect(client.getPrompt).type.not.toBeCallableWith('plan', { days: 3 })
  const resource = await client.readResource('file:///a', [accept()])
  expect(resource.result).type.toBeAssignableTo<ReadResourceResult>()
  expect(await client.request('tools/list')).type.toBe<Record<string, unknown>>()
})

test('textOf reads the text of a tool, prompt or resource result', async () => {
  expect(textOf((await client.callTool('book')).result)).type.toBe<string>()
  expect(textOf((await client.getPrompt('plan')).result)).type.toBe<string>()
  expect(textOf((await client.readResource('file:///a')).result)).type.toBe<string>()
  expect(textOf).type.toBeCallableWith({ content: [{ type: 'text', text: 'x' }] })
  expect(textOf).type.not.toBeCallableWith(await client.callTool('book'))
  expect(textOf).type.not.toBeCallableWith({ content: 'x' })
  expect(textOf).type.not.toBeCallableWith('x')
})

test('errors carry the JSON-RPC code, data and HTTP status', () => {
  const error = new McpClientError('x', { code: -32602, status: 200, rounds: [] })
  expect(error.code).type.toBe<number | undefined>()
  expect(error.status).type.toBe<number>()
  expect(error.data).type.toBe<unknown>()
  expect(error.rounds).type.toBe<Round[]>()
  expect(error).type.toBeAssignableTo<Error>()
})

test('a client of a 2025 revision: its results carry no resultType', async () => {
  const legacy = createTestClient(Fastify(), { protocolVersion: '2025-11-25' })
  expect(legacy).type.toBe<TestClient<'2025-11-25'>>()
  const outcome = await legacy.callTool('book', {}, { 'elicit-1': accept({ confirm: true }) })
  expect(outcome).type.toBe<Outcome<CallToolResult, '2025-11-25'>>()
  expect(outcome.result).type.not.toHaveProperty('resultType')
  expect(outcome.result.content).type.toBe<CallToolResult['content']>()
  expect(outcome.rounds).type.toBe<Round[]>()
  expect(textOf(outcome.result)).type.toBe<string>()
  expect((await createTestClient('http://a:3000/mcp', { protocolVersion: '2025-03-26' }).getPrompt('plan')).result).type.not.toHaveProperty('resultType')
  expect<LegacyProtocolVersion>().type.toBe<'2025-11-25' | '2025-06-18' | '2025-03-26'>()
})

test('any other version: a 2026-07-28 client naming it; a version known only as a string may go either way', async () => {
  expect((await createTestClient(Fastify(), { protocolVersion: '2026-07-28' }).callTool('x')).result.resultType).type.toBe<'complete'>()
  expect((await createTestClient(Fastify(), { protocolVersion: '1900-01-01' }).callTool('x')).result.resultType).type.toBe<'complete'>()
  const version: string = '2025-06-18'
  expect((await createTestClient(Fastify(), { protocolVersion: version }).callTool('x')).result.resultType).type.toBe<'complete' | undefined>()
  expect<CompleteResult<CallToolResult, '2025-06-18'>>().type.toBeAssignableTo<CallToolResult>()
  expect(createTestClient).type.not.toBeCallableWith(Fastify(), { protocolVersion: 20250618 })
})
