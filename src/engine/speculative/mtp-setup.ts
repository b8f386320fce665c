// Start-up of MTP drafting (--speculative): the checks that make a wrong configuration a start-up
// error, the draft head's vocabulary (--mtp-vocab), and the MTP layer's KV: one more KvLayer
// beside the main ones, over the same blocks, so each sequence's block table addresses it too. Its
// bytes count in the KV-per-token figure the pool is sized by, and it travels with the other
// layers wherever blocks are copied (copy-on-write) or swapped.
import type { DType, KvLayer, Ops } from '../../kernels/ops.js';
import { createMtpLayer, findMtpWeights } from '../../model/architectures/index.js';
import type { Checkpoint, ModelConfig } from '../../model/types.js';
import { allocateKvCache, kvBytesPerToken, type KvLayerDTypes } from '../kv-cache.js';
import { MtpDrafter } from './mtp-drafter.js';

/** The --mtp-quantization value each weight dtype of an MTP layer is (the dtypes svc reads from safetensors). */
const QUANTIZATION_OF: Partial<Record<DType, string>> = { bf16: 'bf16' };

export interface MtpOptions {
  /** --mtp-quantization: what the MTP weights must be stored as. */
  mtpQuantization: string;
  /** --mtp-vocab: ids the draft head scores; 0 = all. */
  mtpVocab: number;
}

/** The checked MTP plan: what the pool sizing needs before the model is built, and how to build the drafter. */
export interface MtpPlan {
  /** KV bytes per token of the MTP layer (added to the main layers'). */
  kvBytesPerToken: number;
  /** Its K and V dtypes: the last main layer's. */
  kvDtypes: KvLayerDTypes;
  draftVocab: number;
}

/** --mtp-vocab N → ids scored: min(N, vocab), the whole vocabulary for 0. */
export function mtpDraftVocab(flag: number, vocabSize: number): number {
  if (!Number.isInteger(flag) || flag < 0) throw new RangeError(`--mtp-vocab must be a non-negative integer, got ${flag}`);
  return flag === 0 ? vocabSize : Math.min(flag, vocabSize);
}

/**
 * Checks the checkpoint against the MTP flags; throws the start-up error when it has no MTP
 * weights or they are not stored as --mtp-quantization says. `mainKv` is the main layers' KV plan.
 */
export function planMtp(checkpoint: Checkpoint, options: MtpOptions, mainKv: readonly KvLayerDTypes[]): MtpPlan {
  const c = checkpoint.config;
  const found = findMtpWeights(checkpoint);
  if (!found.found) {
    throw new Error(
      `--speculative: ${checkpoint.source} has no multi-token-prediction weights ` +
        `(num_nextn_predict_layers in config.json / model.layers.${c.numLayers}.eh_proj.weight): ${found.reason}`,
    );
  }
  const names = found.dtypes.map((d) => QUANTIZATION_OF[d] ?? d);
  if (names.length !== 1 || names[0] !== options.mtpQuantization) {
    throw new Error(
      `--mtp-quantization ${options.mtpQuantization} does not match the checkpoint's multi-token-prediction weights, ` +
        `stored as ${names.join(' and ')} (model.layers.${found.layer}.*)`,
    );
  }
  const kvDtypes = mainKv[mainKv.length - 1];
  return {
    kvBytesPerToken: kvBytesPerToken(mtpConfig(c), [kvDtypes]),
    kvDtypes,
    draftVocab: mtpDraftVocab(options.mtpVocab, c.vocabSize),
  };
}

/** The MTP layer's KV over the pool's blocks, and the drafter reading it. */
export function createMtpDrafter(
  checkpoint: Checkpoint,
  ops: Ops,
  plan: MtpPlan,
  numBlocks: number,
  blockSize: number,
): { kv: KvLayer; drafter: MtpDrafter } {
  const [kv] = allocateKvCache(mtpConfig(checkpoint.config), numBlocks, blockSize, [plan.kvDtypes]);
  return { kv, drafter: new MtpDrafter(createMtpLayer(checkpoint, ops, plan.draftVocab), kv, blockSize) };
}

/** The model's shapes as one layer: what the KV helpers size the MTP layer's KV from. */
function mtpConfig(c: ModelConfig): ModelConfig {
  return { ...c, numLayers: 1 };
}
