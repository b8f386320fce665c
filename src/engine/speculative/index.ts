// Builds the drafter a mode names. The drafters that run the model (self, mtp) are built by the worker
// with the model and KV they need.
import type { Drafter, DraftMode } from './drafter.js';
import { NgramDrafter } from './ngram-drafter.js';

export function createDrafter(mode: DraftMode): Drafter {
  switch (mode) {
    case 'ngram':
      return new NgramDrafter();
    case 'self':
      throw new Error('speculative decoding: the self drafter runs the model; the worker builds it (createSelfDrafter)');
    case 'mtp':
      throw new Error(`speculative decoding: the ${mode} drafter is not built yet`);
  }
}
