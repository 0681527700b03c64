/**
 * Terminal forms for elicitations: each field of a flat requested schema becomes one question,
 * with its default in brackets, numbered choices, and an answer checked before it is taken.
 */
import type { ElicitContent, ElicitResult, ElicitUrlView, ElicitView } from '../lib/testing/answers.js'
import { printableLine, printableText } from './sanitize.js'

/** A labelled value of a select. */
export interface Choice {
  value: string
  title: string
}

/** One question of a form, read from one property of the requested schema. */
export interface Field {
  name: string
  label: string
  description: string | undefined
  kind: 'string' | 'number' | 'integer' | 'boolean' | 'choice' | 'choices'
  required: boolean
  /** The property's schema, for its limits (minLength, maximum, format, minItems, …). */
  schema: Record<string, unknown>
  /** The values of a select, in order; empty for other kinds. */
  choices: Choice[]
}

/** What a form asks through: one line in, one line out. `ask` resolves undefined at end of input. */
export interface Asker {
  ask (prompt: string): Promise<string | undefined>
  say (line: string): void
}

/** The outcome of reading one answer: a value, nothing (an optional field skipped), or why it was refused. */
export type Parsed = { value: unknown } | { error: string }

const FORMAT_HINTS: Record<string, string> = {
  email: 'an email address',
  uri: 'a URI such as https://example.com',
  date: 'a date such as 2026-07-28',
  'date-time': 'a date and time such as 2026-07-28T09:30:00Z',
}

function choicesOf (schema: Record<string, unknown>): Choice[] | undefined {
  const titled = (list: unknown) =>
    (list as Array<{ const: string, title?: string }>).map((c) => ({ value: c.const, title: c.title ?? c.const }))
  if (Array.isArray(schema.oneOf)) return titled(schema.oneOf)
  if (Array.isArray(schema.anyOf)) return titled(schema.anyOf)
  if (Array.isArray(schema.enum)) {
    const names = Array.isArray(schema.enumNames) ? schema.enumNames as string[] : []
    return (schema.enum as string[]).map((value, i) => ({ value, title: names[i] ?? value }))
  }
  return undefined
}

/** The questions of a requested schema, in the order of its properties. */
export function fieldsOf (schema: { properties?: Record<string, unknown>, required?: readonly string[] }): Field[] {
  const required = new Set(schema.required ?? [])
  return Object.entries(schema.properties ?? {}).map(([name, value]) => {
    const property = value as Record<string, unknown>
    const base = {
      name,
      label: typeof property.title === 'string' ? property.title : name,
      description: typeof property.description === 'string' ? property.description : undefined,
      required: required.has(name),
      schema: property,
    }
    if (property.type === 'array') {
      return { ...base, kind: 'choices', choices: choicesOf((property.items ?? {}) as Record<string, unknown>) ?? [] }
    }
    const choices = choicesOf(property)
    if (choices !== undefined) return { ...base, kind: 'choice', choices }
    const kind = property.type === 'number' || property.type === 'integer' || property.type === 'boolean' ? property.type : 'string'
    return { ...base, kind, choices: [] }
  })
}

function range (min: unknown, max: unknown, unit: string): string | undefined {
  if (typeof min === 'number' && typeof max === 'number') return `${min}-${max}${unit}`
  if (typeof min === 'number') return `at least ${min}${unit}`
  if (typeof max === 'number') return `at most ${max}${unit}`
  return undefined
}

function titleOf (field: Field, value: string): string {
  return field.choices.find((c) => c.value === value)?.title ?? value
}

/** A server-supplied value on one line of a form. */
function shown (value: unknown): string {
  return printableLine(String(value))
}

/** The default as the prompt shows it, in brackets' content. */
function shownDefault (field: Field): string | undefined {
  const value = field.schema.default
  if (value === undefined) return undefined
  if (field.kind === 'boolean') return value === true ? 'y' : 'n'
  if (field.kind === 'choice') return shown(titleOf(field, value as string))
  if (field.kind === 'choices' && Array.isArray(value)) return value.map((v) => shown(titleOf(field, v))).join(', ')
  return shown(value)
}

/** The lines shown before a field's first prompt: its description (indented, line by line) and its numbered choices. */
export function introOf (field: Field): string[] {
  const lines = field.description === undefined ? [] : printableText(field.description).split('\n').map((line) => `  ${line}`)
  field.choices.forEach((choice, i) => lines.push(`    ${i + 1}) ${shown(choice.title)}`))
  return lines
}

