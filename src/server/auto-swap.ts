// Request-triggered swaps (--auto-swap): a request whose `model` names another Library model
// (`org/name`, or `org/name:recipe` for one of its MODEL.toml recipes, as Ollama's `name:tag`)
// waits while the swap path (model-swap.ts) loads it, then is served by it. A name that is
// absent, unknown, refused or already live changes nothing: the current model serves the request.
import type { ModelSwitcher, SwapPlan } from './model-swap.js';

/** Run before a model-needing POST takes its runtime; `body` is the validated request body. */
export type AutoSwap = (body: unknown) => Promise<void>;

export function autoSwapper(switcher: ModelSwitcher): AutoSwap {
  return async (body) => {
    const name = (body as { model?: unknown } | null)?.model;
    if (typeof name !== 'string') return;
    const plan = planFor(switcher, name);
    if (plan === null || isLive(switcher, plan)) return;
    // One swap at a time: a request naming a model while another swap runs waits for it first.
    while (switcher.pending !== null) await switcher.pending;
    if (isLive(switcher, plan)) return;
    await switcher.start(plan);
  };
}

/** The swap `name` asks for: a Library id with its default recipe, else `id:recipe`; null when neither. */
function planFor(switcher: ModelSwitcher, name: string): SwapPlan | null {
  const colon = name.lastIndexOf(':');
  const candidates: [string, string][] = [[name, 'default']];
  if (colon > 0) candidates.push([name.slice(0, colon), name.slice(colon + 1)]);
  for (const [id, recipe] of candidates) {
    try {
      return switcher.plan(id, recipe);
    } catch {
      // Not this reading of the name.
    }
  }
  return null;
}

function isLive(switcher: ModelSwitcher, plan: SwapPlan): boolean {
  const model = switcher.state().model;
  return model !== null && model.id === plan.id && (model.recipe === plan.recipe || plan.recipe === 'default');
}
