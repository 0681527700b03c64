import type { FastifyBaseLogger } from 'fastify'
import { bindingOf, type EventCursors } from './cursor.js'
import { toWire } from './feed.js'
import { CallbackRefused } from './guard.js'
import { splitPosition, type DeliveryJob, type EventLog, type StoredOccurrence } from './log.js'
import type { EventTypes } from './types.js'
import { deliveryJob, type Webhooks } from './webhooks.js'

export interface WorkerSettings {
  /** ms before each retry of a failed delivery; its length is the retries a delivery gets. */
  retryDelays: readonly number[]
  /** ms between looks at the queue when nothing woke the worker. */
  tick: number
}

/** Jobs one node claims at a time, and so its deliveries in flight. */
const CLAIM_BATCH = 16
/**
 * A job done is remembered this long, so a fan-out run again (its node died within its claim) never sends it twice:
 * a minute is several claims' worth, and the markers of a busy fleet stay few.
 */
const FINISHED_KEEP_MS = 60_000
/** A claim outlives the longest delivery (the guard's lookup, then the POST) by this much. */
const CLAIM_MARGIN_MS = 5_000

/** The position just before `position` (never `0-0`, which no log gives), so a read after it starts there. */
export function before (position: string): string {
  const [ms, seq] = splitPosition(position)
  return seq > 0 ? `${ms}-${seq - 1}` : `${ms - 1}-18446744073709551615`
}

/**
 * Each node's webhook deliveries: it claims due jobs from the log (a claim is a lease, so a node that dies mid-delivery
 * loses nothing), fans an occurrence out to the subscriptions it matches, and POSTs each, retrying with jitter.
 */
export class DeliveryWorker {
  readonly #log: EventLog
  readonly #types: EventTypes
  readonly #webhooks: Webhooks
  readonly #cursors: EventCursors
  readonly #logger: FastifyBaseLogger
  readonly #settings: WorkerSettings
  #timer: NodeJS.Timeout | undefined
  #running: Promise<void> | undefined
  #again = false
  #closed = false
  #failing = false

  constructor (parts: {
    log: EventLog
    types: EventTypes
    webhooks: Webhooks
    cursors: EventCursors
    logger: FastifyBaseLogger
    settings: WorkerSettings
  }) {
    this.#log = parts.log
    this.#types = parts.types
    this.#webhooks = parts.webhooks
    this.#cursors = parts.cursors
    this.#logger = parts.logger
    this.#settings = parts.settings
  }

  start (): void {
    this.#timer = setInterval(() => { this.wake() }, this.#settings.tick)
    this.#timer.unref()
  }

