// Prompt-lookup drafting (vLLM's n-gram proposer, llama.cpp's lookup decoding): the sequence's own
// tokens, prompt and output, are searched for an earlier occurrence of its last n tokens, longest n
// first and the most recent occurrence first; the tokens that followed it are the draft. Agents
// repeat themselves — a file edited in place, tool arguments copied from a tool result, code
// echoed back — so such matches are common and usually right; nothing runs on the model.
import type { Drafter, DraftRequest } from './drafter.js';

/** Longest and shortest suffix looked up. One-token matches propose too often to be worth a verify row. */
export const NGRAM_MAX = 4;
export const NGRAM_MIN = 2;

export class NgramDrafter implements Drafter {
  readonly mode = 'ngram' as const;

  propose(requests: readonly DraftRequest[]): number[][] {
    return requests.map(({ seq, room }) => lookup(seq.tokens, room));
  }
}

/** Up to `room` tokens that followed the latest earlier occurrence of the longest matching suffix of `tokens`. */
export function lookup(tokens: readonly number[], room: number, maxN = NGRAM_MAX, minN = NGRAM_MIN): number[] {
  const len = tokens.length;
  if (room <= 0) return [];
  for (let n = Math.min(maxN, len - 1); n >= minN; n--) {
    const last = tokens[len - 1];
    // i is where an occurrence ends (its last token); it must leave at least one token after it.
    for (let i = len - 2; i >= n - 1; i--) {
      if (tokens[i] !== last) continue;
      let k = 1;
      while (k < n && tokens[i - k] === tokens[len - 1 - k]) k++;
      if (k < n) continue;
      return tokens.slice(i + 1, Math.min(len, i + 1 + room));
    }
  }
  return [];
}
