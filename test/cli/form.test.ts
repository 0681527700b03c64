import t from 'tap'
import { requestedSchema } from '../../lib/index.js'
import { askForm, askUrl, fieldsOf, introOf, parseAnswer, promptOf, type Asker, type Field } from '../../cli/form.js'

/** An asker answering from `lines` in order (undefined once they run out), keeping a transcript. */
function scripted (lines: string[]): Asker & { transcript: string[] } {
  const transcript: string[] = []
  return {
    transcript,
    async ask (prompt) {
      const line = lines.shift()
      transcript.push(`${prompt}${line ?? '<end>'}`)
      return line
    },
    say (line) { transcript.push(line) },
  }
}

const field = (schema: Record<string, unknown>, required = true): Field => fieldsOf({ properties: { f: schema }, required: required ? ['f'] : [] })[0]

t.test('fields from every kind of flat schema', async (t) => {
  const schema = requestedSchema()
    .string('name', { title: 'Name', description: 'As on your passport', minLength: 2 })
    .integer('age', { minimum: 0, maximum: 150, optional: true })
    .number('budget', { default: 100 })
    .boolean('confirm', { default: true })
    .choose('cabin', [{ value: 'eco', title: 'Economy' }, { value: 'biz', title: 'Business' }], { default: 'biz' })
    .choose('meal', ['veg', 'fish'])
    .chooseMany('extras', ['wifi', 'bag', 'lounge'], { minItems: 1, maxItems: 2, default: ['wifi', 'bag'] })
    .chooseMany('perks', [{ value: 'a', title: 'Perk A' }], { optional: true })
  const fields = fieldsOf(schema.schema)
  t.same(fields.map((f) => [f.name, f.label, f.kind, f.required]), [
    ['name', 'Name', 'string', true], ['age', 'age', 'integer', false], ['budget', 'budget', 'number', true],
    ['confirm', 'confirm', 'boolean', true], ['cabin', 'cabin', 'choice', true], ['meal', 'meal', 'choice', true],
    ['extras', 'extras', 'choices', true], ['perks', 'perks', 'choices', false],
  ])
  t.same(fields.map(promptOf), [
    '  Name (at least 2 characters): ',
    '  age (integer, 0-150, optional): ',
    '  budget (number) [100]: ',
    '  confirm (y/n) [y]: ',
    '  cabin (1-2) [Business]: ',
    '  meal (1-2): ',
    '  extras (numbers separated by commas, 1-2) [wifi, bag]: ',
    '  perks (numbers separated by commas, optional): ',
  ])
  t.same(introOf(fields[0]), ['  As on your passport'])
  t.same(introOf(fields[4]), ['    1) Economy', '    2) Business'])
  t.same(introOf(fields[1]), [])
})

t.test('hints, defaults and odd schemas from other servers', async (t) => {
  t.equal(promptOf(field({ type: 'string', format: 'email', maxLength: 40 })), '  f (email, at most 40 characters): ')
  t.equal(promptOf(field({ type: 'string', default: 'x' }, false)), '  f (optional) [x]: ')
  t.equal(promptOf(field({ type: 'number', minimum: 1 })), '  f (number, at least 1): ')
  t.equal(promptOf(field({ type: 'boolean', default: false })), '  f (y/n) [n]: ')
  t.equal(promptOf(field({ type: 'string', enum: ['a'], default: 'zz' })), '  f (1-1) [zz]: ', 'a default outside the choices shows as is')
  const legacy = field({ type: 'string', enum: ['a', 'b'], enumNames: ['Alpha'] })
  t.same(legacy.choices, [{ value: 'a', title: 'Alpha' }, { value: 'b', title: 'b' }])
  t.same(field({ type: 'string', oneOf: [{ const: 'x' }] }).choices, [{ value: 'x', title: 'x' }])
  t.same(field({ type: 'array' }).choices, [])
  t.equal(field({ type: 'object' }).kind, 'string', 'anything else is free text')
  t.equal(field({}).kind, 'string')
  t.equal(promptOf(field({ type: 'string', title: 'Name' })), '  Name: ')
  t.same(fieldsOf({}), [])
  t.equal(promptOf(field({ type: 'array', items: { enum: ['a'] }, default: 'a' })), '  f (numbers separated by commas) [a]: ', 'a default that is not a list shows as is')
})

t.test('what the server wrote shows on one line, controls made visible', async (t) => {
  const odd = field({ type: 'string', title: 'Name\x1b[2K\r', format: 'x\ny', default: 'd\u202e', description: 'one\x1b]52;c;aGk=\x07\ntwo' })
  t.equal(promptOf(odd), '  Name␛␍ (x␊y) [d\\u202e]: ')
  t.same(introOf(odd), ['  one␛', '  two'])
  const choices = field({ type: 'string', oneOf: [{ const: 'a', title: 'A\n    2) B' }, { const: 'b\x9b2J' }], default: 'b\x9b2J' })
  t.same(introOf(choices), ['    1) A␊    2) B', '    2) b␛'])
  t.equal(promptOf(choices), '  f (1-2) [b␛]: ')
})

