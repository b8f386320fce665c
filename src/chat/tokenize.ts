// Tokenization as a service (POST /tokenize, POST /detokenize): a text, or a conversation rendered
// through the chat template, → token ids; token ids → text. Bounded and run off the HTTP event loop
// like prompt building (src/chat/prompt.ts): a text longer than any that fits the context is
// refused before it is tokenized, encoding stops once past the context length, and the work runs in
// a prompt worker when the runtime has them (src/chat/prompt-workers.ts).
import { contextLengthExceeded, invalidParam, type ApiError } from '../common/api-error.js';
import type { ModelRuntime } from './model-runtime.js';
import { maxPromptChars, renderChatText, type ChatTemplateInput, type PromptModel } from './prompt.js';

/** What to tokenize (plain data: it is posted to a prompt worker). */
export interface TokenizeInput {
  source: { text: string } | { chat: ChatTemplateInput };
  /** Add the model's BOS (and EOS where it wants one), as its tokenizer does for raw text. */
  addSpecialTokens: boolean;
}

/** The request field a source's errors name. */
function paramOf(input: TokenizeInput): string {
  return 'text' in input.source ? 'prompt' : 'messages';
}

/** 400 context_length_exceeded: the text is more tokens than the context holds (`tokens` null: refused by length). */
function tooLong(maxSeqLen: number, tokens: number | null, param: string): ApiError {
  const size = tokens === null ? 'longer than any text that fits in it' : `at least ${tokens} tokens`;
  const what = param === 'messages' ? 'rendered prompt' : 'prompt';
  return contextLengthExceeded(`This model's maximum context length is ${maxSeqLen} tokens. However, your ${what} is ${size}.`, param);
}

/** Tokenizes on the calling thread (in a prompt worker, or for a runtime without them); `chars`: the tokenizer's input length. */
export function tokenizeHere(model: PromptModel, input: TokenizeInput): { tokens: number[]; chars: number } {
  const param = paramOf(input);
  const text = 'text' in input.source ? input.source.text : renderChatText(model, input.source.chat);
  if (text.length > maxPromptChars(model)) throw tooLong(model.maxSeqLen, null, param);
  const tokens = model.tokenizer.encode(text, { addSpecialTokens: input.addSpecialTokens, limit: model.maxSeqLen });
  if (tokens.length > model.maxSeqLen) throw tooLong(model.maxSeqLen, tokens.length, param);
  return { tokens, chars: text.length };
}

/** Token ids of a text or a rendered conversation (up to the context length; longer is a 400). */
export async function tokenize(runtime: ModelRuntime, input: TokenizeInput): Promise<number[]> {
  // A raw text is checked here, before it is posted anywhere (a rendered one in the worker).
  if ('text' in input.source && input.source.text.length > maxPromptChars(runtime)) {
    throw tooLong(runtime.maxSeqLen, null, paramOf(input));
  }
  return runtime.prompts ? runtime.prompts.tokenize(input) : tokenizeHere(runtime, input).tokens;
}

/** 400 naming `param` unless every id is one of the tokenizer's (0 ≤ id < vocabSize). */
export function checkTokenIds(ids: readonly number[], vocabSize: number, param: string): void {
  const i = ids.findIndex((id) => !Number.isInteger(id) || id < 0 || id >= vocabSize);
  if (i >= 0) {
    throw invalidParam(`${param}[${i}]`, `Token id ${ids[i]} in '${param}' is out of range: the vocabulary has ${vocabSize} tokens.`);
  }
}

/** The text of token ids, special tokens included (as vLLM's /detokenize: nothing skipped). */
export async function detokenize(runtime: ModelRuntime, ids: number[], param = 'tokens'): Promise<string> {
  checkTokenIds(ids, runtime.tokenizer.vocabSize, param);
  return runtime.prompts ? runtime.prompts.detokenize(ids) : runtime.tokenizer.decode(ids);
}
