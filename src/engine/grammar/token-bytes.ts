// The bytes each token contributes to the output text, for the vocabulary index.
//
// Grammars run on UTF-8 bytes, not characters: a byte-level BPE vocabulary holds tokens that are
// only part of a multi-byte character, which decode alone as U+FFFD, and those must still be
// usable inside JSON strings. The bytes are worked out as for logprobs
// (src/model/tokenizers/token-bytes.ts); here special tokens are left out, except tag ones.

import type { Tokenizer } from '../../model/tokenizer.js';
import { tokenBytesContext, tokenRawBytes } from '../../model/tokenizers/token-bytes.js';

const utf8 = new TextEncoder();

/**
 * Special tokens that some models use as tool-call or reasoning tags (Mistral, Gemma, Llama 3,
 * GLM, MiniMax …). They stand for their own text, so a grammar can require the model's real tag
 * token rather than make it spell the tag from ordinary pieces. (The chat pipeline keeps special
 * tokens in the text when tools or reasoning are on, so the parsers see them too.)
 */
const TAG_SPECIALS = new Set([
  '[TOOL_CALLS]',
  '[ARGS]',
  '[CALL_ID]',
  '[THINK]',
  '[/THINK]',
  '<|tool_call>',
  '<tool_call|>',
  '<|"|>',
  '<|python_tag|>',
  '<tool_call>',
  '</tool_call>',
  '<arg_key>',
  '</arg_key>',
  '<arg_value>',
  '</arg_value>',
  '<minimax:tool_call>',
  '</minimax:tool_call>',
  '<think>',
  '</think>',
  '<|channel>',
  '<channel|>',
  // OpenAI harmony (GPT-OSS); its `<|call|>` and `<|return|>` are end tokens.
  '<|start|>',
  '<|channel|>',
  '<|message|>',
  '<|constrain|>',
  '<|end|>',
]);

/**
 * Bytes of every token id below tokenizer.vocabSize; null for special tokens other than the tag
 * ones above and for tokens whose bytes cannot be recovered (they are never allowed by a grammar).
 */
export function tokenByteStrings(tokenizer: Tokenizer): (Uint8Array | null)[] {
  const out: (Uint8Array | null)[] = new Array(tokenizer.vocabSize).fill(null);
  const ctx = tokenBytesContext(tokenizer);
  for (let id = 0; id < tokenizer.vocabSize; id++) {
    if (tokenizer.specialTokenIds.has(id)) {
      const tag = tokenizer.idToToken(id);
      if (tag !== undefined && TAG_SPECIALS.has(tag)) out[id] = utf8.encode(tag);
      continue;
    }
    out[id] = tokenRawBytes(tokenizer, id, ctx);
  }
  return out;
}
