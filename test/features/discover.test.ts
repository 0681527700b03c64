import t from 'tap'
import { build, call, MOCAPI_VERSION } from '../helpers.js'

t.test('server/discover: versions, capabilities from what is registered, caching', async (t) => {
  const app = await build(t, { instructions: 'Ask for flights.', cache: { discover: { ttlMs: 5000 } } })
  const empty = await call(app, 'server/discover', {}, { capabilities: {} })
  t.same(empty.body.result, {
    resultType: 'complete',
    supportedVersions: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'],
    capabilities: { logging: {} },
    ttlMs: 5000,
    cacheScope: 'public',
    instructions: 'Ask for flights.',
    _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'mocapi', version: MOCAPI_VERSION } },
  })
  app.mcp.tool({ name: 'one' }, () => '1')
  const withTools = await call(app, 'server/discover')
  t.same(withTools.body.result.capabilities, { logging: {}, tools: { listChanged: true } })
  t.notOk('instructions' in (await call(await build(t), 'server/discover')).body.result)
})
