/**
 * The sandbox proxy of a web host (MCP Apps, SEP-1865), served from an origin other than the host's. It tells its
 * parent it is ready, takes the view's HTML from the host in `ui/notifications/sandbox-resource-ready`, loads it into
 * an inner iframe under a Content-Security-Policy built from the view's `csp`, and then relays every other message
 * between the host and the view, unchanged.
 *
 * `?host=<origin>` names the host's origin: messages from any other parent origin are dropped, and messages to the
 * parent are posted to that origin only.
 */
import type { McpUiResourceCsp, McpUiResourcePermissions } from '@modelcontextprotocol/ext-apps/app-bridge'

const SANDBOX_PREFIX = 'ui/notifications/sandbox-'
const READY = 'ui/notifications/sandbox-proxy-ready'
const RESOURCE_READY = 'ui/notifications/sandbox-resource-ready'
const INNER_SANDBOX = 'allow-scripts allow-same-origin allow-forms'

const hostOrigin = new URLSearchParams(location.search).get('host') ?? '*'
let inner: HTMLIFrameElement | undefined

/** Source expressions a view asked for, without any that could end a directive or add a keyword. */
function sources (list: unknown): string[] {
  if (!Array.isArray(list)) return []
  return list.filter((item): item is string => typeof item === 'string' && /^[^\s;,'"]+$/.test(item))
}

/** The view's policy: nothing but what its `csp` names, besides its own inline code and origin. */
function policyOf (csp: McpUiResourceCsp | undefined): string {
  const resources = sources(csp?.resourceDomains)
  const connect = sources(csp?.connectDomains)
  const frames = sources(csp?.frameDomains)
  const bases = sources(csp?.baseUriDomains)
  return [
    "default-src 'none'",
    ["script-src 'self' 'unsafe-inline'", ...resources].join(' '),
    ["style-src 'self' 'unsafe-inline'", ...resources].join(' '),
    ["img-src 'self' data:", ...resources].join(' '),
    ["font-src 'self'", ...resources].join(' '),
    ["media-src 'self' data:", ...resources].join(' '),
    ["connect-src 'self'", ...connect].join(' '),
    `frame-src ${frames.length === 0 ? "'none'" : frames.join(' ')}`,
    "object-src 'none'",
    `base-uri ${bases.length === 0 ? "'self'" : bases.join(' ')}`,
  ].join('; ')
}

function escapeAttribute (text: string): string {
  return text.replace(/&/g, '&amp;').replace(/"/g, '&quot;').replace(/</g, '&lt;')
}

/** The HTML with the policy as the first thing in its `<head>`, so that it governs every script. */
function withPolicy (html: string, policy: string): string {
  const meta = `<meta http-equiv="Content-Security-Policy" content="${escapeAttribute(policy)}">`
  const head = /<head(?:\s[^>]*)?>/i.exec(html)
  if (head !== null) return html.slice(0, head.index + head[0].length) + meta + html.slice(head.index + head[0].length)
  const root = /<html(?:\s[^>]*)?>/i.exec(html)
  if (root !== null) return `${html.slice(0, root.index + root[0].length)}<head>${meta}</head>${html.slice(root.index + root[0].length)}`
  return meta + html
}

/** The iframe `allow` attribute for the permissions a view asked for. */
function allowOf (permissions: McpUiResourcePermissions | undefined): string {
  const features: Record<string, string> = { camera: 'camera', microphone: 'microphone', geolocation: 'geolocation', clipboardWrite: 'clipboard-write' }
  return Object.keys(permissions ?? {}).filter((name) => name in features).map((name) => features[name]).join('; ')
}

interface Message { jsonrpc: '2.0', method?: string, params?: Record<string, unknown> }

function isMessage (data: unknown): data is Message {
  return typeof data === 'object' && data !== null && (data as { jsonrpc?: unknown }).jsonrpc === '2.0'
}

/** Loads the view, once. */
function load (params: Record<string, unknown> | undefined): void {
  if (inner !== undefined || typeof params?.html !== 'string') return
  inner = document.createElement('iframe')
  inner.id = 'view'
  inner.title = 'MCP App view'
  inner.setAttribute('sandbox', typeof params.sandbox === 'string' ? params.sandbox : INNER_SANDBOX)
  const allow = allowOf(params.permissions as McpUiResourcePermissions | undefined)
  if (allow !== '') inner.setAttribute('allow', allow)
  inner.srcdoc = withPolicy(params.html, policyOf(params.csp as McpUiResourceCsp | undefined))
  document.body.appendChild(inner)
}

window.addEventListener('message', (event) => {
  const data: unknown = event.data
  if (!isMessage(data)) return
  if (event.source === window.parent) {
    if (hostOrigin !== '*' && event.origin !== hostOrigin) return
    if (data.method === RESOURCE_READY) load(data.params)
    else if (!data.method?.startsWith(SANDBOX_PREFIX)) inner?.contentWindow?.postMessage(data, '*')
  } else if (inner !== undefined && event.source === inner.contentWindow) {
    if (!data.method?.startsWith(SANDBOX_PREFIX)) window.parent.postMessage(data, hostOrigin)
  }
})

window.parent.postMessage({ jsonrpc: '2.0', method: READY, params: {} }, hostOrigin)
