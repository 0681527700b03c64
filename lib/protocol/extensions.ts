import { PROTOCOL_VERSION, isPlainObject, type ClientCapabilities } from './wire.js'

/** MCP Apps (SEP-1865): views a host renders beside a tool's result. */
export const UI_EXTENSION = 'io.modelcontextprotocol/ui'
/** The mime type of a view's HTML. */
export const VIEW_MIME_TYPE = 'text/html;profile=mcp-app'
/** Tasks (SEP-2663): calls that outlive their request. */
export const TASKS_EXTENSION = 'io.modelcontextprotocol/tasks'

/** Whether `uri` is of the ui:// scheme, in any case (RFC 3986 §3.1: schemes are case-insensitive). */
export function isViewUri (uri: string): boolean {
  return /^ui:\/\//i.test(uri)
}

export function declares (capabilities: ClientCapabilities, extension: string): boolean {
  const extensions = capabilities.extensions
  return isPlainObject(extensions) && Object.hasOwn(extensions, extension) && isPlainObject(extensions[extension])
}

export function showsViews (capabilities: ClientCapabilities): boolean {
  if (!declares(capabilities, UI_EXTENSION)) return false
  const settings = (capabilities.extensions as Record<string, { mimeTypes?: unknown }>)[UI_EXTENSION]
  return Array.isArray(settings.mimeTypes) && settings.mimeTypes.includes(VIEW_MIME_TYPE)
}

/** Whether a request's client takes tasks: it declared the extension on a 2026-07-28 request. */
export function declaresTasks (client: { protocolVersion: string, capabilities: ClientCapabilities }): boolean {
  return client.protocolVersion === PROTOCOL_VERSION && declares(client.capabilities, TASKS_EXTENSION)
}

/** Agent skills (SEP-2640): folders of instructions and files a host loads when a task needs them. */
export const SKILLS_EXTENSION = 'io.modelcontextprotocol/skills'

/** Events (SEP-3415, Beta): occurrences a client polls, holds a stream for, or receives by signed webhook. */
export const EVENTS_EXTENSION = 'io.modelcontextprotocol/events'
