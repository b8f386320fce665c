// Request-triggered swaps (--auto-swap): a request whose `model` names another Library model
// waits while the swap path (model-swap.ts) loads it with its default recipe, then is served by
// it. A name that is absent, unknown, refused or already live changes nothing: the current model
// serves the request.
import type { ModelSwitcher } from './model-swap.js';

/** Run before a model-needing POST takes its runtime; `body` is the validated request body. */
export type AutoSwap = (body: unknown) => Promise<void>;

export function autoSwapper(switcher: ModelSwitcher): AutoSwap {
  return async (body) => {
    const name = (body as { model?: unknown } | null)?.model;
    if (typeof name !== 'string' || name === switcher.currentId) return;
    let plan;
    try {
      plan = switcher.plan(name);
    } catch {
      return;
    }
    // One swap at a time: a request naming a model while another swap runs waits for it first.
    while (switcher.pending !== null) await switcher.pending;
    if (name === switcher.currentId) return;
    await switcher.start(plan);
  };
}
