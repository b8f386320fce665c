// Prompt building: a ChatRequest → prompt token ids through the model's chat template, and a
// plain-completions prompt (text or token ids) → checked token ids.
import { ApiError, invalidParam } from '../common/api-error.js';
import type { ModelRuntime } from './model-runtime.js';
import type { PromptInput, ChatMessage, ChatRequest } from './request.js';
import { ChatTemplateError, renderChatTemplate, TemplateTooDeepError, type ChatTemplateMessage } from './template.js';

/** A message as chat templates read it (OpenAI names; the reasoning under Qwen's name). */
function templateMessage(m: ChatMessage): ChatTemplateMessage {
  // Templates know system, not OpenAI's newer developer role.
  const out: ChatTemplateMessage = { role: m.role === 'developer' ? 'system' : m.role, content: m.content };
  if (m.name !== undefined) out.name = m.name;
  if (m.toolCalls) out.tool_calls = m.toolCalls;
  if (m.toolCallId !== undefined) out.tool_call_id = m.toolCallId;
  if (m.reasoning !== undefined) out.reasoning_content = m.reasoning;
  return out;
}

export interface ChatPrompt {
  tokens: number[];
  /** The rendered template text (the output plan looks at how it ends). */
  text: string;
}

/** The chat prompt: the rendered template, ending with the assistant turn's opening, as token ids. */
export function buildChatPrompt(req: ChatRequest, runtime: ModelRuntime): ChatPrompt {
  const { tokenizer, chatTemplate } = runtime;
  if (chatTemplate === null) {
    throw new ApiError(400, 'This model has no chat template; send a raw prompt to /v1/completions instead.', {
      code: 'no_chat_template',
      param: 'messages',
    });
  }
  let text: string;
  try {
    text = renderChatTemplate(chatTemplate, {
      messages: req.messages.map(templateMessage),
      tools: req.tools,
      addGenerationPrompt: true,
      bosToken: tokenizer.bosToken,
      eosToken: tokenizer.eosToken,
      extra: req.chatTemplateKwargs,
    });
  } catch (err) {
    // raise_exception() in a template is the model saying the conversation is not one it takes.
    if (err instanceof TemplateTooDeepError) throw new ApiError(400, err.message, { code: 'too_deep', param: 'messages' });
    if (err instanceof ChatTemplateError && err.raisedByTemplate) {
      throw invalidParam('messages', `The model's chat template refused the conversation: ${err.message}`);
    }
    throw err;
  }
  // The template writes BOS itself where the model wants one.
  const tokens = tokenizer.encode(text);
  if (tokens.length === 0) throw invalidParam('messages', 'The rendered prompt is empty.');
  return { tokens, text };
}

export interface TextPrompt {
  tokens: number[];
  /** The prompt as text (what `echo` returns). */
  text: string;
}

/** A plain-completions prompt: text is tokenized as the model's tokenizer does for raw text (BOS …). */
export function buildTextPrompt(input: PromptInput, runtime: ModelRuntime, param: string): TextPrompt {
  const { tokenizer } = runtime;
  if ('text' in input) {
    const tokens = tokenizer.encode(input.text, { addSpecialTokens: true });
    if (tokens.length === 0) throw invalidParam(param, `'${param}' is empty.`);
    return { tokens, text: input.text };
  }
  if (input.tokens.length === 0) throw invalidParam(param, `'${param}' is empty.`);
  const vocab = runtime.modelConfig.vocabSize;
  const bad = input.tokens.find((id) => id >= vocab);
  if (bad !== undefined) throw invalidParam(param, `Token id ${bad} in '${param}' is out of range: the vocabulary has ${vocab} tokens.`);
  return { tokens: input.tokens, text: tokenizer.decode(input.tokens) };
}
