// RFC 6570 level 1, matched in two sweeps linear in the URI: a regular expression would backtrack polynomially on a
// near miss whose literals are unreserved characters (`{a}.{b}.{c}`).
import { InvalidDefinitionError } from '../errors.js'
import { setOwn } from '../protocol/wire.js'

const EXPRESSION = /\{([^}]*)\}/g
const VARNAME = /^[A-Za-z0-9_]+$/

const UNRESERVED = new Uint8Array(128)
for (let c = 0; c < 128; c++) {
  const ch = String.fromCharCode(c)
  if (/[A-Za-z0-9\-._~]/.test(ch)) UNRESERVED[c] = 1
}

function isHex (code: number): boolean {
  return (code >= 48 && code <= 57) || (code >= 65 && code <= 70) || (code >= 97 && code <= 102)
}

/** Where the expansion unit starting at `i` ends: one unreserved character or one `%XX`; -1 when none starts there. */
function unitEnd (uri: string, i: number): number {
  const c = uri.charCodeAt(i)
  if (c < 128 && UNRESERVED[c] === 1) return i + 1
  if (c === 37 && i + 2 < uri.length && isHex(uri.charCodeAt(i + 1)) && isHex(uri.charCodeAt(i + 2))) return i + 3
  return -1
}

export class UriTemplate {
  readonly variables: readonly string[]
  readonly #literals: readonly string[]
  readonly #minLength: number

  constructor (template: string, where: string) {
    if (/[{}]/.test(template.replace(EXPRESSION, ''))) throw new InvalidDefinitionError(`${where} has an unbalanced brace`)
    const variables: string[] = []
    const literals: string[] = []
    let last = 0
    for (const match of template.matchAll(EXPRESSION)) {
      const name = match[1]
      if (!VARNAME.test(name)) throw new InvalidDefinitionError(`${where} uses "{${name}}": only RFC 6570 level-1 expressions like {id} are supported`)
      if (variables.includes(name)) throw new InvalidDefinitionError(`${where} repeats the variable "${name}"`)
      variables.push(name)
      literals.push(template.slice(last, match.index))
      last = match.index + match[0].length
    }
    literals.push(template.slice(last))
    this.variables = variables
    this.#literals = literals
    this.#minLength = literals.reduce((sum, literal) => sum + literal.length, 0) + variables.length
  }

  match (uri: string): Record<string, string> | undefined {
    const literals = this.#literals
    const count = this.variables.length
    const n = uri.length
    if (n < this.#minLength || !uri.startsWith(literals[0]) || !uri.endsWith(literals[count])) return undefined
    if (count === 0) return n === literals[0].length ? {} : undefined

    // ends[k][j] = 1 when literal k starts at j and the rest of the template matches from there on.
    const ends: Uint8Array[] = new Array(count + 1)
    ends[count] = new Uint8Array(n + 1)
    ends[count][n - literals[count].length] = 1
    for (let k = count; k >= 1; k--) {
      // starts[i] = 1 when variable k can start at i: one unit, then more of it or literal k.
      const starts = new Uint8Array(n + 1)
      const next = ends[k]
      for (let i = n - 1; i >= literals[k - 1].length; i--) {
        const j = unitEnd(uri, i)
        if (j !== -1 && (next[j] === 1 || starts[j] === 1)) starts[i] = 1
      }
      const before = literals[k - 1]
      const here = new Uint8Array(n + 1)
      if (k === 1) {
        if (starts[before.length] === 1) here[0] = 1
      } else {
        for (let i = 0; i + before.length <= n; i++) {
          if (starts[i + before.length] === 1 && uri.startsWith(before, i)) here[i] = 1
        }
      }
      ends[k - 1] = here
    }
    if (ends[0][0] !== 1) return undefined

    // Left to right, each variable takes the longest run after which the rest still matches.
    const values: Record<string, string> = {}
    let p = literals[0].length
    for (let k = 1; k <= count; k++) {
      let end = -1
      for (let i = unitEnd(uri, p); i !== -1; i = i < n ? unitEnd(uri, i) : -1) {
        if (ends[k][i] === 1) end = i
      }
      let value
      try {
        value = decodeURIComponent(uri.slice(p, end))
      } catch {
        return undefined
      }
      setOwn(values, this.variables[k - 1], value)
      p = end + literals[k].length
    }
    return values
  }
}
