// The thinking budget as a logits processor: counts reasoning tokens and, once the budget is
// spent inside a think block, forces the closing tokens (e.g. "\n</think>\n\n") one per step
// instead of sampling.
import type { ThinkingBudget } from '../types.js';
import type { LogitsProcessor } from './processor.js';

export class ThinkingBudgetProcessor implements LogitsProcessor {
  private inReasoning: boolean;
  private reasoningTokens = 0;
  /** Index in budget.forceTokenIds of the token to force next; -1 = none. */
  private forcing = -1;

  constructor(private readonly budget: ThinkingBudget) {
    this.inReasoning = budget.startsInside;
    this.startForcing();
  }

  forced(): number | null {
    return this.forcing >= 0 ? this.budget.forceTokenIds[this.forcing] : null;
  }

  accept(token: number): void {
    const b = this.budget;
    // The forced tokens go out in order; any other token (one it did not force) starts them over.
    if (this.forcing >= 0)
      this.forcing = token === b.forceTokenIds[this.forcing] && this.forcing + 1 < b.forceTokenIds.length ? this.forcing + 1 : -1;
    if (token === b.openTokenId) {
      this.inReasoning = true;
    } else if (token === b.closeTokenId) {
      this.inReasoning = false;
    } else if (this.inReasoning) {
      this.reasoningTokens++;
    }
    this.startForcing();
  }

  /** Spent inside a think block: force the closing tokens from the first. */
  private startForcing(): void {
    if (this.forcing < 0 && this.inReasoning && this.reasoningTokens >= this.budget.maxTokens && this.budget.forceTokenIds.length > 0)
      this.forcing = 0;
  }
}
