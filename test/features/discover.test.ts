import t from 'tap'
import { build, call } from '../helpers.js'

t.test('server/discover: versions, capabilities from what is registered, caching', async (t) => {
  const app = await build(t, { instructions: 'Ask for flights.', cache: { discover: { ttlMs: 5000 } } })
  const empty = await call(app, 'server/discover', {}, { capabilities: {} })
  t.same(empty.body.result, {
    resultType: 'complete',
    supportedVersions: ['2026-07-28'],
    capabilities: {},
    ttlMs: 5000,
    cacheScope: 'public',
    instructions: 'Ask for flights.',
    _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'mocapi', version: '0.1.0' } },
  })
  app.mcp.tool({ name: 'one' }, () => '1')
  const withTools = await call(app, 'server/discover')
  t.same(withTools.body.result.capabilities, { tools: { listChanged: true } })
  t.notOk('instructions' in (await call(await build(t), 'server/discover')).body.result)
})
