import Fastify from 'fastify'
import { expect, test } from 'tstyche'
import {
  InProcessBus, type CreateMessageResult, type GetPromptResult, type McpContext, type NotificationBus, type PromptDefinition,
  type ResourceDefinition, type Root, type ToolDefinition, type ViewDefinition, UI_EXTENSION, VIEW_MIME_TYPE,
} from '../lib/index.js'

test('prompts: handlers get string arguments', () => {
  const app = Fastify()
  app.mcp.prompt({ name: 'p', arguments: [{ name: 'city', required: true, complete: ['Lisbon'] }] }, (args, ctx) => {
    expect(args).type.toBe<Record<string, string>>()
    expect(ctx).type.toBe<McpContext>()
    return `Visit ${args.city}`
  })
  expect(app.mcp.listPrompts()).type.toBe<PromptDefinition[]>()
  expect<GetPromptResult>().type.toBeAssignableFrom({ messages: [{ role: 'user' as const, content: { type: 'text' as const, text: 'x' } }] })
  expect<GetPromptResult>().type.not.toBeAssignableFrom({ messages: [{ role: 'system', content: { type: 'text', text: 'x' } }] })
})

test('resources and templates', () => {
  const app = Fastify()
  app.mcp.resource({ uri: 'file:///a', name: 'a', mimeType: 'text/plain', cache: { ttlMs: 10, cacheScope: 'private' } }, (uri) => {
    expect(uri).type.toBe<string>()
    return 'text'
  })
  app.mcp.resourceTemplate({ uriTemplate: 'users://{id}', name: 'user', complete: { id: ['1'] } }, (_uri, vars) => {
    expect(vars).type.toBe<Record<string, string>>()
    return undefined
  })
  expect(app.mcp.listResources()).type.toBe<ResourceDefinition[]>()
  expect(app.mcp.resource).type.not.toBeCallableWith({ uri: 'file:///a' }, () => 'x')
})

test('canAccess takes the context', () => {
  expect<ToolDefinition>().type.toBeAssignableFrom({ name: 't', canAccess: (ctx: McpContext) => ctx.principal !== null })
  expect<ToolDefinition>().type.toBeAssignableFrom({ name: 't', canAccess: async () => true })
  expect<ToolDefinition>().type.not.toBeAssignableFrom({ name: 't', canAccess: 'admin' })
})

test('sampling and roots are typed (and deprecated)', () => {
  const app = Fastify()
  app.mcp.tool({ name: 't' }, async (_args, ctx) => {
    expect(await ctx.sample({ messages: [], maxTokens: 10 })).type.toBe<CreateMessageResult>()
    expect(await ctx.listRoots()).type.toBe<Root[]>()
    expect(ctx.sample).type.not.toBeCallableWith({ messages: [] })
    return 'x'
  })
})

test('a bus implements the interface', () => {
  expect(new InProcessBus()).type.toBeAssignableTo<NotificationBus>()
  expect<NotificationBus>().type.toBeAssignableFrom({ publish: () => {}, subscribe: () => () => {} })
  expect<NotificationBus>().type.not.toBeAssignableFrom({ publish: () => {} })
})

test('list helpers and notifications', () => {
  const app = Fastify()
  expect(app.mcp.notifyListChanged).type.toBeCallableWith('tools')
  expect(app.mcp.notifyListChanged).type.not.toBeCallableWith('everything')
  expect(app.mcp.notifyResourceUpdated).type.toBeCallableWith('file:///a')
  expect(app.mcp.removeTool('x')).type.toBe<boolean>()
})

test('views: html, a function of the context, or a file; a tool links one with ui', () => {
  const app = Fastify()
  app.mcp.uiResource({ uri: 'ui://a/card', name: 'card', html: '<!doctype html>', csp: { connectDomains: ['https://api.example.com'] }, prefersBorder: true })
  app.mcp.uiResource({ uri: 'ui://a/mine', name: 'mine', html: async (ctx) => `<p>${ctx.principal}</p>`, permissions: { camera: {} } })
  app.mcp.uiResource({ uri: 'ui://a/file', name: 'file', file: new URL('file:///card.html'), domain: 'a.example.com' })
  expect(app.mcp.uiResource).type.not.toBeCallableWith({ uri: 'ui://a', name: 'a', html: 5 })
  expect(app.mcp.uiResource).type.not.toBeCallableWith({ uri: 'ui://a', name: 'a', html: 'x', csp: { scriptDomains: [] } })
  expect(app.mcp.uiResource).type.not.toBeCallableWith({ uri: 'ui://a', name: 'a', html: 'x', mimeType: 'text/html' })
  expect<ViewDefinition>().type.not.toBeAssignableFrom({ uri: 'ui://a', name: 'a', html: 'x', permissions: { camera: true } })
  expect<ToolDefinition>().type.toBeAssignableFrom({ name: 't', ui: { resourceUri: 'ui://a/card', visibility: ['app' as const] } })
  expect<ToolDefinition>().type.not.toBeAssignableFrom({ name: 't', ui: { visibility: ['user'] } })
  expect(UI_EXTENSION).type.toBe<'io.modelcontextprotocol/ui'>()
  expect(VIEW_MIME_TYPE).type.toBe<'text/html;profile=mcp-app'>()
  app.mcp.tool({ name: 'shown', ui: { resourceUri: 'ui://a/card' } }, (_args, ctx) => {
    expect(ctx.clientSupports(UI_EXTENSION)).type.toBe<boolean>()
    return 'x'
  })
})