t.test('strings: lengths and formats', async (t) => {
  const short = field({ type: 'string', minLength: 2, maxLength: 3 })
  t.same(parseAnswer(short, 'a'), { error: 'must be at least 2 characters' })
  t.same(parseAnswer(short, 'abcd'), { error: 'must be at most 3 characters' })
  t.same(parseAnswer(short, ' ab '), { value: 'ab' })
  t.same(parseAnswer(short, 'éé'), { value: 'éé' })
  const cases: Array<[string, string, boolean]> = [
    ['email', 'ada@example.com', true], ['email', 'ada@example', false], ['email', 'a b@c.de', false],
    ['uri', 'https://example.com/x', true], ['uri', 'mailto:ada@example.com', true], ['uri', 'example.com', false], ['uri', 'http://', false],
    ['date', '2026-07-28', true], ['date', '2026-02-31', false], ['date', '2026-7-28', false], ['date', '2026-13-01', false],
    ['date-time', '2026-07-28T09:30:00Z', true], ['date-time', '2026-07-28T09:30:00.5+02:00', true],
    ['date-time', '2026-07-28T24:00:00Z', false], ['date-time', '2026-07-28 09:30', false], ['date-time', '2026-02-30T09:30:00Z', false],
    ['color', 'red', true],
  ]
  for (const [format, text, ok] of cases) {
    const parsed = parseAnswer(field({ type: 'string', format }), text)
    t.equal('value' in parsed, ok, `${format}: ${text}`)
  }
  t.same(parseAnswer(field({ type: 'string', format: 'date' }), 'soon'), { error: 'must be a date such as 2026-07-28' })
})

t.test('numbers, integers and booleans', async (t) => {
  const n = field({ type: 'number', minimum: -1, maximum: 10 })
  t.same(parseAnswer(n, '2.5'), { value: 2.5 })
  t.same(parseAnswer(n, '-1'), { value: -1 })
  t.same(parseAnswer(n, '1e1'), { value: 10 })
  t.same(parseAnswer(n, '.5'), { value: 0.5 })
  t.same(parseAnswer(n, '0x10'), { error: 'must be a number' })
  t.same(parseAnswer(n, 'ten'), { error: 'must be a number' })
  t.same(parseAnswer(n, '1e999'), { error: 'must be a number' })
  t.same(parseAnswer(n, '11'), { error: 'must be at most 10' })
  t.same(parseAnswer(n, '-2'), { error: 'must be at least -1' })
  t.same(parseAnswer(field({ type: 'integer' }), '2.5'), { error: 'must be a whole number' })
  t.same(parseAnswer(field({ type: 'integer' }), '7'), { value: 7 })
  const b = field({ type: 'boolean' })
  for (const yes of ['y', 'YES', 'true']) t.same(parseAnswer(b, yes), { value: true })
  for (const no of ['n', 'No', 'false']) t.same(parseAnswer(b, no), { value: false })
  t.same(parseAnswer(b, 'maybe'), { error: 'answer y or n' })
})

t.test('choices by number, value or title; multi-select', async (t) => {
  const one = field({ type: 'string', oneOf: [{ const: 'eco', title: 'Economy' }, { const: 'biz', title: 'Business' }] })
  t.same(parseAnswer(one, '2'), { value: 'biz' })
  t.same(parseAnswer(one, 'eco'), { value: 'eco' })
  t.same(parseAnswer(one, 'business'), { value: 'biz' })
  t.same(parseAnswer(one, '3'), { error: 'choose a number from 1 to 2' })
  t.same(parseAnswer(one, '0'), { error: 'choose a number from 1 to 2' })
  const many = field({ type: 'array', minItems: 1, maxItems: 2, items: { type: 'string', enum: ['wifi', 'bag', 'lounge'] } })
  t.same(parseAnswer(many, '1, 3'), { value: ['wifi', 'lounge'] })
  t.same(parseAnswer(many, 'bag,bag,'), { value: ['bag'] })
  t.same(parseAnswer(many, '1,2,3'), { error: 'choose at most 2' })
  t.same(parseAnswer(many, ','), { error: 'choose at least 1' })
  t.same(parseAnswer(many, '1,9'), { error: '"9" is not one of the choices 1-3' })
  t.same(parseAnswer(field({ type: 'array', items: { anyOf: [{ const: 'a', title: 'A' }] } }), 'a'), { value: ['a'] })
})

