/**
 * The demo server behind `npm start`: a small travel desk on http://127.0.0.1:3000/mcp
 * (PORT overrides). With no keys configured it uses an ephemeral requestState key and says so once.
 */
import { randomBytes } from 'node:crypto'
import Fastify from 'fastify'
import cors from '@fastify/cors'
import mocapi, { requestedSchema } from '../lib/index.js'
import { bookingCard } from './booking-card.js'

// Server timeouts a production app sets: a client that sends its body slowly, or never finishes
// its headers, is cut off instead of holding a connection. Event streams (progress, listen) are
// replies, which requestTimeout does not cover.
const app = Fastify({
  logger: { level: process.env.LOG_LEVEL ?? 'info' },
  requestTimeout: 30_000, // the whole request, headers and body, must arrive within 30 s
  connectionTimeout: 60_000, // an idle socket with no request in progress is closed after 60 s
  keepAliveTimeout: 5_000, // how long an idle keep-alive connection waits for its next request
  http: { headersTimeout: 10_000 }, // the headers must arrive within 10 s
})

// A host that is a web page calls the server from its own origin: CORS_ORIGINS lists those origins (comma-separated),
// answered with CORS and let through mocapi's Origin check. Hosts that are programs, or call from their servers, send
// no Origin and need neither.
const corsOrigins = (process.env.CORS_ORIGINS ?? '').split(',').map((origin) => origin.trim()).filter((origin) => origin !== '')
if (corsOrigins.length > 0) {
  await app.register(cors, { origin: corsOrigins, methods: ['GET', 'POST', 'DELETE'], exposedHeaders: ['Mcp-Session-Id', 'WWW-Authenticate'] })
}

await app.register(mocapi, {
  ...(corsOrigins.length > 0 && { allowedOrigins: corsOrigins }),
  serverInfo: { name: 'mocapi-demo', version: '1.0.0' },
  instructions: 'A travel desk: check the weather, convert currency, and book flights (which asks the traveller to confirm, and shows the booking as a card in hosts that show views).',
})

app.mcp.tool({
  name: 'weather',
  description: 'Gives a (made-up, deterministic) forecast for a city',
  // Set explicitly, as connector directories ask: what the tool does, before a host calls it.
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  inputSchema: { type: 'object', properties: { city: { type: 'string', minLength: 1 } }, required: ['city'], additionalProperties: false },
  outputSchema: { type: 'object', properties: { city: { type: 'string' }, celsius: { type: 'number' }, sky: { type: 'string' } }, required: ['city', 'celsius', 'sky'] },
}, (args: { city: string }) => {
  let hash = 0
  for (const char of args.city.toLowerCase()) hash = (hash * 31 + char.charCodeAt(0)) >>> 0
  const skies = ['sunny', 'cloudy', 'rainy', 'windy']
  return { city: args.city, celsius: 5 + (hash % 25), sky: skies[hash % skies.length] }
})

app.mcp.tool({
  name: 'convert_currency',
  description: 'Converts an amount between EUR, USD and GBP at fixed demo rates',
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  inputSchema: {
    type: 'object',
    properties: { amount: { type: 'number' }, from: { enum: ['EUR', 'USD', 'GBP'] }, to: { enum: ['EUR', 'USD', 'GBP'] } },
    required: ['amount', 'from', 'to'],
    additionalProperties: false,
  },
}, (args: { amount: number, from: 'EUR' | 'USD' | 'GBP', to: 'EUR' | 'USD' | 'GBP' }) => {
  const perEuro = { EUR: 1, USD: 1.08, GBP: 0.85 }
  return `${args.amount} ${args.from} = ${(args.amount / perEuro[args.from] * perEuro[args.to]).toFixed(2)} ${args.to}`
})

// A view (MCP Apps): hosts that show views render book_flight's result as this card, in a sandbox that lets it
// reach nothing (no csp origins). Hosts without the extension show the result's text.
// A skill (SEP-2640) a host loads when a traveller asks for a checklist: examples/skills/trip-checklist.
// From examples/ (source) or dist/examples/ (built), the folder beside this file's source.
await app.mcp.skills(new URL(import.meta.url.replace(/(\/dist)?\/examples\/[^/]+$/, '/examples/skills/')))

app.mcp.uiResource({ uri: 'ui://demo/booking-card', name: 'Booking card', description: 'A booking, as a card', html: bookingCard, prefersBorder: true })

