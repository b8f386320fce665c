// Builds the self-speculative drafter (--self-speculative): its output head (lm_head without
// all-zero rows), its skip set measured at start-up (skip-calibration.ts), and a line for the log.
import type { KvLayer } from '../../kernels/ops.js';
import type { Model } from '../../model/architectures/index.js';
import { liveDraftHead } from './draft-head.js';
import { SelfDrafter } from './self-drafter.js';
import { bestCandidate, calibrateSkipSets, expectedSpeedup, CALIBRATION_TOKENS } from './skip-calibration.js';

/**
 * Draft tokens stop once the draft model gives its own pick less than this probability: such a
 * token is likely rejected, and its verify row and the draft passes after it would be wasted.
 */
export const MIN_DRAFT_CONFIDENCE = 0;

export function createSelfDrafter(
  model: Model,
  kv: KvLayer[],
  blockSize: number,
  numDrafts: number,
): { drafter: SelfDrafter; description: string } {
  const t0 = performance.now();
  const head = liveDraftHead(model);
  const cal = calibrateSkipSets(model, head);
  // The skip set per drafts-per-step (MODEL.toml may change it after start-up), picked once each.
  const sets = new Map<number, ReadonlySet<number>>();
  const skipLayers = (k: number) => {
    let set = sets.get(k);
    if (!set) sets.set(k, (set = new Set(bestCandidate(cal, k).skip)));
    return set;
  };
  const drafter = new SelfDrafter(model, kv, blockSize, { skipLayers, head, minConfidence: MIN_DRAFT_CONFIDENCE });
  const chosen = bestCandidate(cal, numDrafts);
  const L = model.config.numLayers;
  const fmt = (x: number) => x.toFixed(2);
  const expected = expectedSpeedup(chosen, numDrafts);
  const description =
    `skips layers ${chosen.skip.join(',')} of ${L} (expected ×${fmt(expected)} at ${numDrafts} drafts` +
    `${expected < 1 ? ': slower than plain decoding on this model' : ''}); ` +
    `layer input/output cosine ${cal.cosine.map(fmt).join(' ')}; ` +
    `argmax agreement skipping ${cal.candidates.map((c) => `[${c.skip.join(',')}] ${fmt(c.agreement)}`).join(', ')} ` +
    `on ${CALIBRATION_TOKENS} tokens of its own text; ` +
    `draft head ${head ? `${head.ids.length} live rows` : 'all rows'} of ${model.config.vocabSize}; ` +
    `${Math.round(performance.now() - t0)} ms`;
  return { drafter, description };
}
