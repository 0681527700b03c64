/**
 * A small MCP Apps host (SEP-1865) for a web page: the official v2 client connects to an MCP server, declaring the
 * `io.modelcontextprotocol/ui` extension; a tool call whose tool links a view (`_meta.ui.resourceUri`) renders that
 * view in a sandbox proxy iframe on another origin, through the official `AppBridge`, and the view's own tool calls go
 * back to the server through this host, which lets a view call only the tools whose visibility includes `app`.
 *
 * Configured by `window.hostConfig`, else by URL parameters (`mcp`, `token`, `era`, `sandbox`). The test reads and
 * drives it through `window.host` ({@link HostApi}); elicitations are answered from `window.hostAnswers` and recorded
 * in `window.hostLog`.
 */
import { Client, StreamableHTTPClientTransport, type CallToolResult, type Tool } from '@modelcontextprotocol/client'
import {
  AppBridge, PostMessageTransport, RESOURCE_MIME_TYPE, getToolUiResourceUri, isToolVisibilityAppOnly,
  type McpUiResourceCsp, type McpUiResourcePermissions,
} from '@modelcontextprotocol/ext-apps/app-bridge'

export interface HostConfig {
  /** The MCP endpoint. */
  mcpUrl: string
  /** A bearer token sent with every request. */
  token?: string
  /** `legacy`: the client's default, a 2025-11-25 session; `modern`: pinned to 2026-07-28. */
  era: 'legacy' | 'modern'
  /** The sandbox proxy page, on an origin other than this page's. */
  sandboxUrl: string
}

/** An answer the host gives to the next elicitation. */
export type Answer = { action: 'accept', content: Record<string, string | number | boolean> } | { action: 'decline' } | { action: 'cancel' }

/** A question the server asked, and what the host answered. */
export interface Asked { message: string, requestedSchema: unknown, answer: Answer['action'] }

/** A view's `tools/call`, as the host handled it. */
export interface BridgedCall { name: string, arguments: unknown, outcome: 'forwarded' | 'refused' | 'failed', detail?: string }

/** A view the host rendered. */
export interface RenderedView { uri: string, mimeType: string | undefined, meta: Record<string, unknown> | undefined, tool: string }

/** What the page offers the test. */
export interface HostApi {
  /** Settles once the client is connected and the tools listed; rejects when either failed. */
  ready: Promise<void>
  era?: string
  protocolVersion?: string
  /** The tools/list the host got, as listed. */
  tools: Tool[]
  /** The names of the tools the host would give its model: none that only views may call. */
  modelTools: string[]
  views: RenderedView[]
  bridged: BridgedCall[]
  errors: string[]
  /** Calls a tool as the model would, and renders its view when it has one; resolves once the view has its result. */
  callTool (name: string, args?: Record<string, unknown>): Promise<CallToolResult>
}

declare global {
  interface Window {
    hostConfig?: HostConfig
    hostAnswers?: Answer[]
    hostLog?: Asked[]
    host?: HostApi
  }
}

const HOST_INFO = { name: 'mocapi-test-host', version: '1.0.0' }
const UI_EXTENSION = 'io.modelcontextprotocol/ui'

function configOf (): HostConfig {
  if (window.hostConfig !== undefined) return window.hostConfig
  const query = new URLSearchParams(location.search)
  return {
    mcpUrl: query.get('mcp') ?? new URL('/mcp', location.href).href,
    token: query.get('token') ?? undefined,
    era: query.get('era') === 'modern' ? 'modern' : 'legacy',
    sandboxUrl: query.get('sandbox') ?? '',
  }
}

function messageOf (error: unknown): string {
  return error instanceof Error ? error.message : String(error)
}

const config = configOf()
window.hostAnswers ??= []
window.hostLog ??= []
const errors: string[] = []
window.addEventListener('error', (event) => errors.push(`error: ${event.message}`))
window.addEventListener('unhandledrejection', (event) => errors.push(`unhandled rejection: ${messageOf(event.reason)}`))

/** A line of the page's transcript, which the screenshots show. */
function say (text: string, kind = 'note'): void {
  const line = document.createElement('p')
  line.className = kind
  line.textContent = text
  document.getElementById('transcript')?.appendChild(line)
}

const client = new Client(HOST_INFO, {
  capabilities: {
    elicitation: { form: {} },
    extensions: { [UI_EXTENSION]: { mimeTypes: [RESOURCE_MIME_TYPE] } },
  },
  ...(config.era === 'modern' ? { versionNegotiation: { mode: { pin: '2026-07-28' } } } : {}),
})
client.onerror = (error) => errors.push(`client: ${error.message}`)
client.setRequestHandler('elicitation/create', async (request) => {
  const params = request.params as { message: string, requestedSchema?: unknown }
  const answer = window.hostAnswers?.shift() ?? { action: 'cancel' }
  window.hostLog?.push({ message: params.message, requestedSchema: params.requestedSchema, answer: answer.action })
  say(`Server asked: “${params.message}” — host answered ${answer.action}${'content' in answer ? ` ${JSON.stringify(answer.content)}` : ''}`, 'asked')
  return answer
})

const tools: Tool[] = []
const host: HostApi = {
  ready: Promise.resolve(),
  tools,
  modelTools: [],
  views: [],
  bridged: [],
  errors,
  callTool,
}
window.host = host

