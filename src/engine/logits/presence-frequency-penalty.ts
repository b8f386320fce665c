// OpenAI's presence_penalty and frequency_penalty as one logits processor, over the tokens this
// sequence has generated (not the prompt, as OpenAI and vLLM):
//   logit[t] -= presence · [count[t] > 0] + frequency · count[t]
// Positive values discourage repeats, negative ones encourage them.
import type { LogitsProcessor } from './processor.js';
import { TokenCounts } from './token-counts.js';

export class PresenceFrequencyPenaltyProcessor implements LogitsProcessor {
  private readonly generated = new TokenCounts();

  constructor(
    private readonly presence: number,
    private readonly frequency: number,
  ) {}

  process(logits: Float32Array): void {
    const { ids, counts, size } = this.generated;
    for (let i = 0; i < size; i++) {
      const id = ids[i];
      if (id < logits.length) logits[id] -= this.presence + this.frequency * counts[i];
    }
  }

  accept(token: number): void {
    this.generated.add(token);
  }
}
