/**
 * The demo's view: a booking confirmation as a small card, for hosts that show MCP Apps views. It speaks the
 * extension's JSON-RPC over postMessage by hand (no SDK, no network: the host's default CSP holds): `ui/initialize`,
 * then it renders the `ui/notifications/tool-result` the host sends, and its button calls the app-only tool
 * `flight_status` back through the host.
 */
export const bookingCard = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Booking</title>
<style>
  :root { color-scheme: light dark; font-family: var(--font-sans, system-ui, sans-serif); }
  body { margin: 0; padding: 12px; }
  .card { border-radius: var(--border-radius-lg, 12px); padding: 16px; max-width: 360px;
    background: var(--color-background-secondary, light-dark(#f4f6f8, #22262b));
    color: var(--color-text-primary, light-dark(#16191d, #f2f4f6)); }
  h1 { font-size: 1.1rem; margin: 0 0 8px; }
  dl { display: grid; grid-template-columns: auto 1fr; gap: 4px 12px; margin: 0 0 12px; }
  dt { color: var(--color-text-secondary, light-dark(#5b636d, #a9b1ba)); }
  dd { margin: 0; }
  button { font: inherit; padding: 6px 12px; border-radius: 8px; border: 1px solid currentColor; background: none;
    color: inherit; cursor: pointer; }
  #status { margin-top: 8px; min-height: 1.2em; }
</style>
</head>
<body>
<div class="card">
  <h1 id="title">Waiting for the booking…</h1>
  <dl id="details" hidden>
    <dt>To</dt><dd id="to"></dd>
    <dt>Cabin</dt><dd id="cabin"></dd>
    <dt>Seat</dt><dd id="seat"></dd>
  </dl>
  <button id="status-button" type="button" hidden>Flight status</button>
  <div id="status" role="status"></div>
</div>
<script>
  // JSON-RPC 2.0 to the host, which relays tools/call to the MCP server as the user.
  let nextId = 1
  const pending = new Map()
  function request (method, params) {
    const id = nextId++
    window.parent.postMessage({ jsonrpc: '2.0', id, method, params }, '*')
    return new Promise((resolve, reject) => pending.set(id, { resolve, reject }))
  }
  function notify (method, params) {
    window.parent.postMessage({ jsonrpc: '2.0', method, params }, '*')
  }
  const text = (id, value) => { document.getElementById(id).textContent = value }
  let booking

  function render (result) {
    booking = result.structuredContent
    if (booking === undefined || !booking.booked) {
      // Nothing booked: the text the model saw says why.
      text('title', (result.content || []).map((block) => block.text || '').join(' ') || 'Nothing booked')
      return
    }
    text('title', 'Booked')
    text('to', booking.to)
    text('cabin', booking.cabin)
    text('seat', booking.seat || 'no preference')
    document.getElementById('details').hidden = false
    document.getElementById('status-button').hidden = false
    resized()
  }

  window.addEventListener('message', (event) => {
    if (event.source !== window.parent) return
    const message = event.data
    if (message === null || typeof message !== 'object' || message.jsonrpc !== '2.0') return
    if (message.id !== undefined && pending.has(message.id)) {
      const { resolve, reject } = pending.get(message.id)
      pending.delete(message.id)
      if (message.error) reject(new Error(message.error.message))
      else resolve(message.result)
    } else if (message.method === 'ui/notifications/tool-result') {
      render(message.params)
    } else if (message.method === 'ui/resource-teardown' && message.id !== undefined) {
      window.parent.postMessage({ jsonrpc: '2.0', id: message.id, result: {} }, '*')
    }
  })

  document.getElementById('status-button').addEventListener('click', async () => {
    text('status', 'Asking…')
    try {
      const result = await request('tools/call', { name: 'flight_status', arguments: { to: booking.to } })
      text('status', (result.content || []).map((block) => block.text || '').join(' '))
    } catch (error) {
      text('status', 'Could not ask: ' + error.message)
    }
    resized()
  })

  function resized () {
    notify('ui/notifications/size-changed', { width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight })
  }

  request('ui/initialize', {
    protocolVersion: '2026-01-26',
    appInfo: { name: 'mocapi-demo-booking-card', version: '1.0.0' },
    appCapabilities: {},
  }).then(() => {
    notify('ui/notifications/initialized', {})
    resized()
  })
</script>
</body>
</html>
`
