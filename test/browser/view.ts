/**
 * The counter view, on the official `App` of MCP Apps: it shows the count of the tool result the host sends, and its
 * Bump button calls the app-only tool `bump` back through the host, showing the new count or the error. Once
 * connected it also probes its Content-Security-Policy: a fetch to an origin its `csp.connectDomains` names and one to
 * the MCP server's own origin, which it does not; the violations it sees are listed in `#csp` (and as JSON in its `data-violations`).
 */
import { App } from '@modelcontextprotocol/ext-apps'
import type { CallToolResult } from '@modelcontextprotocol/client'

const count = document.getElementById('count')!
const status = document.getElementById('status')!
const button = document.getElementById('bump') as HTMLButtonElement
const cspOut = document.getElementById('csp')!

function textOf (result: CallToolResult): string {
  return result.content.map((block) => block.type === 'text' ? block.text : '').join(' ')
}

function show (result: CallToolResult): void {
  const structured = result.structuredContent as { count?: unknown } | undefined
  count.textContent = typeof structured?.count === 'number' ? String(structured.count) : textOf(result)
}

const app = new App({ name: 'counter-view', version: '1.0.0' }, {}, { autoResize: true })
app.ontoolinput = (params) => { document.body.dataset.input = JSON.stringify(params.arguments ?? {}) }
app.ontoolresult = (result) => show(result)

button.addEventListener('click', async () => {
  button.disabled = true
  status.textContent = 'Bumping…'
  try {
    const result = await app.callServerTool({ name: 'bump', arguments: {} })
    if (result.isError === true) {
      status.textContent = `Error: ${textOf(result)}`
    } else {
      show(result)
      status.textContent = textOf(result)
    }
  } catch (error) {
    status.textContent = `Error: ${error instanceof Error ? error.message : String(error)}`
  } finally {
    button.disabled = false
  }
})

/** Fetches an origin the policy allows, then one it does not, and lists the violations reported. */
async function probe (): Promise<void> {
  const violations: Array<{ directive: string, blocked: string }> = []
  const denied = `http://127.0.0.1:${new URL(self.origin).port}/mcp`
  const seen = new Promise<void>((resolve) => {
    document.addEventListener('securitypolicyviolation', (event) => {
      violations.push({ directive: event.effectiveDirective, blocked: event.blockedURI })
      if (event.blockedURI.startsWith(denied)) resolve()
    })
    setTimeout(resolve, 3_000)
  })
  // Port 9 is one browsers refuse to connect to: allowed by the policy, it fails at once without a violation.
  await fetch('http://127.0.0.1:9/', { mode: 'no-cors' }).catch(() => {})
  await fetch(denied, { mode: 'no-cors' }).catch(() => {})
  await seen
  cspOut.textContent = violations.map((one) => `${one.directive} blocked ${one.blocked}`).join('\n') || 'no policy violations'
  cspOut.dataset.violations = JSON.stringify(violations)
}

async function main (): Promise<void> {
  try {
    await app.connect()
    document.body.dataset.connected = 'true'
  } catch (error) {
    status.textContent = `Not connected: ${error instanceof Error ? error.message : String(error)}`
    return
  }
  await probe()
}

main().catch((error: unknown) => { status.textContent = `Error: ${String(error)}` })