// An event type (SEP-3415, Beta): clients poll it, hold a stream for it, or subscribe a webhook
// (`mocapi events http://127.0.0.1:3000/mcp booking.confirmed --follow stream` shows it live).
app.mcp.event({
  name: 'booking.confirmed',
  description: 'A flight was booked; subscribe with { to } for one destination, or {} for all',
  inputSchema: { type: 'object', properties: { to: { type: 'string' } }, additionalProperties: false },
  payloadSchema: {
    type: 'object',
    properties: { reference: { type: 'string' }, to: { type: 'string' }, cabin: { type: 'string' } },
    required: ['reference', 'to', 'cabin'],
  },
  match: (args, data) => args.to === undefined || args.to.toLowerCase() === data.to.toLowerCase(),
})

app.mcp.tool({
  name: 'book_flight',
  description: 'Books a flight after asking the traveller to confirm, then for a seat preference',
  annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
  inputSchema: { type: 'object', properties: { to: { type: 'string', minLength: 1 } }, required: ['to'], additionalProperties: false },
  ui: { resourceUri: 'ui://demo/booking-card' },
}, async (args: { to: string }, ctx) => {
  // Everything above the last elicit() re-runs on each round: keep it free of side effects, or wrap them in ctx.once.
  // Each field has a title and a default, so a host's form can be sent as it first shows.
  const trip = await ctx.elicit(`Book a flight to ${args.to}?`, requestedSchema()
    .boolean('confirm', { title: 'Confirm the booking', default: false })
    .choose('cabin', [{ value: 'economy', title: 'Economy' }, { value: 'business', title: 'Business' }], { title: 'Cabin', default: 'economy' }))
  const nothing = (text: string) => ({ content: [{ type: 'text' as const, text }], structuredContent: { booked: false } })
  if (trip.action !== 'accept' || !trip.content.confirm) return nothing('Nothing booked')
  // The seat is held once per call: the replay that asks for the seat preference reads the reference back (ctx.once).
  const hold = await ctx.once('hold', () => ({ reference: `TRV-${randomBytes(3).toString('hex').toUpperCase()}` }))
  const seat = await ctx.elicit('Any seat preference?', requestedSchema()
    .choose('seat', ['window', 'aisle', 'middle'], { title: 'Seat' })
    .string('note', { title: 'Note for the crew', maxLength: 200, optional: true }))
  // Declining the seat question books without a preference; cancelling it (dismissing the whole thing) books nothing.
  if (seat.action === 'cancel') return nothing('Nothing booked (cancelled)')
  const chosen = seat.action === 'accept' ? seat.content.seat : undefined
  // Any other side effect belongs here, after the last elicit(); ctx.once keeps a retried round from emitting twice.
  await ctx.once('announce', () => app.mcp.emit('booking.confirmed',
    { reference: hold.reference, to: args.to, cabin: trip.content.cabin }, { eventId: hold.reference }))
  // Text first, for the model and for hosts without views; the card renders structuredContent.
  return {
    content: [{ type: 'text' as const, text: `Booked ${trip.content.cabin} to ${args.to}${chosen === undefined ? '' : `, ${chosen} seat`}` }],
    structuredContent: {
      booked: true, to: args.to, cabin: trip.content.cabin, reference: hold.reference, ...(chosen === undefined ? {} : { seat: chosen }),
    },
  }
})

// Only the card calls this (visibility: ['app']): hosts keep it from the model, and mocapi leaves it out of the
// tool list of a client that shows no views.
app.mcp.tool({
  name: 'flight_status',
  description: 'The (made-up) status of the flight to a city, for the booking card',
  annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
  inputSchema: { type: 'object', properties: { to: { type: 'string', minLength: 1, maxLength: 100 } }, required: ['to'], additionalProperties: false },
  ui: { resourceUri: 'ui://demo/booking-card', visibility: ['app'] },
}, (args: { to: string }) => {
  const gate = `${'ABCD'[args.to.length % 4]}${(args.to.length * 7) % 30 + 1}`
  return `The flight to ${args.to} is on time, boarding at gate ${gate}`
})

// SIGTERM (a deploy, a container stop) and SIGINT (Ctrl-C) close the app: in-flight calls get
// mocapi's shutdownGrace to finish, listen streams end, and the process exits.
for (const signal of ['SIGTERM', 'SIGINT'] as const) {
  process.once(signal, async () => {
    app.log.info({ signal }, 'closing')
    // A close that fails (an onClose hook that throws) rejects: Node reports it and exits with 1.
    await app.close()
    process.exit(0)
  })
}

const port = Number(process.env.PORT ?? 3000)
await app.listen({ host: process.env.HOST ?? '127.0.0.1', port })
