import { createInterface, type Interface } from 'node:readline'
import type { Readable, Writable } from 'node:stream'
import type { Asker } from './form.js'

/**
 * Questions on a terminal or a pipe: prompts and messages go to `output`, answers come from
 * `input` line by line. Lines typed ahead (or piped in at once) wait their turn. The input is
 * only opened at the first question, and Ctrl-C or its end answers every question with undefined.
 */
export class Terminal implements Asker {
  readonly #input: Readable
  readonly #output: Writable
  #readline: Interface | undefined
  #lines: AsyncIterator<string> | undefined
  #closed = false
  #ended = false

  constructor (input: Readable, output: Writable) {
    this.#input = input
    this.#output = output
  }

  say (line: string): void {
    this.#output.write(`${line}\n`)
  }

  async ask (prompt: string): Promise<string | undefined> {
    if (this.#readline === undefined) {
      const readline = createInterface({ input: this.#input, output: this.#output })
      readline.on('SIGINT', () => readline.close())
      readline.on('close', () => { this.#closed = true })
      this.#readline = readline
      this.#lines = readline[Symbol.asyncIterator]()
    }
    // Lines read before the input ended are still answers; only then does the end show.
    if (this.#closed) {
      this.#output.write(prompt)
    } else {
      this.#readline.setPrompt(prompt)
      this.#readline.prompt()
    }
    const next = await (this.#lines as AsyncIterator<string>).next()
    const line = next.done === true ? undefined : next.value
    if (line === undefined) this.#ended = true
    // A terminal echoes what was typed; a pipe does not, so the transcript shows it here.
    if (!this.#readline.terminal) this.#output.write(`${line ?? ''}\n`)
    return line
  }

  /** Whether a question met the end of the input (or Ctrl-C), and was answered cancel for it. */
  get ended (): boolean {
    return this.#ended
  }

  /** Lets the input go, so the process can exit. */
  close (): void {
    this.#readline?.close()
  }
}
