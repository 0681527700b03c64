import type { FastifyBaseLogger } from 'fastify'
import type { ClientState, Implementation } from '../protocol/wire.js'

/** How many clients the policy remembers having logged; past it, it starts over (and logs them again). */
const LOGGED_CLIENTS = 1_024
const MAX_NAME = 100

type ElicitationDisable = boolean | ((client: Implementation | undefined) => boolean)

export class ElicitationPolicy {
  readonly #disable: ElicitationDisable
  readonly #log: FastifyBaseLogger
  readonly #logged = new Set<string>()

  constructor (disable: ElicitationDisable, log: FastifyBaseLogger) {
    this.#disable = disable
    this.#log = log
  }

  apply (client: ClientState): ClientState {
    if (this.#disable === false || client.capabilities.elicitation === undefined) return client
    if (this.#disable !== true && !this.#matches(this.#disable, client.info)) return client
    const { elicitation: _off, ...capabilities } = client.capabilities
    this.#note(client.info)
    return { ...client, capabilities, elicitationOff: true }
  }

  #matches (disable: (client: Implementation | undefined) => boolean, info: Implementation | undefined): boolean {
    try {
      return disable(info) === true
    } catch (error) {
      this.#log.error({ err: error }, 'mocapi: elicitation.disable threw; elicitation stays on for this client')
      return false
    }
  }

  #note (info: Implementation | undefined): void {
    const name = info === undefined ? '(no clientInfo)' : `${shown(info.name)} ${shown(info.version)}`
    if (this.#logged.has(name)) return
    if (this.#logged.size >= LOGGED_CLIENTS) this.#logged.clear()
    this.#logged.add(name)
    this.#log.info({ mcp: { client: name } }, 'mocapi: elicitation is off for this client (elicitation.disable): it is treated as lacking the capability')
  }
}

/** A clientInfo field as the log shows it; never `String()` of what a client sent, whose `toString` may be anything. */
function shown (value: unknown): string {
  return typeof value === 'string' ? value.slice(0, MAX_NAME) : `(${typeof value})`
}
