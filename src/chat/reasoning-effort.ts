// Reasoning effort (OpenAI's `reasoning_effort` / Responses' `reasoning.effort`, Anthropic's
// `output_config.effort`) → what svc can do with it: a thinking budget, or thinking turned off.
// The value also reaches the chat template as `reasoning_effort`, which some templates read
// (gpt-oss puts it in the system message).

export type ReasoningEffort = 'none' | 'minimal' | 'low' | 'medium' | 'high' | 'xhigh' | 'max';

export const REASONING_EFFORTS: readonly ReasoningEffort[] = ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max'];

/**
 * The thinking budget each effort asks for (null: the model's own; 0 turns thinking off). The
 * smaller of it and --max-thinking-budget applies.
 */
export const EFFORT_BUDGETS: Record<ReasoningEffort, number | null> = {
  none: 0,
  minimal: 256,
  low: 1024,
  medium: 4096,
  high: null,
  xhigh: null,
  max: null,
};

/**
 * Applies `effort` to a request's template variables and returns its thinking budget (null: no
 * cap of its own). `none` renders the template with enable_thinking false.
 */
export function applyReasoningEffort(effort: ReasoningEffort, chatTemplateKwargs: Record<string, unknown>): number | null {
  chatTemplateKwargs.reasoning_effort ??= effort;
  const budget = EFFORT_BUDGETS[effort];
  if (budget === 0) {
    chatTemplateKwargs.enable_thinking = false;
    return null;
  }
  return budget;
}
