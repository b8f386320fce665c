// Builds the drafter of a speculative mode, once the model and the KV pool exist. MTP is planned
// before that (planMtp: its start-up checks, and the KV bytes its layer adds to the pool's size).
import type { KvLayer, Ops } from '../../kernels/ops.js';
import type { Model } from '../../model/architectures/index.js';
import type { Checkpoint } from '../../model/types.js';
import type { SpeculativeOptions } from '../messages.js';
import type { Drafter } from './drafter.js';
import { createMtpDrafter, type MtpPlan } from './mtp-setup.js';
import { NgramDrafter } from './ngram-drafter.js';
import { createSelfDrafter } from './self-speculative.js';

export { planMtp } from './mtp-setup.js';

export interface DrafterDeps {
  checkpoint: Checkpoint;
  ops: Ops;
  model: Model;
  /** The main layers' KV pool. */
  kv: KvLayer[];
  numBlocks: number;
  blockSize: number;
  /** planMtp's result, for mode 'mtp'. */
  mtp: MtpPlan | null;
}

export interface BuiltDrafter {
  drafter: Drafter;
  /** What it chose at start-up, for the log (the self drafter's skip set); null = nothing to say. */
  detail: string | null;
  /** A KV layer of its own over the pool's blocks (MTP), copied and swapped with the main ones; null = none. */
  kv: KvLayer | null;
}

export function buildDrafter(spec: SpeculativeOptions, deps: DrafterDeps): BuiltDrafter {
  switch (spec.mode) {
    case 'ngram':
      return { drafter: new NgramDrafter(), detail: null, kv: null };
    case 'self': {
      const { drafter, description } = createSelfDrafter(deps.model, deps.kv, deps.blockSize, spec.numDrafts);
      return { drafter, detail: description, kv: null };
    }
    case 'mtp': {
      if (!deps.mtp) throw new Error('speculative decoding: the MTP drafter needs planMtp first');
      const { drafter, kv } = createMtpDrafter(deps.checkpoint, deps.ops, deps.mtp, deps.numBlocks, deps.blockSize);
      return { drafter, detail: null, kv };
    }
  }
}
