// A pass's questions are stored with its task, which waits `input_required`; the pass parks.
import type { Asked, CallState, Delivered, Delivery, ReplayStart } from '../call.js'
import type { Journal } from '../journal.js'
import type { TaskLease } from './lease.js'
import { journalFields, journalOf, type TaskState } from './record.js'

export class TaskDelivery implements Delivery {
  readonly #lease: TaskLease
  readonly budget: Delivery['budget']

  /** `maxLength`: the longest sealed state, whose bytes a round's new journal slots can never pass. */
  constructor (lease: TaskLease, maxLength: number) {
    this.#lease = lease
    this.budget = {
      bytes: Math.floor(maxLength * 3 / 4),
      tooLarge: (requests) => `The handler asked for more input in one round than a task's state holds (over ${requests} requests)`,
    }
  }

  start (): ReplayStart {
    const state = this.#lease.current.state
    return { journal: journalOf(state), responses: state.answers, round: state.round }
  }

  /** Each effect goes into the task's record as it is recorded: a node that dies mid-pass loses none. */
  async recorded (_call: CallState, journal: Journal): Promise<void> {
    await this.#lease.update(({ stored, state }) => {
      const how = { leaseUntil: stored.leaseUntil, quota: true, announce: false }
      return [stored.status, { ...state, ...journalFields(journal) }, how]
    })
  }

  async deliver (_call: CallState, _label: string, asked: Asked, round: number): Promise<Delivered> {
    const lease = this.#lease
    lease.end()
    await lease.update(({ state }) => {
      const { answers: _answers, message: _message, ...kept } = state
      const next: TaskState = { ...kept, ...journalFields(asked.journal), round, asked: asked.inputRequests }
      return ['input_required', next, { quota: true }]
    })
    return { kind: 'parked' }
  }
}