host.ready = (async () => {
  const headers: Record<string, string> = config.token === undefined ? {} : { authorization: `Bearer ${config.token}` }
  await client.connect(new StreamableHTTPClientTransport(new URL(config.mcpUrl), { requestInit: { headers } }))
  host.era = client.getProtocolEra()
  host.protocolVersion = client.getNegotiatedProtocolVersion()
  let cursor: string | undefined
  do {
    const page = await client.listTools(cursor === undefined ? undefined : { cursor })
    tools.push(...page.tools)
    cursor = page.nextCursor
  } while (cursor !== undefined)
  host.modelTools = tools.filter((tool) => !isToolVisibilityAppOnly(tool)).map((tool) => tool.name)
  say(`Connected (${host.era}, ${host.protocolVersion}); the model sees ${host.modelTools.join(', ')}`)
})()
host.ready.catch((error: unknown) => errors.push(`connect: ${messageOf(error)}`))

async function callTool (name: string, args: Record<string, unknown> = {}): Promise<CallToolResult> {
  await host.ready
  if (!host.modelTools.includes(name)) throw new Error(`the model has no tool ${name}`)
  const tool = tools.find((one) => one.name === name)!
  const result = await client.callTool({ name, arguments: args }) as CallToolResult
  say(`Model called ${name}: ${result.content.map((block) => block.type === 'text' ? block.text : `[${block.type}]`).join(' ')}`, 'call')
  const uri = getToolUiResourceUri(tool)
  if (uri !== undefined) await render(tool, uri, args, result)
  return result
}

/** Whether a view may call the tool: it is listed, and its visibility (default both) includes `app`. */
function callableByViews (name: string): boolean {
  const tool = tools.find((one) => one.name === name)
  const visibility = (tool?._meta?.ui as { visibility?: unknown } | undefined)?.visibility
  return tool !== undefined && (!Array.isArray(visibility) || visibility.includes('app'))
}

async function render (tool: Tool, uri: string, args: Record<string, unknown>, result: CallToolResult): Promise<void> {
  const read = await client.readResource({ uri })
  const content = read.contents.find((one) => one.uri === uri) ?? read.contents[0]
  const meta = content?._meta?.ui as { csp?: McpUiResourceCsp, permissions?: McpUiResourcePermissions, prefersBorder?: boolean } | undefined
  host.views.push({ uri, mimeType: content?.mimeType, meta: content?._meta?.ui as Record<string, unknown> | undefined, tool: tool.name })
  if (content === undefined || !('text' in content) || content.mimeType !== RESOURCE_MIME_TYPE) {
    throw new Error(`${uri} is not a view: ${JSON.stringify(content?.mimeType)}`)
  }

  const frame = document.createElement('iframe')
  frame.className = meta?.prefersBorder === true ? 'view bordered' : 'view'
  frame.title = `${tool.name} view`
  frame.setAttribute('sandbox', 'allow-scripts allow-same-origin allow-forms')
  document.getElementById('views')!.appendChild(frame)

  const bridge = new AppBridge(null, HOST_INFO, {
    serverTools: {},
    logging: {},
    sandbox: { ...(meta?.csp === undefined ? {} : { csp: meta.csp }), ...(meta?.permissions === undefined ? {} : { permissions: meta.permissions }) },
  }, { hostContext: { displayMode: 'inline', availableDisplayModes: ['inline'], theme: 'light', platform: 'web' } })
  bridge.oncalltool = async (params) => {
    if (!callableByViews(params.name)) {
      host.bridged.push({ name: params.name, arguments: params.arguments, outcome: 'refused' })
      throw new Error(`a view may not call ${params.name}`)
    }
    try {
      const called = await client.callTool(params) as CallToolResult
      host.bridged.push({ name: params.name, arguments: params.arguments, outcome: 'forwarded' })
      return called
    } catch (error) {
      host.bridged.push({ name: params.name, arguments: params.arguments, outcome: 'failed', detail: messageOf(error) })
      throw error
    }
  }
  bridge.onsizechange = ({ height }) => {
    if (height !== undefined) frame.style.height = `${height}px`
  }
  bridge.onsandboxready = () => {
    bridge.sendSandboxResourceReady({
      html: content.text,
      ...(meta?.csp === undefined ? {} : { csp: meta.csp }),
      ...(meta?.permissions === undefined ? {} : { permissions: meta.permissions }),
    }).catch((error: unknown) => errors.push(`sandbox-resource-ready: ${messageOf(error)}`))
  }
  let initialized!: () => void
  const ready = new Promise<void>((resolve) => { initialized = resolve })
  bridge.oninitialized = () => initialized()

  // Listening before the proxy loads, so that its ready notification is not missed; the frame's window stays the same.
  await bridge.connect(new PostMessageTransport(frame.contentWindow!, frame.contentWindow!))
  const sandbox = new URL(config.sandboxUrl, location.href)
  if (sandbox.origin === location.origin) throw new Error(`the sandbox proxy must be on another origin than the host's ${location.origin}`)
  sandbox.searchParams.set('host', location.origin)
  frame.src = sandbox.href

  let timer: ReturnType<typeof setTimeout> | undefined
  await Promise.race([ready, new Promise((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(`the view of ${tool.name} did not initialize within 10 s`)), 10_000)
  })]).finally(() => clearTimeout(timer))
  await bridge.sendToolInput({ arguments: args })
  await bridge.sendToolResult(result)
}
