// POST /v1/chat/completions: schema → ChatRequest → prompt tokens → n engine sequences → output
// pipeline → chat.completion body, or chunks over SSE.
import type { FastifyPluginAsync } from 'fastify';
import { generationError } from '../../../common/api-error.js';
import {
  ChatChunkEncoder,
  ChatCompletionBuilder,
  decodeChatRequest,
  newResponseMeta,
  type ChatCompletionBody,
} from '../../../protocols/openai/chat.js';
import { structuredOutputProperties } from '../../../protocols/openai/structured.js';
import { REASONING_EFFORTS } from '../../../chat/reasoning-effort.js';
import type { RouteDeps } from '../../app.js';
import { routeChatPrompt } from '../../chat-prompt.js';
import { chatSequence, resolveMaxTokens, runSequences, tokenUsage } from '../../generate.js';
import { SseStream, streamSteps } from '../../sse.js';

const nullable = (type: string) => ({ type: [type, 'null'] });

/** Most bad_words a request may send, and the longest one (in UTF-16 units). */
export const MAX_BAD_WORDS = 256;
export const MAX_BAD_WORD_CHARS = 256;

/** Generation fields the OpenAI chat and legacy completions requests share. */
export const generationProperties = {
  model: { type: 'string' },
  max_tokens: { type: ['integer', 'null'], minimum: 1 },
  temperature: { type: ['number', 'null'], minimum: 0, maximum: 2 },
  top_p: { type: ['number', 'null'], exclusiveMinimum: 0, maximum: 1 },
  top_k: { type: ['integer', 'null'], minimum: -1 },
  min_p: { type: ['number', 'null'], minimum: 0, maximum: 1 },
  top_n_sigma: { type: ['number', 'null'], minimum: 0 },
  // int64, as OpenAI's: JSON numbers are read as doubles, so the largest seed that passes is
  // the double just below 2^63 (9223372036854774784).
  seed: { type: ['integer', 'null'], minimum: -(2 ** 63), exclusiveMaximum: 2 ** 63 },
  stop: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' } }, { type: 'null' }] },
  n: { type: ['integer', 'null'], minimum: 1, maximum: 128 },
  stream: nullable('boolean'),
  stream_options: { type: ['object', 'null'], properties: { include_usage: nullable('boolean') } },
  presence_penalty: { type: ['number', 'null'], minimum: -2, maximum: 2 },
  frequency_penalty: { type: ['number', 'null'], minimum: -2, maximum: 2 },
  // Keys are token ids, checked by the decoder (which knows the vocabulary).
  logit_bias: { type: ['object', 'null'], additionalProperties: { type: 'number', minimum: -100, maximum: 100 } },
  repetition_penalty: { type: ['number', 'null'], exclusiveMinimum: 0 },
  min_tokens: { type: ['integer', 'null'], minimum: 0 },
  // Tokenized on the main thread when the job is made: bounded here.
  bad_words: { type: ['array', 'null'], maxItems: MAX_BAD_WORDS, items: { type: 'string', maxLength: MAX_BAD_WORD_CHARS } },
  ignore_eos: nullable('boolean'),
  stop_token_ids: { type: ['array', 'null'], items: { type: 'integer', minimum: 0 } },
  skip_special_tokens: nullable('boolean'),
  user: nullable('string'),
} as const;

const contentPart = {
  type: 'object',
  required: ['type'],
  properties: {
    type: { type: 'string' },
    text: { type: 'string' },
    image_url: { type: 'object', required: ['url'], properties: { url: { type: 'string' } } },
  },
};

const toolCall = {
  type: 'object',
  required: ['id', 'function'],
  properties: {
    id: { type: 'string' },
    type: { type: 'string', enum: ['function'] },
    function: {
      type: 'object',
      required: ['name', 'arguments'],
      properties: { name: { type: 'string' }, arguments: { type: 'string' } },
    },
  },
};

export const messageSchema = {
  type: 'object',
  required: ['role'],
  properties: {
    role: { type: 'string', enum: ['system', 'developer', 'user', 'assistant', 'tool', 'function'] },
    content: { anyOf: [{ type: 'string' }, { type: 'null' }, { type: 'array', items: contentPart }] },
    name: { type: 'string' },
    tool_calls: { type: ['array', 'null'], items: toolCall },
    tool_call_id: { type: 'string' },
    function_call: {
      type: ['object', 'null'],
      required: ['name', 'arguments'],
      properties: { name: { type: 'string' }, arguments: { type: 'string' } },
    },
    reasoning: nullable('string'),
    reasoning_content: nullable('string'),
  },
};

