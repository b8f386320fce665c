// vLLM's min_tokens as a logits processor: until the sequence has generated `minTokens` tokens,
// its stop token ids (EOS unless ignore_eos, and stop_token_ids) are masked, so it cannot end
// early. (Stop strings are held off on the main thread: OutputPipeline's minTokens.) When the mask
// would leave nothing to sample — every other token already masked, or a grammar that allows only
// an end token here — the row is left as it is: ending early beats failing the step.
import type { GrammarProcessor } from './grammar-processor.js';
import type { LogitsProcessor } from './processor.js';

export class MinTokensProcessor implements LogitsProcessor {
  private generated = 0;
  private readonly stops: Int32Array;

  /** `grammar`: the job's grammar processor, which masks after this one (its mask is consulted). */
  constructor(
    private readonly minTokens: number,
    stopTokenIds: readonly number[],
    private readonly grammar: GrammarProcessor | null = null,
  ) {
    this.stops = Int32Array.from(new Set(stopTokenIds));
  }

  process(logits: Float32Array): void {
    if (this.generated >= this.minTokens || !this.othersRemain(logits)) return;
    for (let i = 0; i < this.stops.length; i++) if (this.stops[i] < logits.length) logits[this.stops[i]] = -Infinity;
  }

  accept(): void {
    this.generated++;
  }

  /** Whether a token other than the stop tokens is still finite (and allowed by the grammar, if any). */
  private othersRemain(logits: Float32Array): boolean {
    const allowed = this.grammar?.allowed() ?? null;
    for (let id = 0; id < logits.length; id++) {
      if (!(logits[id] > -Infinity) || (allowed !== null && allowed[id] !== 1)) continue;
      if (!this.stops.includes(id)) return true;
    }
    return false;
  }
}
