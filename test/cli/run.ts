import { PassThrough } from 'node:stream'
import { main } from '../../cli/main.js'

function collect () {
  const stream = new PassThrough()
  let text = ''
  stream.on('data', (chunk) => { text += chunk })
  return { stream, text: () => text }
}

/** Runs the CLI in this process with `lines` on its stdin. */
export async function run (argv: string[], lines: string[] = [], env: Record<string, string> = {}) {
  const stdin = new PassThrough()
  const stdout = collect()
  const stderr = collect()
  stdin.end(lines.map((line) => `${line}\n`).join(''))
  const code = await main(argv, { stdin, stdout: stdout.stream, stderr: stderr.stream, env })
  return { code, stdout: stdout.text(), stderr: stderr.text() }
}
