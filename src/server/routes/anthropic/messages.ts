// POST /v1/messages (Claude Code appends ?beta=true, which changes nothing here) and
// POST /v1/messages/count_tokens: schema → ChatRequest → prompt tokens → one engine sequence →
// output pipeline → `message` body, or Anthropic's named events over SSE; count_tokens stops at
// the prompt. Paths are relative to the protocol's prefix, /v1/messages.
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { buildChatPrompt } from '../../../chat/prompt.js';
import { withImageTokens } from '../../../chat/image-prompt.js';
import type { ChatRequest } from '../../../chat/request.js';
import { generationError } from '../../../common/api-error.js';
import {
  MessageBuilder,
  decodeMessagesRequest,
  newMessageId,
  type CountTokensBody,
  type MessagesBody,
} from '../../../protocols/anthropic/messages.js';
import { MessageStreamEncoder } from '../../../protocols/anthropic/stream.js';
import type { AppOptions, RouteDeps } from '../../app.js';
import { routeChatPrompt } from '../../chat-prompt.js';
import { loadChatImages } from '../../images/load.js';
import { chatSequence, resolveMaxTokens, runSequences, tokenUsage } from '../../generate.js';
import { SseStream, streamSteps } from '../../sse.js';

const textBlock = {
  type: 'object',
  required: ['type', 'text'],
  properties: { type: { type: 'string', enum: ['text'] }, text: { type: 'string' }, cache_control: { type: ['object', 'null'] } },
};

/** Any content block; the decoder checks which types a turn may hold and their fields. */
const contentBlock = {
  type: 'object',
  required: ['type'],
  properties: {
    type: { type: 'string' },
    text: { type: 'string' },
    id: { type: 'string' },
    name: { type: 'string' },
    input: { type: 'object' },
    tool_use_id: { type: 'string' },
    content: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'object', required: ['type'] } }] },
    is_error: { type: 'boolean' },
    thinking: { type: 'string' },
    signature: { type: 'string' },
    data: { type: 'string' },
    source: {
      type: 'object',
      required: ['type'],
      properties: { type: { type: 'string' }, media_type: { type: 'string' }, data: { type: 'string' }, url: { type: 'string' } },
    },
  },
  allOf: [
    { if: { properties: { type: { const: 'text' } } }, then: { required: ['text'] } },
    { if: { properties: { type: { const: 'image' } } }, then: { required: ['source'] } },
    { if: { properties: { type: { const: 'tool_use' } } }, then: { required: ['id', 'name', 'input'] } },
    { if: { properties: { type: { const: 'tool_result' } } }, then: { required: ['tool_use_id'] } },
  ],
};

const message = {
  type: 'object',
  required: ['role', 'content'],
  properties: {
    role: { type: 'string', enum: ['user', 'assistant'] },
    content: { anyOf: [{ type: 'string' }, { type: 'array', items: contentBlock }] },
  },
};

const tool = {
  type: 'object',
  required: ['name'],
  properties: {
    type: { type: 'string' },
    name: { type: 'string', minLength: 1 },
    description: { type: 'string' },
    input_schema: { type: 'object' },
  },
};

const toolChoice = {
  type: 'object',
  required: ['type'],
  properties: {
    type: { type: 'string', enum: ['auto', 'any', 'tool', 'none'] },
    name: { type: 'string' },
    disable_parallel_tool_use: { type: 'boolean' },
  },
  if: { properties: { type: { const: 'tool' } } },
  then: { required: ['name'] },
};

const thinking = {
  type: 'object',
  required: ['type'],
  properties: {
    type: { type: 'string', enum: ['enabled', 'disabled', 'adaptive', 'between_tools'] },
    budget_tokens: { type: 'integer', minimum: 1 },
    display: { type: ['string', 'null'] },
  },
  if: { properties: { type: { const: 'enabled' } } },
  then: { required: ['budget_tokens'] },
};

