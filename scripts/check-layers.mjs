// Holds lib/'s layering: every import (type imports included) points to a file on the same floor or one below, and no
// files import each other in a circle. Run by `npm run lint`; prints the floors and exits 1 on any breach.
import { readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const root = resolve(dirname(fileURLToPath(import.meta.url)), '..')
const lib = join(root, 'lib')

// Floors from the bottom. A file belongs to the first entry that names it or its folder, the longest name first.
const FLOORS = [
  ['leaves', ['errors.ts', 'check.ts', 'version.ts', 'symbols.ts', 'caller.ts', 'json-schema.ts', 'types/', 'protocol/']],
  ['seal', ['seal/']],
  ['bus', ['bus/']],
  ['elicitation', ['elicitation/']],
  ['call', ['call.ts', 'journal.ts']],
  ['replay', ['replay/']],
  ['context', ['context.ts']],
  ['features', ['features/']],
  ['tasks', ['tasks/']],
  ['receipts', ['receipts/']],
  ['events', ['events/']],
  ['transport', ['transport/']],
  ['modern', ['modern/']],
  ['legacy', ['legacy/']],
  ['redis', ['redis/']],
  ['testing', ['testing/']],
  ['plugin', ['options.ts', 'registry.ts', 'index.ts']],
]

function floorOf (file) {
  let best
  for (const [index, [, names]] of FLOORS.entries()) {
    for (const name of names) {
      const matches = name.endsWith('/') ? file.startsWith(name) : file === name
      if (matches && (best === undefined || name.length > best.length)) best = { index, length: name.length }
    }
  }
  return best?.index
}

function files (dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name)
    if (entry.isDirectory()) return files(path)
    return entry.name.endsWith('.ts') ? [relative(lib, path)] : []
  })
}

// Static imports and re-exports, `import type` included; a bare specifier (a package) is not lib's.
const IMPORT = /^\s*(?:import|export)\s[^'"]*?from\s+'(\.[^']+)'/gm

const all = files(lib)
const edges = new Map()
const problems = []
for (const file of all) {
  const floor = floorOf(file)
  if (floor === undefined) problems.push(`${file}: on no floor (add it to FLOORS in scripts/check-layers.mjs)`)
  const targets = []
  for (const [, specifier] of readFileSync(join(lib, file), 'utf8').matchAll(IMPORT)) {
    const target = relative(lib, resolve(lib, dirname(file), specifier)).replace(/\.js$/, '.ts')
    targets.push(target)
    const to = floorOf(target)
    if (floor !== undefined && to !== undefined && to > floor) {
      problems.push(`${file} (${FLOORS[floor][0]}) imports ${target} (${FLOORS[to][0]}), a floor above`)
    }
  }
  edges.set(file, targets)
}

// Circles: a depth-first walk that meets a file still on its path.
const state = new Map()
function walk (file, path) {
  state.set(file, 'open')
  for (const target of edges.get(file) ?? []) {
    if (state.get(target) === 'open') problems.push(`a circle: ${[...path.slice(path.indexOf(target)), target].join(' -> ')}`)
    else if (!state.has(target)) walk(target, [...path, target])
  }
  state.set(file, 'done')
}
for (const file of all) if (!state.has(file)) walk(file, [file])

for (const [index, [name]] of FLOORS.entries()) {
  const members = all.filter((file) => floorOf(file) === index)
  console.log(`${String(index).padStart(2)} ${name.padEnd(12)} ${members.length} files`)
}
if (problems.length > 0) {
  console.error(`\ncheck-layers: ${problems.length} problem${problems.length === 1 ? '' : 's'}`)
  for (const problem of problems) console.error(`  ${problem}`)
  process.exit(1)
}
console.log(`check-layers: ${all.length} files, ${[...edges.values()].flat().length} imports, none upward, no circle`)
