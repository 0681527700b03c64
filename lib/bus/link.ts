import type { FastifyBaseLogger } from 'fastify'
import { noop } from '../check.js'
import type { NotificationBus } from './bus.js'
import type { BusEvent, ChangeEvent, SessionEvent } from './events.js'

/** After `late` ms the server starts without the bus and the operator is told, then again every `nag` ms. */
const BUS_TIMING = { late: 2_000, nag: 30_000 }
const BUS_FAILURE_LOG_MS = 10_000

/** Where each event a node hears goes: the parts that listen, by what they do with it. */
export interface EventRoutes {
  /** 2025-era sessions' events, for the streams and calls this node holds. */
  session: { receive (event: SessionEvent): void }
  /** A task's news from another node: a pass running it here may have been cancelled. */
  tasks: { changed (id: string): Promise<void> }
  /** Changes and tasks' news for the listen streams; `catchUp` once events may have been lost. */
  streams: { notify (event: ChangeEvent): void, notifyTask (id: string): void, catchUp (): void }
  /** Receipts done on any node: duplicates waiting here read them. */
  receipts?: { settled (name: string): void } | undefined
  /** Occurrences appended on any node: streams of their type read the log, and the worker its queue. */
  events?: { woken (name: string): void } | undefined
  /** What this node is sent directly (2025-era answers, over `send`). */
  receiver?: (message: object) => void
}

/** Subscribes in the background, so a down bus never keeps the server from starting. */
export class BusLink {
  /** This node's id: messages sent to it reach it, and its own task news is not news to it. */
  readonly node: string
  readonly #bus: NotificationBus
  readonly #log: FastifyBaseLogger
  readonly #timing: typeof BUS_TIMING
  #unsubscribe: (() => void) | undefined
  #unwatch: (() => void) | undefined
  /** When the bus went down, while it is down after it was up. */
  #downSince: number | undefined
  #up = false
  #closed = false
  #nag: NodeJS.Timeout | undefined
  #failed = 0
  #lastReport = -Infinity
  #attached: Promise<void> = Promise.resolve()
  /** Registrations made while the app boots are not news to anyone: announcing starts once the app is ready. */
  #live = false

  constructor (bus: NotificationBus, log: FastifyBaseLogger, node: string, timing = BUS_TIMING) {
    this.node = node
    this.#bus = bus
    this.#log = log
    this.#timing = timing
  }

  get up (): boolean {
    return this.#up
  }

  get failed (): number {
    return this.#failed
  }

  /** Resolves once the bus delivers or `timing.late` ms pass: startup waits that long for the bus, no longer. */
  async ready (): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(resolve, this.#timing.late)
      // #attached never rejects: a failure to subscribe is logged where it happens.
      this.#attached.then(() => {
        clearTimeout(timer)
        resolve()
      })
    })
    this.#live = true
  }

  /** A change made by the app: published once the app is ready (see {@link ready}). */
  announce (event: ChangeEvent): void {
    if (this.#live) this.publish(event)
  }

  get routed (): boolean {
    return typeof this.#bus.send === 'function' && typeof this.#bus.receive === 'function'
  }

  send (node: string, message: object): Promise<boolean> {
    return (this.#bus.send as NonNullable<NotificationBus['send']>)(node, message)
  }

  /** Subscribes in the background; streams catch up whenever the bus delivers again: events meanwhile were lost. */
  attach (routes: EventRoutes): void {
    const deliver = (event: BusEvent): void => {
      if (event.kind === 'session') routes.session.receive(event)
      else if (event.kind === 'task') {
        if (event.node !== this.node) routes.tasks.changed(event.id).catch(noop)
        routes.streams.notifyTask(event.id)
      } else if (event.kind === 'receipt') routes.receipts?.settled(event.name)
      else if (event.kind === 'occurrence') routes.events?.woken(event.name)
      else routes.streams.notify(event)
    }
    const resumed = (): void => { routes.streams.catchUp() }
    const receiver = routes.receiver
    const started = Date.now()
    this.#nag = setTimeout(() => this.#stillDown(started), this.#timing.late)
    this.#nag.unref()
    this.#unwatch = this.#bus.watch?.((state, cause) => this.#changed(state, cause, resumed))
    this.#attached = Promise.resolve()
      .then(async () => {
        const unsubscribe = await this.#bus.subscribe(deliver)
        if (receiver === undefined || !this.routed) return unsubscribe
        const stop = await (this.#bus.receive as NonNullable<NotificationBus['receive']>)(this.node, receiver)
        return () => {
          unsubscribe()
          stop()
        }
      })
      .then((unsubscribe) => {
        clearTimeout(this.#nag)
        if (this.#closed) return unsubscribe()
        this.#unsubscribe = unsubscribe
        this.#up = true
        if (Date.now() - started < this.#timing.late) return
        this.#log.info('mocapi: the notification bus is up; change notifications reach this node again')
        resumed()
      }, (error: unknown) => {
        clearTimeout(this.#nag)
        if (!this.#closed) this.#log.error({ err: error }, 'mocapi: the notification bus failed; listen streams on this node miss changes made on other nodes')
      })
  }

  // Only runs while the bus is down: coming up and closing clear its timer.
  #stillDown (started: number): void {
    this.#log.error({ mcp: { downForMs: Date.now() - started } },
      'mocapi: the notification bus is not connected; listen streams on this node miss changes made on other nodes until it is')
    this.#nag = setTimeout(() => this.#stillDown(started), this.#timing.nag)
    this.#nag.unref()
  }

  /** Logged once each way: a retrying bus reports every attempt, and the operator needs to hear of the outage only. */
  #changed (state: 'down' | 'up', cause: unknown, resumed: () => void): void {
    if (state === 'down') {
      if (this.#downSince !== undefined) return
      this.#downSince = Date.now()
      this.#log.error({ err: cause },
        'mocapi: the notification bus is down; until it is back, changes, 2025-era session events and answers are not carried between nodes, ' +
        'and listen streams on this node miss changes')
      return
    }
    if (this.#downSince === undefined) return
    const downForMs = Date.now() - this.#downSince
    this.#downSince = undefined
    resumed()
    this.#log.warn({ mcp: { downForMs } },
      'mocapi: the notification bus is back; changes made while it was down were lost, so the listen streams on this node were sent ' +
      'the list-changed and resource-updated notifications their filters cover')
  }

  publish (event: BusEvent): void {
    Promise.resolve()
      .then(() => this.#bus.publish(event))
      .catch((error: unknown) => this.#publishFailed(error))
  }

  #publishFailed (error: unknown): void {
    this.#failed++
    const now = Date.now()
    if (now - this.#lastReport < BUS_FAILURE_LOG_MS) return
    this.#lastReport = now
    this.#log.error({ err: error, mcp: { failedChanges: this.#failed } }, 'mocapi could not publish a change event')
  }

  async close (): Promise<void> {
    this.#closed = true
    clearTimeout(this.#nag)
    this.#unwatch?.()
    this.#unsubscribe?.()
    await this.#bus.close?.()
  }
}
