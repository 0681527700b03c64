import t from 'tap'
import { requestedSchema } from '../../lib/index.js'
import { accept, createTestClient, textOf } from '../../lib/testing/index.js'
import { build } from '../helpers.js'

t.test('a tool result: its text blocks, joined by newlines', async (t) => {
  t.equal(textOf({
    content: [
      { type: 'text', text: 'Booked' },
      { type: 'image', data: 'AAAA', mimeType: 'image/png' },
      { type: 'resource', resource: { uri: 'file:///ticket', text: 'an embedded resource is not a text block' } },
      { type: 'text', text: 'seat 12A' },
    ],
  }), 'Booked\nseat 12A')
  t.equal(textOf({ content: [], structuredContent: { a: 1 } }), '')
})

t.test('a prompt: the text of its messages; a resource: its text contents', async (t) => {
  t.equal(textOf({
    messages: [
      { role: 'user', content: { type: 'text', text: 'Plan a trip' } },
      { role: 'assistant', content: { type: 'image', data: 'AAAA', mimeType: 'image/png' } },
      { role: 'assistant', content: { type: 'text', text: 'To where?' } },
    ],
  }), 'Plan a trip\nTo where?')
  t.equal(textOf({ contents: [{ uri: 'file:///a', text: 'one' }, { uri: 'file:///b', blob: 'AAAA' }, { uri: 'file:///c', text: 'two' }] }), 'one\ntwo')
})

t.test('the results of real calls, without a cast', async (t) => {
  const app = await build(t, {}, (app) => {
    app.mcp.tool({ name: 'book' }, async (_args, ctx) => {
      const answer = await ctx.elicit('Which cabin?', requestedSchema().choose('cabin', ['economy', 'business']))
      return answer.action === 'accept' ? `Booked ${answer.content.cabin}` : 'Nothing booked'
    })
    app.mcp.prompt({ name: 'plan' }, () => 'Plan a trip')
    app.mcp.resource({ uri: 'file:///notes.txt', name: 'notes' }, () => 'Bring a hat')
  })
  const client = createTestClient(app)
  t.equal(textOf((await client.callTool('book', {}, [accept({ cabin: 'business' })])).result), 'Booked business')
  t.equal(textOf((await client.getPrompt('plan')).result), 'Plan a trip')
  t.equal(textOf((await client.readResource('file:///notes.txt')).result), 'Bring a hat')
})
