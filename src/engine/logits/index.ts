// Logits processors (one file each) and the list a job gets at admission.
import type { ToolGrammar } from '../grammar/index.js';
import type { GenerationRequest } from '../types.js';
import { BadWordsProcessor } from './bad-words.js';
import { GrammarProcessor } from './grammar-processor.js';
import { LogitBiasProcessor } from './logit-bias.js';
import { MinTokensProcessor } from './min-tokens.js';
import { PresenceFrequencyPenaltyProcessor } from './presence-frequency-penalty.js';
import type { LogitsProcessor } from './processor.js';
import { RepetitionPenaltyProcessor } from './repetition-penalty.js';
import { ThinkingBudgetProcessor } from './thinking-budget.js';

export { acceptToken, changesLogits, forcedToken, processLogits, type LogitsProcessor } from './processor.js';
export { BadWordsProcessor, badWordsTokenIds } from './bad-words.js';
export { GrammarProcessor } from './grammar-processor.js';
export { LogitBiasProcessor } from './logit-bias.js';
export { MinTokensProcessor } from './min-tokens.js';
export { PresenceFrequencyPenaltyProcessor } from './presence-frequency-penalty.js';
export { RepetitionPenaltyProcessor } from './repetition-penalty.js';
export { ThinkingBudgetProcessor } from './thinking-budget.js';

/**
 * A job's processors, in the order they are asked:
 *   1. the thinking budget (its forced tokens win over everything below),
 *   2. the reweighting ones: repetition penalty, then presence / frequency penalties (vLLM's order),
 *      then logit_bias (added to the penalized logits),
 *   3. the masks: min_tokens, bad_words,
 *   4. the tool-call grammar compiled for it, if any, last (min_tokens consults its mask, so as not
 *      to leave nothing to sample).
 * Each processor is built for this job alone, so sequences (n > 1 included) never share state.
 * `mask` is the worker's scratch row for grammar masks.
 */
export function logitsProcessors(req: GenerationRequest, grammar: ToolGrammar | null, mask: () => Uint8Array): LogitsProcessor[] {
  const processors: LogitsProcessor[] = [];
  if (req.thinkingBudget) processors.push(new ThinkingBudgetProcessor(req.thinkingBudget));
  const repetition = req.repetitionPenalty ?? 1;
  if (repetition !== 1) processors.push(new RepetitionPenaltyProcessor(repetition, req.promptTokens));
  const presence = req.presencePenalty ?? 0;
  const frequency = req.frequencyPenalty ?? 0;
  if (presence !== 0 || frequency !== 0) processors.push(new PresenceFrequencyPenaltyProcessor(presence, frequency));
  if (req.logitBias && req.logitBias.ids.length > 0) processors.push(new LogitBiasProcessor(req.logitBias));
  const grammarProcessor = grammar ? new GrammarProcessor(grammar, mask()) : null;
  if ((req.minTokens ?? 0) > 0 && req.stopTokenIds.length > 0)
    processors.push(new MinTokensProcessor(req.minTokens!, req.stopTokenIds, grammarProcessor));
  if (req.badWords && req.badWords.length > 0) processors.push(new BadWordsProcessor(req.badWords));
  if (grammarProcessor) processors.push(grammarProcessor);
  return processors;
}
