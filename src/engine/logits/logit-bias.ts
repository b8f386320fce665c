// OpenAI's logit_bias as a logits processor: a fixed bias added to some tokens' logits at every
// step (values in [-100, 100]; ±100 in practice bans or forces the token, as OpenAI documents).
import type { LogitBias } from '../types.js';
import type { LogitsProcessor } from './processor.js';

export class LogitBiasProcessor implements LogitsProcessor {
  private readonly ids: Int32Array;
  private readonly biases: Float32Array;

  constructor(bias: LogitBias) {
    this.ids = Int32Array.from(bias.ids);
    this.biases = Float32Array.from(bias.biases);
  }

  process(logits: Float32Array): void {
    for (let i = 0; i < this.ids.length; i++) {
      const id = this.ids[i];
      if (id < logits.length) logits[id] += this.biases[i];
    }
  }

  accept(): void {}
}