const jsonOutputFormat = {
  type: ['object', 'null'],
  required: ['type', 'schema'],
  properties: { type: { type: 'string', enum: ['json_schema'] }, schema: { type: 'object' } },
};

const bodyProperties = {
  model: { type: 'string' },
  max_tokens: { type: 'integer', minimum: 1 },
  system: { anyOf: [{ type: 'string' }, { type: 'array', items: textBlock }] },
  messages: { type: 'array', minItems: 1, items: message },
  tools: { type: 'array', items: tool },
  tool_choice: toolChoice,
  thinking,
  stop_sequences: { type: 'array', items: { type: 'string' } },
  temperature: { type: 'number', minimum: 0, maximum: 1 },
  top_p: { type: 'number', minimum: 0, maximum: 1 },
  top_k: { type: 'integer', minimum: 0 },
  stream: { type: 'boolean' },
  metadata: { type: 'object' },
  output_config: {
    type: ['object', 'null'],
    properties: {
      format: jsonOutputFormat,
      effort: { type: ['string', 'null'], enum: ['low', 'medium', 'high', 'xhigh', 'max', null] },
    },
  },
  /** The structured-outputs beta's name for output_config.format. */
  output_format: jsonOutputFormat,
};

const messagesSchema = { type: 'object', required: ['model', 'max_tokens', 'messages'], properties: bodyProperties };
const countTokensSchema = { type: 'object', required: ['model', 'messages'], properties: bodyProperties };

/** The request as ChatRequest: the one place both routes decode it. */
function decodeChat(request: FastifyRequest<{ Body: CountTokensBody }>, options: AppOptions): ChatRequest {
  const { chat, warnings } = decodeMessagesRequest(request.body, { ...options, model: request.runtime!.samplingDefaults });
  for (const warning of warnings) request.log.warn(warning);
  return chat;
}

export const messagesRoutes: FastifyPluginAsync<RouteDeps> = async (app, { options, chatOutput }) => {
  app.post<{ Body: MessagesBody }>('/', { schema: { body: messagesSchema }, config: { needsModel: true } }, async (request, reply) => {
    const runtime = request.runtime!;
    // max_tokens is a ceiling (below): compaction reserves nothing for it.
    const { chat, prompt } = await routeChatPrompt(decodeChat(request, options), runtime, options, request, reply, null);
    const promptTokens = prompt.tokens.length;
    // max_tokens is a ceiling (clients such as Claude Code ask for more than a small context
    // holds): the completion gets the smaller of it and the room the context has left.
    const room = resolveMaxTokens(promptTokens, null, runtime.maxSeqLen, chat.tools.length > 0 ? options.toolMaxTokens : null);
    const maxTokens = Math.min(room, chat.maxTokens ?? room);
    const { job, pipeline } = chatSequence(chat, prompt, maxTokens, runtime, chatOutput, options.requestTimeoutSec);
    const id = newMessageId();
    const steps = runSequences(runtime, [{ job, pipeline }], promptTokens, request, reply);

    if (chat.stream) {
      void streamSteps(new SseStream(reply), new MessageStreamEncoder(id, options.modelName, promptTokens), steps, request);
      return reply;
    }
    const builder = new MessageBuilder(id, options.modelName);
    for await (const { step } of steps) {
      const failed = generationError(step.done);
      if (failed) throw failed;
      builder.add(step.events);
    }
    return builder.build(tokenUsage(request.generation!));
  });

  app.post<{ Body: CountTokensBody }>(
    '/count_tokens',
    { schema: { body: countTokensSchema }, config: { needsModel: true } },
    // The request's own size: never compacted.
    async (request) => {
      const chat = await loadChatImages(decodeChat(request, options), request.runtime!, options, request.log);
      const runtime = request.runtime!;
      return { input_tokens: withImageTokens(chat, await buildChatPrompt(chat, runtime), runtime).tokens.length };
    },
  );
};
