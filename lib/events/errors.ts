import { McpError } from '../errors.js'

/**
 * The events extension's error codes, as SEP-3415 numbers them (-32023 to -32027, after the base protocol's -32022):
 * the Beta text that would confirm them could not be read (CHANGELOG.md, 0.2.0).
 */
export const EventsErrorCode = {
  NotFound: -32023,
  Forbidden: -32024,
  ResourceExhausted: -32025,
  Unsupported: -32026,
  CallbackEndpointError: -32027,
} as const

export function eventNotFound (name: string): McpError {
  return new McpError(EventsErrorCode.NotFound, `Unknown event type: ${name.length > 200 ? `${name.slice(0, 200)}…` : name}`, { data: { kind: 'event' } })
}

export function subscriptionNotFound (): McpError {
  return new McpError(EventsErrorCode.NotFound, 'No live subscription of this caller has that name, arguments and callback URL',
    { data: { kind: 'subscription' } })
}

export function forbidden (message: string, reason: string): McpError {
  return new McpError(EventsErrorCode.Forbidden, message, { data: { reason } })
}

export function unsupported (message: string, data: object): McpError {
  return new McpError(EventsErrorCode.Unsupported, message, { data })
}

export function exhausted (message: string, limit: string, max: number): McpError {
  return new McpError(EventsErrorCode.ResourceExhausted, message, { data: { limit, max } })
}

export function callbackFailed (message: string, reason: string): McpError {
  return new McpError(EventsErrorCode.CallbackEndpointError, message, { data: { reason } })
}
