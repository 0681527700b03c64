/**
 * The fixtures the official MCP conformance suite expects, served by mocapi:
 * `PORT=4711 npm run conformance:server` listens on http://127.0.0.1:$PORT/mcp.
 */
import Fastify from 'fastify'
import mocapi, { McpError, requestedSchema, type McpContext, type RequestedSchemaBuilder, type ToolReturn } from '../lib/index.js'

const PNG = 'iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=='
const WAV = 'UklGRiYAAABXQVZFZm10IBAAAAABAAEAQB8AAAB9AAACABAAZGF0YQIAAAA='
const NO_ARGS = { type: 'object', properties: {} }

export async function conformanceServer (logLevel = 'warn') {
  const app = Fastify({ logger: { level: logLevel } })
  await app.register(mocapi, { serverInfo: { name: 'mocapi-conformance', version: '1.0.0' } })
  const mcp = app.mcp
  const tool = (name: string, description: string, handler: (args: any, ctx: McpContext) => ToolReturn | Promise<ToolReturn>) =>
    mcp.tool({ name, description, inputSchema: NO_ARGS }, handler)

  tool('test_simple_text', 'Returns one text block', () => 'This is a simple text response for testing.')
  tool('test_image_content', 'Returns one image', () => [{ type: 'image', data: PNG, mimeType: 'image/png' }])
  tool('test_audio_content', 'Returns one audio clip', () => [{ type: 'audio', data: WAV, mimeType: 'audio/wav' }])
  tool('test_embedded_resource', 'Returns an embedded resource', () => [{
    type: 'resource', resource: { uri: 'test://embedded-resource', mimeType: 'text/plain', text: 'This is an embedded resource content.' },
  }])
  tool('test_multiple_content_types', 'Returns text, an image and a resource', () => [
    { type: 'text', text: 'Multiple content types test:' },
    { type: 'image', data: PNG, mimeType: 'image/png' },
    { type: 'resource', resource: { uri: 'test://mixed-content-resource', mimeType: 'application/json', text: '{"test":"data","value":123}' } },
  ])
  tool('test_error_handling', 'Fails on purpose', () => { throw new Error('This tool intentionally returns an error for testing') })
  tool('test_tool_with_progress', 'Reports progress three times', async (_args, ctx) => {
    for (const progress of [0, 50, 100]) {
      ctx.progress(progress, 100)
      if (progress < 100) await new Promise((resolve) => setTimeout(resolve, 50))
    }
    return `Progress complete (${String(ctx.meta.progressToken ?? 'no token')})`
  })
  tool('test_missing_capability', 'Needs the sampling capability', (_args, ctx) => {
    if (ctx.clientCapabilities.sampling === undefined) {
      throw new McpError(-32021, 'This tool requires the sampling client capability', { statusCode: 400, data: { requiredCapabilities: { sampling: {} } } })
    }
    return 'sampling is available'
  })
  tool('test_streaming_elicitation', 'Asks for a name without server-to-client requests', async (_args, ctx) => {
    const answer = await ctx.elicit('What is your name?', requestedSchema().string('name'), { key: 'user_name' })
    return answer.action === 'accept' ? `Hello, ${answer.content.name}!` : 'No name given'
  })
  tool('test_logging_tool', 'Logs when the request asks for a log level', (_args, ctx) => {
    ctx.log('info', 'test_logging_tool ran')
    return 'logged'
  })
  tool('test_trigger_tool_change', 'Announces a tools list change', () => {
    mcp.notifyListChanged('tools')
    return 'tools/list_changed sent'
  })
  tool('test_trigger_prompt_change', 'Announces a prompts list change', () => {
    mcp.notifyListChanged('prompts')
    return 'prompts/list_changed sent'
  })

  // SEP-2243: the suite calls the first tool with an x-mcp-header string property, header and body alike.
  mcp.tool({
    name: 'test_custom_header',
    description: 'Echoes a parameter that clients mirror into the Mcp-Param-Region header',
    inputSchema: {
      type: 'object',
      properties: { region: { type: 'string', description: 'Mirrored into Mcp-Param-Region', 'x-mcp-header': 'Region' } },
      required: ['region'],
    },
  }, (args) => `region=${args.region}`)
  // SEP-1613 and SEP-2106: tools/list must return this schema as written; the suite's fixture, verbatim.
  mcp.tool({
    name: 'json_schema_2020_12_tool',
    description: 'Tool with JSON Schema 2020-12 features',
    inputSchema: {
      $schema: 'https://json-schema.org/draft/2020-12/schema',
      type: 'object',
      $defs: {
        address: {
          $anchor: 'addressDef',
          type: 'object',
          properties: {
            street: { type: 'string' },
            city: { type: 'string' },
          },
        },
      },
      properties: {
        name: { type: 'string' },
        address: { $ref: '#/$defs/address' },
        contactMethod: { type: 'string', enum: ['phone', 'email'] },
        phone: { type: 'string' },
        email: { type: 'string' },
      },
      allOf: [{ anyOf: [{ required: ['phone'] }, { required: ['email'] }] }],
      if: {
        properties: { contactMethod: { const: 'phone' } },
        required: ['contactMethod'],
      },
      then: { required: ['phone'] },
      else: { required: ['email'] },
      additionalProperties: false,
    },
  }, (args) => JSON.stringify(args))

  const name = requestedSchema().string('name')
  tool('test_input_required_result_elicitation', 'Asks for a name, then greets', async (_args, ctx) => {
    const answer = await ctx.elicit('What is your name?', name, { key: 'user_name' })
    return answer.action === 'accept' ? `Hello, ${answer.content.name}!` : `No name (${answer.action})`
  })
  tool('test_input_required_result_sampling', 'Asks the client model a question', async (_args, ctx) => {
    const answer = await ctx.sample({
      messages: [{ role: 'user', content: { type: 'text', text: 'What is the capital of France?' } }], maxTokens: 100,
    }, { key: 'capital_question' })
    return `The model said: ${JSON.stringify(answer.content)}`
  })
  tool('test_input_required_result_list_roots', 'Asks the client for its roots', async (_args, ctx) => {
    const roots = await ctx.listRoots({ key: 'client_roots' })
    return `Roots: ${roots.map((root) => root.uri).join(', ')}`
  })
  tool('test_input_required_result_request_state', 'Asks for confirmation, carrying requestState', async (_args, ctx) => {
    const answer = await ctx.elicit('Please confirm', requestedSchema().boolean('ok'), { key: 'confirm' })
    return `state-ok: requestState validated (${answer.action})`
  })
  tool('test_input_required_result_multiple_inputs', 'Asks for three kinds of input in one round', async (_args, ctx) => {
    const [user, greeting, roots] = await Promise.all([
      ctx.elicit('What is your name?', name, { key: 'user_name' }),
      ctx.sample({ messages: [{ role: 'user', content: { type: 'text', text: 'Generate a greeting' } }], maxTokens: 50 }, { key: 'greeting' }),
      ctx.listRoots({ key: 'client_roots' }),
    ])
    return `${user.action === 'accept' ? user.content.name : 'someone'}, ${JSON.stringify(greeting.content)}, ${roots.length} root(s)`
  })
  tool('test_input_required_result_multi_round', 'Asks two questions in two rounds', async (_args, ctx) => {
    const first = await ctx.elicit('Step 1: What is your name?', name, { key: 'step1' })
    const second = await ctx.elicit('Step 2: What is your favorite color?', requestedSchema().string('color'), { key: 'step2' })
    const who = first.action === 'accept' ? first.content.name : 'someone'
    return `${who} likes ${second.action === 'accept' ? second.content.color : 'no colour'}`
  })
  tool('test_input_required_result_tampered_state', 'Asks for confirmation; a tampered state is refused', async (_args, ctx) => {
    const answer = await ctx.elicit('Please confirm', requestedSchema().boolean('ok'), { key: 'confirm' })
    return `confirmed: ${answer.action}`
  })
  tool('test_input_required_result_capabilities', 'Asks only for what the client declared', async (_args, ctx) => {
    const caps = ctx.clientCapabilities
    const asks: Array<Promise<unknown>> = []
    if (caps.elicitation !== undefined) asks.push(ctx.elicit('What is your name?', name, { key: 'user_name' }))
    if (caps.sampling !== undefined) {
      asks.push(ctx.sample({ messages: [{ role: 'user', content: { type: 'text', text: 'Say hello' } }], maxTokens: 20 }, { key: 'hello' }))
    }
    if (caps.roots !== undefined) asks.push(ctx.listRoots({ key: 'client_roots' }))
    await Promise.all(asks)
    return `asked ${asks.length} thing(s)`
  })

  // The fixtures of the 2025-11-25 scenarios, which a 2025-era client reaches through initialize and a session.
  tool('test_tool_with_logging', 'Logs three messages at info while it runs', async (_args, ctx) => {
    for (const [i, text] of ['Tool execution started', 'Tool processing data', 'Tool execution completed'].entries()) {
      if (i > 0) await new Promise((resolve) => setTimeout(resolve, 50))
      ctx.log('info', text)
    }
    return 'Tool with logging executed successfully'
  })
  mcp.tool({
    name: 'test_sampling',
    description: 'Asks the client model to answer a prompt',
    inputSchema: { type: 'object', properties: { prompt: { type: 'string', description: 'The prompt to send to the LLM' } }, required: ['prompt'] },
  }, async (args: { prompt: string }, ctx) => {
    const answer = await ctx.sample({ messages: [{ role: 'user', content: { type: 'text', text: args.prompt } }], maxTokens: 100 })
    const text = !Array.isArray(answer.content) && typeof answer.content.text === 'string' ? answer.content.text : JSON.stringify(answer.content)
    return `LLM response: ${text}`
  })
  mcp.tool({
    name: 'test_elicitation',
    description: 'Asks the user for their details',
    inputSchema: { type: 'object', properties: { message: { type: 'string', description: 'The question to ask' } }, required: ['message'] },
  }, async (args: { message: string }, ctx) => {
    const answer = await ctx.elicit(args.message, requestedSchema().string('username', { description: 'Your username' }).string('email', { description: 'Your email' }))
    return `User response: action=${answer.action}, content=${JSON.stringify(answer.action === 'accept' ? answer.content : {})}`
  })
  tool('test_elicitation_sep1034_defaults', 'Asks with a default for every kind of field', async (_args, ctx) => {
    const answer = await ctx.elicit('Please review and update the form fields with defaults', requestedSchema()
      .string('name', { description: 'User name', default: 'John Doe', optional: true })
      .integer('age', { description: 'User age', default: 30, optional: true })
      .number('score', { description: 'User score', default: 95.5, optional: true })
      .choose('status', ['active', 'inactive', 'pending'], { description: 'User status', default: 'active', optional: true })
      .boolean('verified', { description: 'Verification status', default: true, optional: true }))
    return `Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.action === 'accept' ? answer.content : {})}`
  })
  // The suite checks the deprecated enumNames form too, which requestedSchema() does not build: this
  // one schema is written out by hand, in the shape a builder carries it.
  const enums = {
    schema: {
      type: 'object',
      required: [],
      properties: {
        untitledSingle: { type: 'string', description: 'Select one option', enum: ['option1', 'option2', 'option3'] },
        titledSingle: {
          type: 'string',
          description: 'Select one option with titles',
          oneOf: [{ const: 'value1', title: 'First Option' }, { const: 'value2', title: 'Second Option' }, { const: 'value3', title: 'Third Option' }],
        },
        legacyEnum: { type: 'string', description: 'Select one option (legacy)', enum: ['opt1', 'opt2', 'opt3'], enumNames: ['Option One', 'Option Two', 'Option Three'] },
        untitledMulti: { type: 'array', description: 'Select multiple options', minItems: 1, maxItems: 3, items: { type: 'string', enum: ['option1', 'option2', 'option3'] } },
        titledMulti: {
          type: 'array',
          description: 'Select multiple options with titles',
          minItems: 1,
          maxItems: 3,
          items: { anyOf: [{ const: 'value1', title: 'First Choice' }, { const: 'value2', title: 'Second Choice' }, { const: 'value3', title: 'Third Choice' }] },
        },
      },
    },
  } as unknown as RequestedSchemaBuilder<Record<string, string | string[]>>
  tool('test_elicitation_sep1330_enums', 'Asks with every kind of select', async (_args, ctx) => {
    const answer = await ctx.elicit('Please select options from the enum fields', enums)
    return `Elicitation completed: action=${answer.action}, content=${JSON.stringify(answer.action === 'accept' ? answer.content : {})}`
  })

  mcp.prompt({ name: 'test_simple_prompt', description: 'A prompt without arguments' }, () => 'This is a simple prompt for testing.')
  mcp.prompt({
    name: 'test_prompt_with_arguments',
    description: 'A prompt with two arguments',
    arguments: [
      { name: 'arg1', description: 'First argument', required: true, complete: ['test', 'testing', 'tested'] },
      { name: 'arg2', description: 'Second argument', required: true },
    ],
  }, (args) => `Prompt with arguments: arg1='${args.arg1}', arg2='${args.arg2}'`)
  mcp.prompt({
    name: 'test_prompt_with_embedded_resource',
    description: 'A prompt that embeds a resource',
    arguments: [{ name: 'resourceUri', description: 'The resource to embed', required: true }],
  }, (args) => [
    { role: 'user', content: { type: 'resource', resource: { uri: args.resourceUri, mimeType: 'text/plain', text: 'Embedded resource content for testing.' } } },
    { role: 'user', content: { type: 'text', text: 'Please process the embedded resource above.' } },
  ])
  mcp.prompt({ name: 'test_prompt_with_image', description: 'A prompt with an image' }, () => [
    { role: 'user', content: { type: 'image', data: PNG, mimeType: 'image/png' } },
    { role: 'user', content: { type: 'text', text: 'Please analyze the image above.' } },
  ])
  mcp.prompt({ name: 'test_input_required_result_prompt', description: 'Asks for context before building the prompt' }, async (_args, ctx) => {
    const answer = await ctx.elicit('What context should the prompt use?', requestedSchema().string('context'), { key: 'user_context' })
    const context = answer.action === 'accept' ? answer.content.context : 'none'
    return `Use this context: ${context}`
  })

  mcp.resource({ uri: 'test://static-text', name: 'static-text', description: 'A static text resource', mimeType: 'text/plain' },
    () => 'This is the content of the static text resource.')
  mcp.resource({ uri: 'test://static-binary', name: 'static-binary', description: 'A static PNG', mimeType: 'image/png' },
    () => Buffer.from(PNG, 'base64'))
  mcp.resource({ uri: 'test://watched-resource', name: 'watched-resource', description: 'A resource clients subscribe to', mimeType: 'text/plain' },
    () => 'Watched resource content')
  mcp.resourceTemplate({ uriTemplate: 'test://template/{id}/data', name: 'template', description: 'Data by id', mimeType: 'application/json' },
    (_uri, { id }) => JSON.stringify({ id, templateTest: true, data: `Data for ID: ${id}` }))

  // The skills extension (SEP-2640): two skills, the first with a subfolder for resources/directory/read.
  await mcp.skills(new URL(import.meta.url.replace(/(\/dist)?\/examples\/[^/]+$/, '/examples/conformance-skills/')))

  // The tasks extension (SEP-2663): the fixture tools its scenarios call.
  mcp.tool({
    name: 'greet',
    description: 'Greets at once: never a task',
    inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] } as const,
  }, (args) => `Hello, ${args.name}!`)
  mcp.tool({
    name: 'slow_compute',
    description: 'Computes for the given seconds, as a task when the client takes tasks',
    inputSchema: { type: 'object', properties: { seconds: { type: 'number', minimum: 0 }, label: { type: 'string' } }, required: ['seconds'] } as const,
    task: { support: 'optional', pollInterval: 200 },
  }, async (args, ctx) => {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(resolve, args.seconds * 1000)
      ctx.signal.addEventListener('abort', () => {
        clearTimeout(timer)
        reject(ctx.signal.reason)
      }, { once: true })
    })
    return `Computed ${args.label ?? 'a result'} in ${args.seconds} s`
  })
  mcp.tool({
    name: 'failing_job',
    description: 'A task whose tool fails: completed, with isError',
    inputSchema: NO_ARGS,
    task: { support: 'required', pollInterval: 200 },
  }, async () => {
    await new Promise((resolve) => setTimeout(resolve, 1000))
    return { content: [{ type: 'text', text: 'The job failed' }], isError: true }
  })
  mcp.tool({
    name: 'protocol_error_job',
    description: 'A task that ends in a JSON-RPC error: failed',
    inputSchema: NO_ARGS,
    task: { support: 'optional', pollInterval: 200 },
  }, async () => {
    await new Promise((resolve) => setTimeout(resolve, 200))
    throw new McpError(-32603, 'The job hit an internal error')
  })
  mcp.tool({
    name: 'confirm_delete',
    description: 'Asks, inside its task, to confirm deleting a file',
    inputSchema: { type: 'object', properties: { filename: { type: 'string' } }, required: ['filename'] } as const,
    task: { support: 'optional', pollInterval: 200, detach: true },
  }, async (args, ctx) => {
    await ctx.detach()
    const answer = await ctx.elicit(`Delete ${args.filename}?`, requestedSchema().boolean('confirm'))
    return answer.action === 'accept' && answer.content.confirm ? `Deleted ${args.filename}` : `Kept ${args.filename}`
  })
  mcp.tool({
    name: 'multi_input',
    description: 'Asks two questions at once inside its task',
    inputSchema: NO_ARGS,
    task: { support: 'optional', pollInterval: 200, detach: true },
  }, async (_args, ctx) => {
    await ctx.detach()
    const schema = requestedSchema().string('name', { optional: true }).boolean('confirm', { optional: true })
    const [first, second] = await Promise.all([ctx.elicit('First input?', schema), ctx.elicit('Second input?', schema)])
    const name = (answer: typeof first) => answer.action === 'accept' ? answer.content.name ?? '' : answer.action
    return `Inputs: ${name(first)}, ${name(second)}`
  })
  mcp.tool({
    name: 'test_tool_with_task',
    description: 'Asks for a name in rounds of the call, then becomes a task',
    inputSchema: NO_ARGS,
    task: { support: 'required', pollInterval: 200, detach: true },
  }, async (_args, ctx) => {
    const answer = await ctx.elicit('What is your name?', requestedSchema().string('name'), { key: 'user_name' })
    await ctx.detach()
    return answer.action === 'accept' ? `Hello, ${answer.content.name}!` : 'No name given'
  })

  return app
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const app = await conformanceServer(process.env.LOG_LEVEL)
  await app.listen({ host: '127.0.0.1', port: Number(process.env.PORT ?? 4711) })
}
