// Checks a grammar's cached token masks against a brute-force test of every token: for each
// sampled state along a text, the mask must allow exactly the tokens tryAdvance accepts.
import assert from 'node:assert/strict';
import type { ToolGrammar, VocabIndex } from '../../src/engine/grammar/index.js';
import type { Tokenizer } from '../../src/model/tokenizer.js';

/** The model's logits row is longer than the tokenizer's vocabulary (Qwen pads it to 151,936). */
export const LOGITS_ROW = 151936;

/** Walks each (grammar, text) pair token by token; checks every `every`-th state and the last. Returns how many states were checked. */
export function checkMasksAgainstBruteForce(cases: [ToolGrammar, string][], tk: Tokenizer, vocab: VocabIndex, every: number): number {
  const mask = new Uint8Array(LOGITS_ROW);
  let states = 0;
  for (const [g, text] of cases) {
    let st = g.start();
    const ids = tk.encode(text);
    for (let i = 0; i <= ids.length; i++) {
      // The brute force costs a full pass over the vocabulary, so only some states.
      if (i % every === 0 || i === ids.length) {
        g.allowedTokens(st, mask);
        for (let id = 0; id < LOGITS_ROW; id++) {
          const ok = id < vocab.size && g.tryAdvance(st, id) !== null;
          if ((mask[id] === 1) !== ok)
            assert.fail(
              `after ${JSON.stringify(tk.decode(ids.slice(0, i)))}: token ${id} ${JSON.stringify(tk.decode([id]))} mask ${mask[id]} vs ${ok}`,
            );
        }
        states++;
      }
      if (i < ids.length) st = g.advance(st, ids[i]!);
    }
  }
  return states;
}
