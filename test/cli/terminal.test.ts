import t from 'tap'
import { PassThrough } from 'node:stream'
import { Terminal } from '../../cli/terminal.js'

function output (tty = false) {
  const stream = new PassThrough() as PassThrough & { isTTY?: boolean, columns?: number }
  if (tty) {
    stream.isTTY = true
    stream.columns = 80
  }
  let text = ''
  stream.on('data', (chunk) => { text += chunk })
  return { stream, text: () => text }
}

t.test('piped lines, typed ahead, are answered in turn and echoed; then the end', async (t) => {
  const input = new PassThrough()
  const out = output()
  const terminal = new Terminal(input, out.stream)
  terminal.say('hello')
  input.end('one\ntwo\n')
  t.equal(await terminal.ask('first? '), 'one')
  await new Promise((resolve) => setTimeout(resolve, 20))
  t.equal(await terminal.ask('second? '), 'two', 'a line read before the input ended still counts')
  t.equal(await terminal.ask('third? '), undefined)
  t.equal(await terminal.ask('fourth? '), undefined)
  terminal.close()
  t.equal(out.text(), 'hello\nfirst? one\nsecond? two\nthird? \nfourth? \n')
})

t.test('nothing reads the input until the first question', async (t) => {
  const input = new PassThrough()
  const terminal = new Terminal(input, output().stream)
  terminal.close()
  t.equal(input.listenerCount('data'), 0)
})

t.test('on a terminal, Ctrl-C ends the questions', async (t) => {
  const input = new PassThrough()
  const out = output(true)
  const terminal = new Terminal(input, out.stream)
  const answer = terminal.ask('name? ')
  input.write('Ada\r')
  t.equal(await answer, 'Ada')
  const interrupted = terminal.ask('again? ')
  input.write('\x03')
  t.equal(await interrupted, undefined)
  terminal.close()
  t.match(out.text(), /name\? .*Ada/, 'the terminal echoes what is typed')
})