  /** Looks at the queue now (an occurrence was appended); a look under way looks once more after. */
  wake (): void {
    if (this.#closed) return
    if (this.#running !== undefined) {
      this.#again = true
      return
    }
    this.#running = this.#drain().finally(() => {
      this.#running = undefined
      if (this.#again) {
        this.#again = false
        this.wake()
      }
    })
  }

  async close (): Promise<void> {
    this.#closed = true
    clearInterval(this.#timer)
    await this.#running
  }

  async #drain (): Promise<void> {
    const lease = this.#webhooks.timeout + CLAIM_MARGIN_MS
    for (;;) {
      let jobs
      try {
        jobs = await this.#log.claim(CLAIM_BATCH, lease)
        this.#recovered()
      } catch (error) {
        this.#failed(error)
        return
      }
      await Promise.all(jobs.map((job) => this.#run(job).catch((error: unknown) => {
        this.#logger.error({ err: error }, 'mocapi: a webhook job failed; it is tried again once its claim lapses')
      })))
      // A fan-out enqueues deliveries due now: the queue is looked at again until it has nothing due.
      if (jobs.length === 0 || this.#closed) return
    }
  }

  async #run (job: DeliveryJob): Promise<void> {
    const bar = job.id.indexOf('|')
    const kind = job.id.slice(0, bar)
    if (kind === 'fanout') await this.#fanOut(job.id)
    else await this.#deliver(job)
  }

  async #occurrence (name: string, position: string): Promise<StoredOccurrence | undefined> {
    const found = (await this.#log.read(name, before(position), 1)).occurrences[0]
    return found?.position === position ? found : undefined
  }

  /** `fanout|<name>|<position>`: a delivery job for each live subscription the occurrence matches. */
  async #fanOut (id: string): Promise<void> {
    const last = id.lastIndexOf('|')
    const name = id.slice('fanout|'.length, last)
    const position = id.slice(last + 1)
    const type = this.#types.entry(name)
    const stored = await this.#occurrence(name, position)
    if (type !== undefined && stored !== undefined) {
      const data = JSON.parse(stored.data)
      const jobs = []
      for (const subscription of await this.#log.subscriptions(name)) {
        const record = this.#webhooks.open(subscription.id, subscription.sealed)
        if (record === undefined) continue
        let matched = true
        try {
          matched = type.match === undefined || type.match(record.args, data) === true
        } catch (error) {
          matched = false
          this.#logger.warn({ err: error, mcp: { event: name } }, 'mocapi: an event type\'s match threw; the occurrence is left out')
        }
        if (matched) jobs.push(deliveryJob(subscription.id, name, position))
      }
      if (jobs.length > 0) await this.#log.enqueue(jobs, Date.now())
    }
    await this.#log.finish(id, FINISHED_KEEP_MS)
  }

  async #deliver (job: DeliveryJob): Promise<void> {
    const named = JSON.parse(job.body) as { subscription: string, name: string, position: string }
    const { subscription: id, name, position } = named
    const subscription = await this.#log.subscription(id)
    const record = subscription === undefined ? undefined : this.#webhooks.open(id, subscription.sealed)
    const stored = record === undefined ? undefined : await this.#occurrence(name, position)
    if (record === undefined || stored === undefined) {
      await this.#log.finish(job.id, FINISHED_KEEP_MS)
      return
    }
    const cursor = this.#cursors.seal({ position }, bindingOf(record.principal, name, record.args))
    const body = JSON.stringify({ ...toWire(name, stored), cursor })
    const outcome = await this.#webhooks.post(record, stored.eventId, id, body)
    if (!(outcome instanceof CallbackRefused) && outcome.ok) {
      await this.#log.finish(job.id, FINISHED_KEEP_MS)
      return
    }
    const host = hostOf(record.url)
    const reason = outcome instanceof CallbackRefused ? outcome.reason : outcome.error
    const status = outcome instanceof CallbackRefused ? undefined : outcome.status
    // 410 and 413 are final for this occurrence; the subscription goes on.
    if (status === 410 || status === 413) {
      this.#logger.info({ mcp: { host, status, event: name } }, 'mocapi: a webhook receiver refused an occurrence for good; it is dropped for that subscription')
      await this.#log.finish(job.id, FINISHED_KEEP_MS)
      return
    }
    const delays = this.#settings.retryDelays
    if (job.attempt < delays.length) {
      const delay = delays[job.attempt] * (0.8 + 0.4 * Math.random())
      this.#logger.info({ mcp: { host, reason, status, event: name, attempt: job.attempt + 1 } }, 'mocapi: a webhook delivery failed; it is retried')
      await this.#log.retry(job.id, Date.now() + Math.round(delay))
      return
    }
    this.#logger.warn({ mcp: { host, reason, status, event: name, attempts: job.attempt + 1 } }, 'mocapi: a webhook delivery failed every attempt; it is given up')
    await this.#log.finish(job.id, FINISHED_KEEP_MS)
  }

  #failed (error: unknown): void {
    if (this.#failing) return
    this.#failing = true
    this.#logger.error({ err: error }, 'mocapi: the event log is not reachable; webhook deliveries wait until it is')
  }

  #recovered (): void {
    if (!this.#failing) return
    this.#failing = false
    this.#logger.warn('mocapi: the event log is reachable again; webhook deliveries go on')
  }
}

/** The host a log line names: a stored callback passed the guard, so it parses. */
function hostOf (url: string): string {
  return new URL(url).host
}