/** The prompt of a field: `  Label (hints) [default]: `. */
export function promptOf (field: Field): string {
  const s = field.schema
  const hints: string[] = []
  if (field.kind === 'string') {
    if (typeof s.format === 'string') hints.push(shown(s.format))
    const length = range(s.minLength, s.maxLength, ' characters')
    if (length !== undefined) hints.push(length)
  } else if (field.kind === 'number' || field.kind === 'integer') {
    hints.push(field.kind)
    const bounds = range(s.minimum, s.maximum, '')
    if (bounds !== undefined) hints.push(bounds)
  } else if (field.kind === 'boolean') {
    hints.push('y/n')
  } else if (field.kind === 'choice') {
    hints.push(`1-${field.choices.length}`)
  } else {
    hints.push('numbers separated by commas')
    const count = range(s.minItems, s.maxItems, '')
    if (count !== undefined) hints.push(count)
  }
  if (!field.required) hints.push('optional')
  const given = shownDefault(field)
  const hinted = hints.length === 0 ? '' : ` (${hints.join(', ')})`
  return `  ${shown(field.label)}${hinted}${given === undefined ? '' : ` [${given}]`}: `
}

/** True when `text` starts with a calendar date that exists (no 31 February). */
function isDate (text: string): boolean {
  const [year, month, day] = text.slice(0, 10).split('-').map(Number)
  const date = new Date(Date.UTC(year, month - 1, day))
  return date.getUTCFullYear() === year && date.getUTCMonth() === month - 1 && date.getUTCDate() === day
}

function checkFormat (format: unknown, text: string): boolean {
  switch (format) {
    case 'email': return /^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(text)
    case 'uri': return /^[A-Za-z][A-Za-z0-9+.-]*:/.test(text) && URL.canParse(text)
    case 'date': return /^\d{4}-\d{2}-\d{2}$/.test(text) && isDate(text)
    case 'date-time': return /^\d{4}-\d{2}-\d{2}T([01]\d|2[0-3]):[0-5]\d:[0-5]\d(\.\d+)?(Z|[+-]\d{2}:\d{2})$/i.test(text) && isDate(text)
    default: return true
  }
}

function parseString (s: Record<string, unknown>, text: string): Parsed {
  const length = [...text].length
  if (typeof s.minLength === 'number' && length < s.minLength) return { error: `must be at least ${s.minLength} characters` }
  if (typeof s.maxLength === 'number' && length > s.maxLength) return { error: `must be at most ${s.maxLength} characters` }
  if (!checkFormat(s.format, text)) return { error: `must be ${FORMAT_HINTS[s.format as string]}` }
  return { value: text }
}

function parseNumber (field: Field, text: string): Parsed {
  const s = field.schema
  const value = Number(text)
  if (!/^[-+]?(\d+\.?\d*|\.\d+)(e[-+]?\d+)?$/i.test(text) || !Number.isFinite(value)) return { error: 'must be a number' }
  if (field.kind === 'integer' && !Number.isInteger(value)) return { error: 'must be a whole number' }
  if (typeof s.minimum === 'number' && value < s.minimum) return { error: `must be at least ${s.minimum}` }
  if (typeof s.maximum === 'number' && value > s.maximum) return { error: `must be at most ${s.maximum}` }
  return { value }
}

function parseBoolean (text: string): Parsed {
  const lower = text.toLowerCase()
  if (['y', 'yes', 'true'].includes(lower)) return { value: true }
  if (['n', 'no', 'false'].includes(lower)) return { value: false }
  return { error: 'answer y or n' }
}

/** A choice by its number, its value, or its title (any case). */
function pick (field: Field, text: string): string | undefined {
  const n = /^\d+$/.test(text) ? Number(text) : NaN
  if (n >= 1 && n <= field.choices.length) return field.choices[n - 1].value
  const lower = text.toLowerCase()
  return field.choices.find((c) => c.value === text || c.title.toLowerCase() === lower)?.value
}

