import t from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { createServer } from 'node:net'
import { createTestClient, accept, textOf } from '../../lib/testing/index.js'
import { demo, demoEnv, loader } from './demo-process.js'

t.test('the demo server serves, and closes cleanly on SIGTERM and SIGINT', async (t) => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    // The second run leaves HOST and LOG_LEVEL to the demo's defaults.
    const env = demoEnv({ PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' })
    if (signal === 'SIGINT') { delete env.HOST; delete env.LOG_LEVEL }
    const child = spawn(process.execPath, [...loader, demo], { env, stdio: ['ignore', 'pipe', 'inherit'] })
    const lines: Array<Record<string, any>> = []
    let buffer = ''
    const listening = new Promise<string>((resolve, reject) => {
      child.stdout.on('data', (chunk: Buffer) => {
        buffer += chunk.toString()
        let end
        while ((end = buffer.indexOf('\n')) !== -1) {
          const line = JSON.parse(buffer.slice(0, end))
          buffer = buffer.slice(end + 1)
          lines.push(line)
          const url = /Server listening at (http:\/\/127\.0\.0\.1:\d+)/.exec(line.msg ?? '')
          if (url !== null) resolve(url[1])
        }
      })
      child.once('exit', (code) => reject(new Error(`the demo exited with ${code} before listening`)))
    })
    const base = await listening
    const client = createTestClient(`${base}/mcp`)
    const lisbon = { name: 'booking.confirmed', arguments: { to: 'lisbon' } }
    const { cursor } = await client.request('events/poll', { ...lisbon, cursor: null }) as { cursor: string }
    const { result } = await client.callTool('book_flight', { to: 'Lisbon' }, {
      'elicit-1': accept({ confirm: true, cabin: 'business' }),
      'elicit-2': accept({ seat: 'window' }),
    })
    t.equal(textOf(result), 'Booked business to Lisbon, window seat', `${signal}: the demo books`)
    t.match(result.structuredContent, { booked: true, to: 'Lisbon', cabin: 'business', seat: 'window', reference: /^TRV-[0-9A-F]{6}$/ }, `${signal}: and says it to the card`)
    const { events } = await client.request('events/poll', { ...lisbon, cursor }) as { events: Array<{ eventId: string, data: object }> }
    const reference = (result.structuredContent as { reference: string }).reference
    t.same(events.map((event) => [event.eventId, event.data]), [[reference, { reference, to: 'Lisbon', cabin: 'business' }]],
      `${signal}: the booking is an event, once`)
    const declined = await client.callTool('book_flight', { to: 'Oslo' }, { 'elicit-1': { action: 'decline' } })
    t.equal(textOf(declined.result), 'Nothing booked', `${signal}: a declined booking books nothing`)
    const noSeat = await client.callTool('book_flight', { to: 'Rome' }, {
      'elicit-1': accept({ confirm: true, cabin: 'economy' }),
      'elicit-2': { action: 'decline' },
    })
    t.equal(textOf(noSeat.result), 'Booked economy to Rome', `${signal}: no seat preference, no seat named`)
    const cancelled = await client.callTool('book_flight', { to: 'Rome' }, {
      'elicit-1': accept({ confirm: true, cabin: 'economy' }),
      'elicit-2': { action: 'cancel' },
    })
    t.equal(textOf(cancelled.result), 'Nothing booked (cancelled)', `${signal}: the seat question cancelled, nothing booked`)
    const tools = await client.listTools()
    t.same(tools.filter((tool) => ['readOnlyHint', 'destructiveHint', 'idempotentHint', 'openWorldHint'].some((hint) => typeof (tool.annotations as Record<string, unknown> | undefined)?.[hint] !== 'boolean')).map((tool) => tool.name), [],
      `${signal}: every tool sets the four hints explicitly`)
    const asked = await client.request('tools/call', { name: 'book_flight', arguments: { to: 'Faro' } })
    const form = (asked.inputRequests as any)['elicit-1'].params.requestedSchema
    t.match(form.properties, { confirm: { title: 'Confirm the booking', default: false }, cabin: { title: 'Cabin', default: 'economy' } },
      `${signal}: every field of the first form has a title and a default`)
    t.ok(lines.some((line) => /ephemeral key/.test(line.msg)), 'it says once that its key is ephemeral')
    const weather = await client.callTool('weather', { city: 'Porto' })
    const forecast = weather.result.structuredContent as { city: string, celsius: number, sky: string }
    t.equal(forecast.city, 'Porto', `${signal}: a forecast for the city asked`)
    t.ok(forecast.celsius >= 5 && forecast.celsius < 30 && ['sunny', 'cloudy', 'rainy', 'windy'].includes(forecast.sky), `${signal}: within the demo's range`)
    t.same((await client.callTool('weather', { city: 'porto' })).result.structuredContent, { ...forecast, city: 'porto' }, `${signal}: the same city, the same forecast`)
    const { skills } = await client.request('skills/list') as { skills: Array<{ uri: string, frontmatter: { name: string } }> }
    t.same(skills.map((skill) => skill.frontmatter.name), ['trip-checklist'], `${signal}: the demo serves its skill`)
    t.match(textOf((await client.readResource('skill://trip-checklist/checklist.md')).result), /^# Paperwork/)
    const converted = await client.callTool('convert_currency', { amount: 100, from: 'EUR', to: 'USD' })
    t.equal(textOf(converted.result), '100 EUR = 108.00 USD', `${signal}: the demo converts`)
    // A host that shows views: book_flight's card, and the app-only tool the card calls.
    const host = createTestClient(`${base}/mcp`, { capabilities: { elicitation: { form: {} }, extensions: { 'io.modelcontextprotocol/ui': { mimeTypes: ['text/html;profile=mcp-app'] } } } })
    const listed = await host.listTools()
    t.same(listed.find((tool) => tool.name === 'book_flight')?._meta?.ui, { resourceUri: 'ui://demo/booking-card' }, `${signal}: book_flight links the card`)
    t.same(listed.find((tool) => tool.name === 'flight_status')?._meta?.ui, { resourceUri: 'ui://demo/booking-card', visibility: ['app'] })
    t.notOk(tools.some((tool) => tool.name === 'flight_status'), `${signal}: a client that shows no views is not offered the card's own tool`)
    const card = (await host.readResource('ui://demo/booking-card')).result.contents[0] as { mimeType: string, text: string, _meta: object }
    t.equal(card.mimeType, 'text/html;profile=mcp-app')
    t.match(card.text, /^<!doctype html>[\s\S]*ui\/initialize/)
    t.same(card._meta, { ui: { prefersBorder: true } })
    t.equal(textOf((await host.callTool('flight_status', { to: 'Lisbon' })).result), 'The flight to Lisbon is on time, boarding at gate C13')
    const exited = once(child, 'exit')
    child.kill(signal)
    const [code] = await exited
    t.equal(code, 0, `${signal}: a clean exit`)
    t.ok(lines.some((line) => line.msg === 'closing' && line.signal === signal), `${signal}: it says why it closes`)
  }
})

t.test('without PORT the demo listens on 127.0.0.1:3000, and a port in use stops it with the reason', async (t) => {
  // Hold the port (or find it held already): the demo must then fail on port 3000, whatever else runs here.
  const holder = createServer()
  await new Promise<void>((resolve) => {
    holder.once('error', () => resolve())
    holder.listen(3000, '127.0.0.1', () => resolve())
  })
  t.teardown(() => { holder.close() })
  const env = demoEnv({ LOG_LEVEL: 'info' })
  delete env.PORT
  delete env.HOST
  const child = spawn(process.execPath, [...loader, demo], { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let output = ''
  child.stdout.on('data', (chunk: Buffer) => { output += chunk.toString() })
  child.stderr.on('data', (chunk: Buffer) => { output += chunk.toString() })
  const [code] = await once(child, 'exit')
  t.not(code, 0, 'the demo exits with an error')
  t.match(output, /EADDRINUSE/, 'it says the address is in use')
  t.match(output, /127\.0\.0\.1:3000/, 'the default address is 127.0.0.1:3000')
})
