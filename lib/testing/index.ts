/**
 * `mocapi/testing`: a client for testing MCP 2026-07-28 servers, mocapi's or any other, and for
 * testing them as 2025-era clients see them (`protocolVersion: '2025-11-25'`).
 *
 * ```ts
 * const client = createTestClient(app)   // a Fastify app (inject), an endpoint URL, or several in turn
 * const { result, rounds } = await client.callTool('book_flight', { to: 'Lisbon' },
 *   (request) => request.kind === 'elicit' ? accept({ confirm: true, cabin: 'economy' }) : decline())
 * t.equal(textOf(result), 'Booked economy to Lisbon')
 * ```
 */
export {
  createTestClient, McpClientError,
  type TestClient, type TestClientOptions, type TestTarget, type CallOptions, type Outcome, type Round,
  type Notification, type ReadResourceResult, type ListedTool, type CompleteResult, type LegacyProtocolVersion,
} from './client.js'
export { textOf } from './text.js'
export {
  accept, decline, cancel, sampled, roots, answers, byKind,
  type Answers, type AnswerFunction, type AnswerOf, type KindHandlers, type QueuedAnswer, type InputRequestView,
  type ElicitView, type ElicitUrlView, type SampleView, type RootsView,
  type ElicitResult, type ElicitContent, type ListRootsResult, type InputResponse,
} from './answers.js'
export type { CallToolResult, ContentBlock, InputRequest } from '../protocol/wire.js'
export type { GetPromptResult } from '../features/prompts.js'
export type { CreateMessageParams, CreateMessageResult, Root } from '../protocol/wire.js'
export type { RequestedSchema } from '../elicitation/schema.js'
export { taskStoreChecks, type TaskStoreCheck } from './task-store.js'
export { receiptStoreChecks, type ReceiptStoreCheck } from './receipt-store.js'
export {
  webhookReceiver, verifyWebhook, WebhookError, MAX_WEBHOOK_BODY,
  type WebhookReceiver, type WebhookReceiverOptions, type WebhookDelivery, type RefusedWebhook,
} from './webhook.js'
export { eventLogChecks, type EventLogCheck } from './event-log.js'
