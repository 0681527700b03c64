import t from 'tap'
import { printableJson, printableLine, printableText } from '../../cli/sanitize.js'

t.test('escape sequences are removed and marked, whatever their kind', async (t) => {
  const cases: Array<[string, string]> = [
    ['erase\x1b[2K\x1b[1A\x1b[0Ghere', 'erase␛␛␛here'],
    ['\x1b[38;5;196mred\x1b[0m', '␛red␛'],
    ['clip\x1b]52;c;aGk=\x07board', 'clip␛board'],
    ['\x1b]8;;https://evil.example\x1b\\https://good.example\x1b]8;;\x1b\\', '␛https://good.example␛'],
    ['title\x1b]0;owned\x9cdone', 'title␛done'],
    ['\x1bPq#0;2;0;0;0\x1b\\dcs', '␛dcs'],
    ['\x1bXsos\x07\x1b^pm\x07\x1b_apc\x07end', '␛␛␛end'],
    ['\x1b]unfinished\x1b[31mred', '␛␛red'],
    ['\x9b2J8-bit CSI', '␛8-bit CSI'],
    ['\x9d52;c;aGk=\x07osc', '␛osc'],
    ['\x1bcreset \x1b7save \x1b(Bcharset', '␛reset ␛save ␛charset'],
    ['\x1b[1;', '␛'],
    ['a\x1b', 'a␛'],
    ['\x1b\x1b[Kb', '␛␛b'],
  ]
  for (const [input, expected] of cases) {
    t.equal(printableLine(input), expected, printableJson(input))
    t.equal(printableText(input), expected, printableJson(input))
  }
})

t.test('other controls show as control pictures or \\u escapes', async (t) => {
  t.equal(printableLine('a\rb\bc\x00d\x7fe'), 'a␍b␈c␀d␡e')
  t.equal(printableLine('\x85next line \x9cst'), '\\u0085next line \\u009cst')
  t.equal(printableLine('pay \u202egnp.exe\u202c \u2066x\u2069 \u200e\u200f\u061c'), 'pay \\u202egnp.exe\\u202c \\u2066x\\u2069 \\u200e\\u200f\\u061c')
  t.equal(printableLine('one\u2028two\u2029'), 'one\\u2028two\\u2029')
})

t.test('one line shows newlines and tabs; text keeps them, and CRLF becomes LF', async (t) => {
  t.equal(printableLine('a\nb\tc\r\n'), 'a␊b␉c␍␊')
  t.equal(printableText('a\nb\tc\r\nd\re'), 'a\nb\tc\nd␍e')
})

t.test('plain text, accents, emoji and CJK pass unchanged', async (t) => {
  const text = 'Café — 東京 ✈️ 🧳 naïve'
  t.equal(printableLine(text), text)
  t.equal(printableText(''), '')
})

t.test('a megabyte of unfinished sequences is cleaned in one pass', async (t) => {
  const units: Array<[string, string]> = [['\x1b[', '␛'], ['\x1b]', '␛'], ['\x1bP', '␛'], ['\x9b', '␛'], ['\x1b[1;2', '␛'], ['\x1b]x\x1b', '␛␛']]
  for (const [unit, mark] of units) {
    const count = Math.ceil(1_000_000 / unit.length)
    const out = printableLine(unit.repeat(count))
    t.equal(out, mark.repeat(count), printableJson(unit))
  }
  t.equal(printableLine(`\x1b]${'x'.repeat(1_000_000)}`), '␛', 'an unterminated control string runs to the end')
})

t.test('JSON keeps its value, with the controls JSON.stringify leaves raw escaped', async (t) => {
  const value = { text: 'a\x1b[2K\u202e\x9b\x7f\u2028b', n: 1 }
  const json = printableJson(value)
  t.equal(json, '{"text":"a\\u001b[2K\\u202e\\u009b\\u007f\\u2028b","n":1}')
  t.same(JSON.parse(json), value)
  t.equal(printableJson([1], 2), '[\n  1\n]')
})
