/**
 * Server text made safe for a terminal. A server chooses its tool descriptions, questions, choices,
 * notifications and results; printed raw, an escape sequence in them could erase or rewrite the
 * question being confirmed, set the clipboard (OSC 52) or hide a link (OSC 8), and bidi controls
 * could reorder what the user reads. Each removed sequence shows as `␛`; other controls show as
 * their control picture (`␍`) or as `\uXXXX`, so the user sees that something was there.
 *
 * One pass, each character looked at once: hostile input costs linear time.
 */

const ESC = 0x1b
const BEL = 0x07
const ST = 0x9c
const MARK = '\u241b'

/** C1 codes that open a sequence, with the 7-bit ESC form's second character: CSI, OSC, DCS, SOS, PM, APC. */
const C1_OPENERS: Record<number, number> = { 0x9b: 0x5b, 0x9d: 0x5d, 0x90: 0x50, 0x98: 0x58, 0x9e: 0x5e, 0x9f: 0x5f }

/** Bidi controls and the line and paragraph separators: shown as `\uXXXX`. */
function isFormatControl (code: number): boolean {
  return code === 0x061c || code === 0x200e || code === 0x200f || (code >= 0x202a && code <= 0x202e) ||
    (code >= 0x2066 && code <= 0x2069) || code === 0x2028 || code === 0x2029
}

function isSafe (code: number, lines: boolean): boolean {
  if (code >= 0x20 && code < 0x7f) return true
  if (code < 0x20) return lines && (code === 0x0a || code === 0x09)
  return code >= 0xa0 && !isFormatControl(code)
}

// Past the end, charCodeAt is NaN, which fails every range check below: no bounds checks needed.

/** The end of a CSI sequence whose parameters start at `i`: parameters and intermediates, then a final byte. */
function controlSequenceEnd (text: string, i: number): number {
  while (text.charCodeAt(i) >= 0x20 && text.charCodeAt(i) <= 0x3f) i++
  const code = text.charCodeAt(i)
  return code >= 0x40 && code <= 0x7e ? i + 1 : i
}

/**
 * The end of a control string (OSC, DCS, SOS, PM, APC) starting at `i`: after BEL or ST, before
 * an ESC that starts something else.
 */
function controlStringEnd (text: string, i: number): number {
  for (; i < text.length; i++) {
    const code = text.charCodeAt(i)
    if (code === BEL || code === ST) return i + 1
    if (code === ESC) return text.charCodeAt(i + 1) === 0x5c ? i + 2 : i
  }
  return i
}

/** The end of the sequence its opener (`second`, the character after ESC) starts at `i`. */
function sequenceEnd (text: string, second: number, i: number): number {
  if (second === 0x5b) return controlSequenceEnd(text, i)
  if (second === 0x5d || second === 0x50 || second === 0x58 || second === 0x5e ||
    second === 0x5f) return controlStringEnd(text, i)
  // An ESC Fe/Fp/Fs escape: intermediates, then a final character.
  let end = i - 1
  while (text.charCodeAt(end) >= 0x20 && text.charCodeAt(end) <= 0x2f) end++
  const code = text.charCodeAt(end)
  return code >= 0x30 && code <= 0x7e ? end + 1 : i - 1
}

function hex (code: number): string {
  return `\\u${code.toString(16).padStart(4, '0')}`
}

/** Writes what stands in for the unsafe character at `i` to `out`; returns where the text goes on. */
function replace (text: string, i: number, lines: boolean, out: string[]): number {
  const code = text.charCodeAt(i)
  const opener = code === ESC ? text.charCodeAt(i + 1) : C1_OPENERS[code]
  if (opener !== undefined) {
    out.push(MARK)
    return sequenceEnd(text, opener, code === ESC ? i + 2 : i + 1)
  }
  if (code === 0x0d && lines && text.charCodeAt(i + 1) === 0x0a) return i + 1
  if (code < 0x20) out.push(String.fromCharCode(0x2400 + code))
  else out.push(code === 0x7f ? '\u2421' : hex(code))
  return i + 1
}

function clean (text: string, lines: boolean): string {
  const out: string[] = []
  let from = 0
  let i = 0
  while (i < text.length) {
    if (isSafe(text.charCodeAt(i), lines)) {
      i++
      continue
    }
    if (from < i) out.push(text.slice(from, i))
    i = from = replace(text, i, lines, out)
  }
  if (from === 0) return text
  if (from < text.length) out.push(text.slice(from))
  return out.join('')
}

/** Server text for one line (a prompt, a choice, a list entry): newlines and tabs show too. */
export function printableLine (text: string): string {
  return clean(text, false)
}

/** Server text that may span lines (a question, a result): newlines and tabs stay, CRLF becomes LF. */
export function printableText (text: string): string {
  return clean(text, true)
}

/** Bidi controls, DEL and C1 codes, which `JSON.stringify` leaves raw. */
const RAW_IN_JSON = /[\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]/g

/**
 * JSON for a terminal or a pipe: the same value, with every control that JSON.stringify leaves
 * raw written as `\uXXXX`.
 */
export function printableJson (value: unknown, space?: number): string {
  return JSON.stringify(value, null, space).replace(RAW_IN_JSON, (c) => hex(c.charCodeAt(0)))
}