export const toolSchema = {
  type: 'object',
  required: ['type', 'function'],
  properties: {
    type: { type: 'string', enum: ['function'] },
    function: {
      type: 'object',
      required: ['name'],
      properties: {
        name: { type: 'string', minLength: 1 },
        description: { type: 'string' },
        parameters: { type: 'object' },
        strict: nullable('boolean'),
      },
    },
  },
};

const toolChoice = {
  anyOf: [
    { type: 'string', enum: ['none', 'auto', 'required'] },
    {
      type: 'object',
      required: ['type', 'function'],
      properties: {
        type: { type: 'string', enum: ['function'] },
        function: { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
      },
    },
    { type: 'null' },
  ],
};

const legacyFunction = {
  type: 'object',
  required: ['name'],
  properties: { name: { type: 'string', minLength: 1 }, description: { type: 'string' }, parameters: { type: 'object' } },
};

const chatCompletionSchema = {
  type: 'object',
  required: ['messages'],
  // A field svc does not know is refused (unsupported_parameter), as OpenAI does, never ignored.
  additionalProperties: false,
  properties: {
    ...generationProperties,
    messages: { type: 'array', minItems: 1, items: messageSchema },
    max_completion_tokens: { type: ['integer', 'null'], minimum: 1 },
    logprobs: nullable('boolean'),
    top_logprobs: { type: ['integer', 'null'], minimum: 0, maximum: 20 },
    ...structuredOutputProperties,
    tools: { type: ['array', 'null'], items: toolSchema },
    tool_choice: toolChoice,
    parallel_tool_calls: nullable('boolean'),
    functions: { type: ['array', 'null'], items: legacyFunction },
    function_call: {
      anyOf: [
        { type: 'string', enum: ['none', 'auto'] },
        { type: 'object', required: ['name'], properties: { name: { type: 'string' } } },
        { type: 'null' },
      ],
    },
    chat_template_kwargs: nullable('object'),
    reasoning_effort: { type: ['string', 'null'], enum: [...REASONING_EFFORTS, null] },
    include_reasoning: nullable('boolean'),
  },
};

export const chatCompletionsRoutes: FastifyPluginAsync<RouteDeps> = async (app, { options, chatOutput }) => {
  app.post<{ Body: ChatCompletionBody }>(
    '/chat/completions',
    { schema: { body: chatCompletionSchema }, config: { needsModel: true } },
    async (request, reply) => {
      const runtime = request.runtime!;
      const decoded = decodeChatRequest(request.body, {
        ...options,
        model: runtime.samplingDefaults,
        vocabSize: runtime.tokenizer.vocabSize,
      });
      // max_tokens is strict here (more than the room left is a 400): compaction leaves room for it.
      const { chat, prompt: chatPrompt } = await routeChatPrompt(decoded, runtime, options, request, reply, decoded.maxTokens);
      const prompt = chatPrompt.tokens;
      const cap = chat.tools.length > 0 ? options.toolMaxTokens : null;
      const maxTokens = resolveMaxTokens(prompt.length, chat.maxTokens, runtime.maxSeqLen, cap);
      const specs = Array.from({ length: chat.n }, (_, seq) =>
        chatSequence(chat, chatPrompt, maxTokens, runtime, chatOutput, options.requestTimeoutSec, seq),
      );
      const meta = newResponseMeta('chatcmpl', options.modelName);
      const tokenBytes = (id: number): Uint8Array => runtime.tokenizer.tokenBytes(id);
      const steps = runSequences(runtime, specs, prompt.length, request, reply);

      if (chat.stream) {
        const encoder = new ChatChunkEncoder(meta, chat.n, chat.logprobs, chat.includeUsage, tokenBytes, chat.legacyFunctions);
        void streamSteps(new SseStream(reply), encoder, steps, request);
        return reply;
      }
      const builder = new ChatCompletionBuilder(meta, chat.n, chat.logprobs, tokenBytes, chat.legacyFunctions);
      for await (const { index, step } of steps) {
        const failed = generationError(step.done);
        if (failed) throw failed;
        builder.add(index, step.events, step.logprobs);
      }
      return builder.build(tokenUsage(request.generation!));
    },
  );
};
