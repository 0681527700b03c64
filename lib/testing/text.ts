import type { GetPromptResult } from '../features/prompts.js'
import type { CallToolResult, ContentBlock } from '../protocol/wire.js'
import type { ReadResourceResult } from './types.js'

function texts (blocks: ContentBlock[]): string[] {
  return blocks.flatMap((block) => block.type === 'text' ? [block.text] : [])
}

/**
 * The text of a result, joined by newlines: the text blocks of a tool result, the text blocks of
 * a prompt's messages, or the text contents of a resource. Other blocks and blobs are left out.
 * `t.equal(textOf(result), 'Booked economy to Lisbon')`.
 */
export function textOf (result: CallToolResult | GetPromptResult | ReadResourceResult): string {
  if ('content' in result) return texts(result.content).join('\n')
  if ('messages' in result) return texts(result.messages.map((message) => message.content)).join('\n')
  return result.contents.flatMap((contents) => 'text' in contents ? [contents.text] : []).join('\n')
}