t.test('empty input: the default, a skip, or required', async (t) => {
  t.same(parseAnswer(field({ type: 'string', default: 'x' }), '  '), { value: 'x' })
  t.same(parseAnswer(field({ type: 'boolean', default: false }), ''), { value: false })
  t.same(parseAnswer(field({ type: 'string' }, false), ''), { value: undefined })
  t.same(parseAnswer(field({ type: 'string' }), ''), { error: 'an answer is required' })
})

const booking = requestedSchema()
  .boolean('confirm', { title: 'Confirm' })
  .choose('cabin', ['economy', 'business'], { default: 'economy' })
  .integer('bags', { minimum: 0, maximum: 3, optional: true })
  .string('note', { optional: true })

t.test('a form re-asks with the reason until the answer fits', async (t) => {
  const io = scripted(['perhaps', 'y', '', 'lots', '9', '2', ''])
  t.same(await askForm(io, { message: 'Book it?', schema: booking.schema }), { action: 'accept', content: { confirm: true, cabin: 'economy', bags: 2 } })
  t.same(io.transcript, [
    'Book it?',
    '  (!decline to decline, !cancel to cancel)',
    '  Confirm (y/n): perhaps',
    '  ! answer y or n',
    '  Confirm (y/n): y',
    '    1) economy',
    '    2) business',
    '  cabin (1-2) [economy]: ',
    '  bags (integer, 0-3, optional): lots',
    '  ! must be a number',
    '  bags (integer, 0-3, optional): 9',
    '  ! must be at most 3',
    '  bags (integer, 0-3, optional): 2',
    '  note (optional): ',
  ])
})

t.test('escape words and the end of input', async (t) => {
  t.same(await askForm(scripted(['y', ' !decline ']), { message: 'm', schema: booking.schema }), { action: 'decline' })
  t.same(await askForm(scripted(['!cancel']), { message: 'm', schema: booking.schema }), { action: 'cancel' })
  t.same(await askForm(scripted(['y']), { message: 'm', schema: booking.schema }), { action: 'cancel' })
})

t.test('--yes takes defaults and skips optional fields without asking anything', async (t) => {
  const io = scripted(['n'])
  const defaults = requestedSchema()
    .boolean('confirm', { title: 'Confirm', default: false })
    .choose('cabin', ['economy', 'business'], { default: 'economy' })
    .integer('bags', { minimum: 0, maximum: 3, optional: true })
  t.same(await askForm(io, { message: 'Book it?', schema: defaults.schema }, { yes: true }), { action: 'accept', content: { confirm: false, cabin: 'economy' } })
  t.same(io.transcript, ['Book it?'])
})

t.test('--yes fails a form with a required field that has no default, naming it, and asks nothing', async (t) => {
  const io = scripted(['y'])
  await t.rejects(askForm(io, { message: 'Book it?', schema: booking.schema }, { yes: true }),
    { message: '--yes takes only defaults, and the form\'s field "confirm" is required with none: run without --yes to answer it' })
  t.same(io.transcript, ['Book it?'], 'no prompt')
  const two = requestedSchema().string('name').choose('seat', ['window', 'aisle']).boolean('ok', { default: true })
  await t.rejects(askForm(scripted([]), { message: 'Who?', schema: two.schema }, { yes: true }),
    { message: '--yes takes only defaults, and the form\'s fields "name", "seat" are required with none: run without --yes to answer them' })
})

t.test('a link: opened, declined, cancelled, re-asked', async (t) => {
  const link = { message: 'Sign in', url: 'https://example.com/login' }
  const io = scripted(['what', 'Y'])
  t.same(await askUrl(io, link), { action: 'accept' })
  t.same(io.transcript, ['Sign in', '  open: https://example.com/login', '  Did you open it? (y/n, !cancel) [y]: what', '  ! answer y or n', '  Did you open it? (y/n, !cancel) [y]: Y'])
  t.same(await askUrl(scripted(['']), link), { action: 'accept' })
  t.same(await askUrl(scripted(['yes']), link), { action: 'accept' })
  t.same(await askUrl(scripted(['n']), link), { action: 'decline' })
  t.same(await askUrl(scripted(['no']), link), { action: 'decline' })
  t.same(await askUrl(scripted(['!decline']), link), { action: 'decline' })
  t.same(await askUrl(scripted(['!cancel']), link), { action: 'cancel' })
  t.same(await askUrl(scripted([]), link), { action: 'cancel' })
  const quiet = scripted([])
  t.same(await askUrl(quiet, link, { yes: true }), { action: 'accept' })
  t.same(quiet.transcript, ['Sign in', '  open: https://example.com/login'])
})
