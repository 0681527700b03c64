import Fastify from 'fastify'
import { expect, test } from 'tstyche'
import type { CheckedEvents, EventArguments, EventDefinition, EventPayload } from '../lib/index.js'

const app = Fastify()

const inputSchema = { type: 'object', properties: { service: { type: 'string' }, minimum: { enum: ['P1', 'P2'] } }, required: ['service'] } as const
const payloadSchema = {
  type: 'object',
  properties: { service: { type: 'string' }, severity: { enum: ['P1', 'P2', 'P3'] }, count: { type: 'integer' } },
  required: ['service', 'severity'],
} as const

test('a match annotated with the types its schemas describe is accepted', () => {
  expect(app.mcp.event({
    name: 'incident.created',
    inputSchema,
    payloadSchema,
    match: (args: { service: string, minimum?: 'P1' | 'P2' }, data: { service: string, severity: 'P1' | 'P2' | 'P3', count?: number }) =>
      data.service === args.service,
  })).type.not.toRaiseError()
})

test('a match reading a property its schema lacks does not compile', () => {
  expect(app.mcp.event).type.not.toBeCallableWith({
    name: 'incident.created',
    inputSchema,
    payloadSchema,
    match: (args: { service: string }, data: { region: string }) => data.region === args.service,
  })
  expect(app.mcp.event).type.not.toBeCallableWith({
    name: 'incident.created',
    inputSchema,
    payloadSchema,
    match: (args: { team: string }, data: { service: string }) => data.service === args.team,
  })
})

test('a check returning data its payloadSchema refuses does not compile', () => {
  expect(app.mcp.event({
    name: 'deploy.finished',
    inputSchema,
    payloadSchema,
    check: async (args: { service: string }, cursor: string | null) =>
      ({ events: [{ data: { service: args.service, severity: 'P1' as const } }], cursor: cursor ?? 'start' }),
  })).type.not.toRaiseError()
  expect(app.mcp.event).type.not.toBeCallableWith({
    name: 'deploy.finished',
    inputSchema,
    payloadSchema,
    check: async () => ({ events: [{ data: { service: 'api', severity: 'P9' as const } }], cursor: 'next' }),
  })
  expect(app.mcp.event).type.not.toBeCallableWith({
    name: 'deploy.finished',
    inputSchema,
    payloadSchema,
    check: async (args: { team: string }) => ({ events: [], cursor: args.team }),
  })
})

test('an unannotated match gets args and data typed from inputSchema and payloadSchema', () => {
  app.mcp.event({
    name: 'incident.created',
    inputSchema,
    payloadSchema,
    match: (args, data) => {
      expect(args).type.toBe<{ service: string, minimum?: 'P1' | 'P2' }>()
      expect(data).type.toBe<{ service: string, severity: 'P1' | 'P2' | 'P3', count?: number }>()
      return data.service === args.service
    },
  })
  expect(app.mcp.event).type.not.toBeCallableWith({
    name: 'incident.created',
    inputSchema,
    payloadSchema,
    match: (_args: unknown, data: { region: string }) => data.region === 'eu',
  })
})

test('an unannotated check gets args typed from inputSchema, and its events held to payloadSchema', () => {
  app.mcp.event({
    name: 'deploy.finished',
    inputSchema,
    payloadSchema,
    check: async (args, cursor) => {
      expect(args).type.toBe<{ service: string, minimum?: 'P1' | 'P2' }>()
      expect(cursor).type.toBe<string | null>()
      return { events: [{ data: { service: args.service, severity: 'P2' as const } }], cursor: cursor ?? 'start' }
    },
  })
})

test('without schemas, match takes any object', () => {
  app.mcp.event({
    name: 'plain',
    match: (args, data) => {
      expect(args).type.toBe<Record<string, any>>()
      expect(data).type.toBe<Record<string, any>>()
      return true
    },
  })
})

test('the arguments and payload types read both schemas', () => {
  expect<EventArguments<{ name: 'x', inputSchema: typeof inputSchema }>>().type.toBe<{ service: string, minimum?: 'P1' | 'P2' }>()
  expect<EventPayload<{ name: 'x', payloadSchema: typeof payloadSchema }>>().type.toBe<{ service: string, severity: 'P1' | 'P2' | 'P3', count?: number }>()
  expect<EventArguments<{ name: 'x' }>>().type.toBe<Record<string, any>>()
  expect<CheckedEvents['cursor']>().type.toBe<string>()
})

test('emit resolves with the eventId; removeEvent and listEvents', () => {
  expect(app.mcp.emit('incident.created', { service: 'api', severity: 'P1' })).type.toBe<Promise<string>>()
  expect(app.mcp.emit('incident.created', {}, { eventId: 'inc-1' })).type.toBe<Promise<string>>()
  expect(app.mcp.emit).type.not.toBeCallableWith('incident.created', {}, { eventId: 1 })
  expect(app.mcp.removeEvent('incident.created')).type.toBe<boolean>()
  expect(app.mcp.listEvents()).type.toBe<object[]>()
  expect(app.mcp.event({ name: 'x' })).type.toBe<typeof app.mcp>()
})

test('delivery takes the three modes only', () => {
  expect<EventDefinition>().type.toBeAssignableFrom({ name: 'x', delivery: ['poll' as const, 'push' as const] })
  expect<EventDefinition>().type.not.toBeAssignableFrom({ name: 'x', delivery: ['email' as const] })
})
