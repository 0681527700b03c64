// A pass's questions are stored with its task, which waits `input_required`; the pass parks.
import type { Asked, CallState, Delivered, Delivery, Effect, ReplayStart } from '../call.js'
import type { TaskState } from './record.js'
import type { Running } from './running.js'

/** Effects go into a task's state only once there are some, so a task that records none keeps its old shape. */
export function effectsOf (holder: { readonly effects: readonly Effect[] }): Pick<TaskState, 'effects'> {
  return holder.effects.length > 0 ? { effects: [...holder.effects] } : {}
}

export class TaskDelivery implements Delivery {
  readonly #running: Running
  readonly budget: Delivery['budget']

  /** `maxLength`: the longest sealed state, whose bytes a round's new ledger slots can never pass. */
  constructor (running: Running, maxLength: number) {
    this.#running = running
    this.budget = {
      bytes: Math.floor(maxLength * 3 / 4),
      tooLarge: (requests) => `The handler asked for more input in one round than a task's state holds (over ${requests} requests)`,
    }
  }

  start (): ReplayStart {
    const state = this.#running.current.state
    return {
      ledger: state.ledger.map((entry) => ({ ...entry })),
      responses: state.answers,
      round: state.round,
      effects: [...(state.effects ?? [])],
    }
  }

  async deliver (_call: CallState, _label: string, asked: Asked, round: number): Promise<Delivered> {
    const running = this.#running
    running.end()
    const { answers: _answers, message: _message, ...kept } = running.current.state
    const state: TaskState = { ...kept, ledger: asked.ledger, round, asked: asked.inputRequests, ...effectsOf(asked) }
    await running.write('input_required', state, { quota: true })
    return { kind: 'parked' }
  }
}
