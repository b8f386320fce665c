// vLLM's / Hugging Face's repetition_penalty as a logits processor: every token that occurs in the
// prompt or in the output so far has its logit divided by the penalty when positive and multiplied
// by it otherwise (penalty > 1 discourages repeats, < 1 encourages them; 1 = off). Applied once per
// distinct token, however often it occurred (CTRL, Keskar et al. 2019).
import type { LogitsProcessor } from './processor.js';
import { TokenCounts } from './token-counts.js';

export class RepetitionPenaltyProcessor implements LogitsProcessor {
  private readonly seen = new TokenCounts();

  constructor(
    private readonly penalty: number,
    promptTokens: readonly number[],
  ) {
    for (let i = 0; i < promptTokens.length; i++) this.seen.add(promptTokens[i]);
  }

  process(logits: Float32Array): void {
    const { ids, size } = this.seen;
    const p = this.penalty;
    for (let i = 0; i < size; i++) {
      const id = ids[i];
      if (id >= logits.length) continue;
      const l = logits[id];
      logits[id] = l > 0 ? l / p : l * p;
    }
  }

  accept(token: number): void {
    this.seen.add(token);
  }
}
