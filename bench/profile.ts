/**
 * Summarises a V8 CPU profile: the functions with the most self time, then mocapi's own functions
 * by total time (their callees included, so Ajv's compile shows under the mocapi code that called
 * it). To profile the benchmark's mocapi server:
 *
 *   node --cpu-prof --cpu-prof-dir=prof dist/bench/servers.js mocapi 3101   # load it, then Ctrl-C
 *   node dist/bench/profile.js prof/<file>.cpuprofile [rows] [µs of server CPU per request]
 *
 * Last, each sample is put in one stage of a request (envelope, principal, open, replay, validation, fingerprint,
 * seal, reply, Fastify and HTTP, garbage collection): the innermost frame on its stack that names a stage decides.
 * Given the server's CPU per request (1e6 / the bench's req/s per server CPU-second), the stages are also in µs.
 */
import { readFileSync } from 'node:fs'

interface ProfileNode {
  id: number
  callFrame: { functionName: string, url: string, lineNumber: number }
  children?: number[]
}
interface Profile { nodes: ProfileNode[], samples: number[], timeDeltas: number[] }

const [file, rowsText] = process.argv.slice(2)
if (file === undefined) {
  console.error('usage: node dist/bench/profile.js <file.cpuprofile> [rows]')
  process.exit(2)
}
const rows = Number(rowsText ?? 25)
const perRequest = process.argv[4] === undefined ? undefined : Number(process.argv[4])
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile

const parent = new Map<number, ProfileNode>()
const byId = new Map<number, ProfileNode>()
for (const node of profile.nodes) {
  byId.set(node.id, node)
  for (const child of node.children ?? []) parent.set(child, node)
}

/** `function file:line`, with paths cut down to what tells them apart. */
function label (node: ProfileNode): string {
  const { functionName, url, lineNumber } = node.callFrame
  const where = url.replace(/^file:\/\//, '').replace(/^.*\/node_modules\//, '').replace(/^.*\/(?=lib\/)/, '')
  return `${functionName === '' ? '(anonymous)' : functionName} ${where === '' ? '' : `${where}:${lineNumber + 1}`}`.trim()
}
const isOwn = (node: ProfileNode): boolean => /\/lib\//.test(node.callFrame.url) && !/\/node_modules\//.test(node.callFrame.url)

const self = new Map<string, number>()
const total = new Map<string, number>()
let all = 0
let idle = 0
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0
  const node = byId.get(id) as ProfileNode
  all += dt
  if (node.callFrame.functionName === '(idle)') idle += dt
  self.set(label(node), (self.get(label(node)) ?? 0) + dt)
  // Count each of mocapi's functions once per sample, however deep the recursion.
  const seen = new Set<string>()
  for (let at: ProfileNode | undefined = node; at !== undefined; at = parent.get(at.id)) {
    if (isOwn(at)) seen.add(label(at))
  }
  for (const name of seen) total.set(name, (total.get(name) ?? 0) + dt)
})

const busy = all - idle
const pct = (us: number): string => `${(100 * us / busy).toFixed(1).padStart(5)}%`
console.log(`${(all / 1e6).toFixed(1)} s profiled, ${(100 * idle / all).toFixed(0)}% idle; shares below are of the busy time`)
console.log('\nself time')
for (const [name, us] of [...self].filter(([name]) => !name.startsWith('(idle)')).sort((a, b) => b[1] - a[1]).slice(0, rows)) {
  console.log(`${pct(us)}  ${name}`)
}
console.log('\nmocapi functions, total time (callees included)')
for (const [name, us] of [...total].sort((a, b) => b[1] - a[1]).slice(0, rows)) {
  console.log(`${pct(us)}  ${name}`)
}

/** Stages of a request, by where a frame's code is: the first rule a frame matches names its stage. */
const STAGES: Array<[string, (node: ProfileNode) => boolean]> = [
  ['seal', (node) => /lib\/seal\/seal\.js/.test(node.callFrame.url) && /^(seal|#sealingKey|fillRandom|tokenLength)$/.test(node.callFrame.functionName)],
  ['seal', (node) => /lib\/modern\/codec\.js/.test(node.callFrame.url) && /^(encode|unwritable)$/.test(node.callFrame.functionName)],
  ['open', (node) => /lib\/seal\/seal\.js|lib\/modern\/codec\.js/.test(node.callFrame.url)],
  ['fingerprint', (node) => /lib\/replay\/fingerprint\.js|lib\/seal\/digest\.js/.test(node.callFrame.url)],
  ['validation', (node) => /lib\/elicitation\/|lib\/json-schema\.js|\/ajv\//.test(node.callFrame.url) || (node.callFrame.url === '' && /^validate/.test(node.callFrame.functionName))],
  ['replay', (node) => /lib\/(replay|modern\/token-delivery|context|call)\b/.test(node.callFrame.url)],
  ['principal', (node) => /lib\/transport\/principal\.js|lib\/address\.js|lib\/features\/scopes\.js/.test(node.callFrame.url)],
  ['envelope', (node) => /lib\/protocol\/|lib\/transport\/(era|hosts|route)\.js|lib\/modern\/(transport|methods)\.js|lib\/features\//.test(node.callFrame.url)],
  ['the socket write (writev)', (node) => /^writev/.test(node.callFrame.functionName)],
  ['reply', (node) => /lib\/transport\/(channel|observers|tracing)\.js|fastify\/lib\/reply\.js/.test(node.callFrame.url)],
  ['garbage collection', (node) => node.callFrame.functionName === '(garbage collector)'],
  ['bench server', (node) => /\/bench\//.test(node.callFrame.url)],
]
const stages = new Map<string, number>()
profile.samples.forEach((id, i) => {
  const dt = profile.timeDeltas[i] ?? 0
  const node = byId.get(id) as ProfileNode
  if (node.callFrame.functionName === '(idle)') return
  let stage: string | undefined
  for (let at: ProfileNode | undefined = node; at !== undefined && stage === undefined; at = parent.get(at.id)) {
    const frame = at
    stage = STAGES.find(([, test]) => test(frame))?.[0]
  }
  stage ??= 'Fastify, HTTP and the rest'
  stages.set(stage, (stages.get(stage) ?? 0) + dt)
})
console.log(`\nstages of a request (the innermost frame that names one)${perRequest === undefined ? '' : `, of ${perRequest} µs of server CPU per request`}`)
for (const [name, us] of [...stages].sort((a, b) => b[1] - a[1])) {
  const micro = perRequest === undefined ? '' : `  ${(perRequest * us / busy).toFixed(1).padStart(5)} µs`
  console.log(`${pct(us)}${micro}  ${name}`)
}
