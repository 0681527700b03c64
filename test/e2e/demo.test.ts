import t from 'tap'
import { spawn } from 'node:child_process'
import { once } from 'node:events'
import { fileURLToPath } from 'node:url'
import { createTestClient, accept, textOf } from '../../lib/testing/index.js'

const demo = fileURLToPath(new URL('../../examples/demo-server.ts', import.meta.url))

t.test('the demo server serves, and closes cleanly on SIGTERM and SIGINT', async (t) => {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    // The demo runs from source through the TypeScript loader this test runs under, and reports no coverage of its own.
    const loader = process.execArgv.filter((arg) => arg.includes('typescript'))
    // The second run leaves HOST and LOG_LEVEL to the demo's defaults.
    const env: NodeJS.ProcessEnv = { ...process.env, PORT: '0', HOST: '127.0.0.1', LOG_LEVEL: 'info' }
    if (signal === 'SIGINT') { delete env.HOST; delete env.LOG_LEVEL }
    // tap's process-info hook would count the demo's own lines toward the library's coverage.
    delete env.NODE_V8_COVERAGE
    delete env.NODE_OPTIONS
    for (const name of Object.keys(env)) if (name.startsWith('_TAPJS_PROCESSINFO')) delete env[name]
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
    const { result } = await client.callTool('book_flight', { to: 'Lisbon' }, {
      'elicit-1': accept({ confirm: true, cabin: 'business' }),
      'elicit-2': accept({ seat: 'window' }),
    })
    t.equal(textOf(result), 'Booked business to Lisbon, window seat', `${signal}: the demo books`)
    const declined = await client.callTool('book_flight', { to: 'Oslo' }, { 'elicit-1': { action: 'decline' } })
    t.equal(textOf(declined.result), 'Nothing booked', `${signal}: a declined booking books nothing`)
    const noSeat = await client.callTool('book_flight', { to: 'Rome' }, {
      'elicit-1': accept({ confirm: true, cabin: 'economy' }),
      'elicit-2': { action: 'cancel' },
    })
    t.equal(textOf(noSeat.result), 'Booked economy to Rome', `${signal}: no seat preference, no seat named`)
    t.ok(lines.some((line) => /ephemeral key/.test(line.msg)), 'it says once that its key is ephemeral')
    const weather = await client.callTool('weather', { city: 'Porto' })
    const forecast = weather.result.structuredContent as { city: string, celsius: number, sky: string }
    t.equal(forecast.city, 'Porto', `${signal}: a forecast for the city asked`)
    t.ok(forecast.celsius >= 5 && forecast.celsius < 30 && ['sunny', 'cloudy', 'rainy', 'windy'].includes(forecast.sky), `${signal}: within the demo's range`)
    t.same((await client.callTool('weather', { city: 'porto' })).result.structuredContent, { ...forecast, city: 'porto' }, `${signal}: the same city, the same forecast`)
    const converted = await client.callTool('convert_currency', { amount: 100, from: 'EUR', to: 'USD' })
    t.equal(textOf(converted.result), '100 EUR = 108.00 USD', `${signal}: the demo converts`)
    const exited = once(child, 'exit')
    child.kill(signal)
    const [code] = await exited
    t.equal(code, 0, `${signal}: a clean exit`)
    t.ok(lines.some((line) => line.msg === 'closing' && line.signal === signal), `${signal}: it says why it closes`)
  }
})
