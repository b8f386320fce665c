// vLLM's bad_words as a logits processor: each word is a token-id sequence (tokenized on the main
// thread, with and without a leading space: badWordsTokenIds); where the tokens generated so far
// end with all of a word's tokens but the last, that last token is banned. A one-token word is
// banned everywhere. Only generated tokens count (not the prompt), as in vLLM.
import type { LogitsProcessor } from './processor.js';

export class BadWordsProcessor implements LogitsProcessor {
  private readonly words: Int32Array[];
  /** The last generated tokens, as a ring: position p at p % history.length. */
  private readonly history: Int32Array;
  private generated = 0;

  constructor(words: readonly (readonly number[])[]) {
    this.words = words.filter((w) => w.length > 0).map((w) => Int32Array.from(w));
    let longest = 1;
    for (const w of this.words) longest = Math.max(longest, w.length - 1);
    this.history = new Int32Array(longest);
  }

  process(logits: Float32Array): void {
    const h = this.history;
    for (let k = 0; k < this.words.length; k++) {
      const word = this.words[k];
      const prefix = word.length - 1;
      const last = word[prefix];
      if (prefix > this.generated || last >= logits.length) continue;
      let match = true;
      for (let j = 0, pos = this.generated - prefix; j < prefix && match; j++, pos++) match = h[pos % h.length] === word[j];
      if (match) logits[last] = -Infinity;
    }
  }

  accept(token: number): void {
    this.history[this.generated % this.history.length] = token;
    this.generated++;
  }
}

/** What tokenizing bad words needs. */
export interface WordEncoder {
  encode(text: string): number[];
}

/**
 * The token-id sequences of bad words, as vLLM builds them (SamplingParams.update_from_tokenizer):
 * each word (leading whitespace stripped) as it is tokenized at the start of a text, and with a
 * leading space when that gives a different first token in as many tokens (a word in mid-text).
 * Words that tokenize to nothing are dropped.
 */
export function badWordsTokenIds(tokenizer: WordEncoder, words: readonly string[]): number[][] {
  const out: number[][] = [];
  for (const word of words) {
    const bare = tokenizer.encode(word.trimStart());
    if (bare.length === 0) continue;
    out.push(bare);
    const spaced = tokenizer.encode(` ${word.trimStart()}`);
    if (spaced.length === bare.length && spaced[0] !== bare[0]) out.push(spaced);
  }
  return out;
}