function parseChoices (field: Field, text: string): Parsed {
  const values: string[] = []
  for (const part of text.split(',').map((p) => p.trim()).filter((p) => p !== '')) {
    const value = pick(field, part)
    if (value === undefined) return { error: `${JSON.stringify(part)} is not one of the choices 1-${field.choices.length}` }
    if (!values.includes(value)) values.push(value)
  }
  const s = field.schema
  if (typeof s.minItems === 'number' && values.length < s.minItems) return { error: `choose at least ${s.minItems}` }
  if (typeof s.maxItems === 'number' && values.length > s.maxItems) return { error: `choose at most ${s.maxItems}` }
  return { value: values }
}

/**
 * Reads one answer typed for a field. Empty input takes the default, skips an optional
 * field (value undefined), or is refused for a required one.
 */
export function parseAnswer (field: Field, input: string): Parsed {
  const text = input.trim()
  if (text === '') {
    if (field.schema.default !== undefined) return { value: field.schema.default }
    return field.required ? { error: 'an answer is required' } : { value: undefined }
  }
  switch (field.kind) {
    case 'number':
    case 'integer':
      return parseNumber(field, text)
    case 'boolean':
      return parseBoolean(text)
    case 'choice': {
      const value = pick(field, text)
      return value === undefined ? { error: `choose a number from 1 to ${field.choices.length}` } : { value }
    }
    case 'choices':
      return parseChoices(field, text)
    default:
      return parseString(field.schema, text)
  }
}

/** The escape words, accepted at any prompt of a form. */
const ESCAPES: Record<string, ElicitResult> = { '!decline': { action: 'decline' }, '!cancel': { action: 'cancel' } }

/**
 * Asks a form-mode elicitation field by field, re-asking with the reason until each answer
 * fits. `!decline` and `!cancel` end the form so; the end of input cancels it. With `yes`, nothing
 * is asked: fields with a default take it, optional ones are skipped, and a required field without
 * a default fails the form with an error that names it.
 */
export async function askForm (io: Asker, request: Pick<ElicitView, 'message' | 'schema'>, options: { yes?: boolean } = {}): Promise<ElicitResult> {
  const fields = fieldsOf(request.schema)
  io.say(printableText(request.message))
  if (options.yes === true) return takeDefaults(fields)
  io.say('  (!decline to decline, !cancel to cancel)')
  const content: ElicitContent = {}
  for (const field of fields) {
    for (const line of introOf(field)) io.say(line)
    for (;;) {
      const input = await io.ask(promptOf(field))
      if (input === undefined) return { action: 'cancel' }
      const escape = ESCAPES[input.trim()]
      if (escape !== undefined) return escape
      const parsed = parseAnswer(field, input)
      if ('error' in parsed) {
        io.say(`  ! ${parsed.error}`)
        continue
      }
      if (parsed.value !== undefined) content[field.name] = parsed.value as ElicitContent[string]
      break
    }
  }
  return { action: 'accept', content }
}

/** The answer `--yes` gives: every default, or an error naming the required fields that have none. */
function takeDefaults (fields: Field[]): ElicitResult {
  const unanswered = fields.filter((field) => field.required && field.schema.default === undefined)
  if (unanswered.length > 0) {
    const names = unanswered.map((field) => JSON.stringify(field.name)).join(', ')
    const one = unanswered.length === 1
    throw new Error(`--yes takes only defaults, and the form's field${one ? '' : 's'} ${names} ${one ? 'is' : 'are'} required with none: ` +
      `run without --yes to answer ${one ? 'it' : 'them'}`)
  }
  const content: ElicitContent = {}
  for (const field of fields) {
    if (field.schema.default !== undefined) content[field.name] = field.schema.default as ElicitContent[string]
  }
  return { action: 'accept', content }
}

/** Shows a URL-mode elicitation's link and asks whether the user opened it. */
export async function askUrl (io: Asker, request: Pick<ElicitUrlView, 'message' | 'url'>, options: { yes?: boolean } = {}): Promise<ElicitResult> {
  io.say(printableText(request.message))
  io.say(`  open: ${shown(request.url)}`)
  if (options.yes === true) return { action: 'accept' }
  for (;;) {
    const input = await io.ask('  Did you open it? (y/n, !cancel) [y]: ')
    if (input === undefined) return { action: 'cancel' }
    const text = input.trim().toLowerCase()
    if (text === '' || text === 'y' || text === 'yes') return { action: 'accept' }
    if (text === 'n' || text === 'no' || text === '!decline') return { action: 'decline' }
    if (text === '!cancel') return { action: 'cancel' }
    io.say('  ! answer y or n')
  }
}
