// Logits processors (one file each) and the list a job gets at admission.
import type { ToolGrammar } from '../grammar/index.js';
import type { GenerationRequest } from '../types.js';
import { GrammarProcessor } from './grammar-processor.js';
import type { LogitsProcessor } from './processor.js';
import { ThinkingBudgetProcessor } from './thinking-budget.js';

export { acceptToken, changesLogits, forcedToken, processLogits, type LogitsProcessor } from './processor.js';
export { GrammarProcessor } from './grammar-processor.js';
export { ThinkingBudgetProcessor } from './thinking-budget.js';

/**
 * A job's processors, in the order they are asked: the thinking budget first (its forced tokens
 * win over the grammar's mask), then the tool-call grammar compiled for it, if any. `mask` is the
 * worker's scratch row for grammar masks.
 */
export function logitsProcessors(req: GenerationRequest, grammar: ToolGrammar | null, mask: () => Uint8Array): LogitsProcessor[] {
  const processors: LogitsProcessor[] = [];
  if (req.thinkingBudget) processors.push(new ThinkingBudgetProcessor(req.thinkingBudget));
  if (grammar) processors.push(new GrammarProcessor(grammar, mask()));
  return processors;
}
