/** The event type the events tests share: an incident on one service, reaching the subscriptions of that service. */
export const incident = {
  name: 'incident.created',
  description: 'A new incident on one service',
  inputSchema: { type: 'object', properties: { service: { type: 'string' } }, required: ['service'] },
  payloadSchema: {
    type: 'object', properties: { service: { type: 'string' }, severity: { type: 'string' } }, required: ['service', 'severity'],
  },
  match: (args: { service: string }, data: { service: string }) => data.service === args.service,
} as const
