// Webhook signing the Standard Webhooks way, with the client's `whsec_` secret.
import { createHmac } from 'node:crypto'

const SECRET_PREFIX = 'whsec_'
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/
const MIN_KEY_BYTES = 24
const MAX_KEY_BYTES = 64

/** The key bytes of a `whsec_<base64>` secret of 24 to 64 bytes, else undefined. */
export function parseSecret (value: unknown): Buffer | undefined {
  if (typeof value !== 'string' || !value.startsWith(SECRET_PREFIX)) return undefined
  const text = value.slice(SECRET_PREFIX.length)
  if (!BASE64.test(text)) return undefined
  const key = Buffer.from(text, 'base64')
  const canonical = key.toString('base64')
  // Node decodes leniently; only the exact (optionally unpadded) encoding of the bytes is a secret.
  if (text !== canonical && text !== canonical.replace(/=+$/, '')) return undefined
  if (key.length < MIN_KEY_BYTES || key.length > MAX_KEY_BYTES) return undefined
  return key
}

/**
 * `webhook-id`, `webhook-timestamp` (unix seconds) and the `v1,` HMAC-SHA256 signature over id, timestamp and body;
 * one per key, space-separated (a secret being rotated signs beside its successor).
 */
export function signedHeaders (
  key: Buffer | readonly Buffer[], id: string, body: string, nowMs: number
): Record<string, string> {
  const timestamp = String(Math.floor(nowMs / 1000))
  const keys = Buffer.isBuffer(key) ? [key] : key
  const signatures = keys.map((each) => `v1,${createHmac('sha256', each).update(`${id}.${timestamp}.${body}`).digest('base64')}`)
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signatures.join(' ') }
}
