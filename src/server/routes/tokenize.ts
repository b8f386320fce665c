// POST /tokenize and POST /detokenize, vLLM's helper endpoints, at the root as vLLM serves them
// (errors in the OpenAI shape, as for every path outside a protocol's prefix; behind the API key).
// /tokenize takes a `prompt` text or chat `messages` (rendered through the chat template, decoded
// as /v1/chat/completions decodes them) → {count, max_model_len, tokens}; /detokenize takes
// `tokens` → {prompt}. The work runs in the prompt workers (src/chat/tokenize.ts).
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import { chatTemplateInput } from '../../chat/prompt.js';
import type { ToolDefinition } from '../../chat/request.js';
import { detokenize, tokenize, type TokenizeInput } from '../../chat/tokenize.js';
import { invalidParam } from '../../common/api-error.js';
import { decodeChatRequest, type WireMessage } from '../../protocols/openai/chat.js';
import type { AppOptions, RouteDeps } from '../app.js';
import { loadChatImages } from '../images/load.js';
import { messageSchema, toolSchema } from './openai/chat-completions.js';

export interface TokenizeBody {
  model?: string | null;
  prompt?: string;
  messages?: WireMessage[];
  tools?: ToolDefinition[] | null;
  /** Messages only: end with the assistant turn's opening (default true). */
  add_generation_prompt?: boolean | null;
  chat_template_kwargs?: Record<string, unknown> | null;
  /** Default true for `prompt`, false for `messages` (the template writes BOS itself), as vLLM. */
  add_special_tokens?: boolean | null;
  /** Also return each id's token string. */
  return_token_strs?: boolean | null;
}

export interface DetokenizeBody {
  model?: string | null;
  tokens: number[];
}

const nullable = (type: string) => ({ type: [type, 'null'] });

const tokenizeSchema = {
  type: 'object',
  properties: {
    model: nullable('string'),
    prompt: { type: 'string' },
    messages: { type: 'array', minItems: 1, items: messageSchema },
    tools: { type: ['array', 'null'], items: toolSchema },
    add_generation_prompt: nullable('boolean'),
    chat_template_kwargs: nullable('object'),
    add_special_tokens: nullable('boolean'),
    return_token_strs: nullable('boolean'),
  },
};

const detokenizeSchema = {
  type: 'object',
  required: ['tokens'],
  properties: {
    model: nullable('string'),
    tokens: { type: 'array', items: { type: 'integer', minimum: 0 } },
  },
};

/** The request → what to tokenize (400 unless exactly one of `prompt` and `messages`); images are loaded as the chat routes load them. */
async function tokenizeInput(request: FastifyRequest<{ Body: TokenizeBody }>, options: AppOptions): Promise<TokenizeInput> {
  const body = request.body;
  const hasPrompt = body.prompt !== undefined;
  const hasMessages = body.messages !== undefined;
  if (hasPrompt === hasMessages) {
    throw hasPrompt
      ? invalidParam('messages', "Send either 'prompt' or 'messages', not both.")
      : invalidParam('prompt', "Missing required parameter: 'prompt' (or 'messages').");
  }
  if (hasPrompt) return { source: { text: body.prompt! }, addSpecialTokens: body.add_special_tokens ?? true };
  const decoded = decodeChatRequest(
    { messages: body.messages!, tools: body.tools, chat_template_kwargs: body.chat_template_kwargs },
    options,
  );
  const chat = await loadChatImages(decoded, request.runtime!, options, request.log);
  return {
    source: { chat: { ...chatTemplateInput(chat), addGenerationPrompt: body.add_generation_prompt ?? true } },
    addSpecialTokens: body.add_special_tokens ?? false,
  };
}

export const tokenizeRoutes: FastifyPluginAsync<RouteDeps> = async (app, { options }) => {
  app.post<{ Body: TokenizeBody }>('/tokenize', { schema: { body: tokenizeSchema }, config: { needsModel: true } }, async (request) => {
    const runtime = request.runtime!;
    const tokens = await tokenize(runtime, await tokenizeInput(request, options));
    const out: Record<string, unknown> = { count: tokens.length, max_model_len: runtime.maxSeqLen, tokens };
    if (request.body.return_token_strs) out.token_strs = tokens.map((id) => runtime.tokenizer.idToToken(id) ?? null);
    return out;
  });

  app.post<{ Body: DetokenizeBody }>(
    '/detokenize',
    { schema: { body: detokenizeSchema }, config: { needsModel: true } },
    async (request) => ({ prompt: await detokenize(request.runtime!, request.body.tokens) }),
  );
};
