// Paged KV cache storage: one KvLayer per model layer, each with its own K and V dtypes (a plan),
// sized from the KV dtype traits (src/kernels/dtypes.ts); storeKv and attention code the rows.
import type { ModelConfig } from '../model/types.js';
import type { KvLayer } from '../kernels/ops.js';
import { KV_DTYPES, type KvDType } from '../kernels/dtypes.js';

/** The storage dtypes of one layer's keys and values. */
export interface KvLayerDTypes {
  k: KvDType;
  v: KvDType;
}

/**
 * Per layer, its K and V dtypes. A single dtype means every layer, keys and values alike (what
 * `--kv-cache-dtype` chooses today).
 */
export type KvDTypePlan = KvDType | readonly KvLayerDTypes[];

/** The plan spelled out for each of `numLayers` layers; throws when a per-layer plan has the wrong length. */
export function kvLayerDTypes(plan: KvDTypePlan, numLayers: number): readonly KvLayerDTypes[] {
  if (typeof plan === 'string') return Array.from({ length: numLayers }, () => ({ k: plan, v: plan }));
  if (plan.length !== numLayers) throw new RangeError(`KV dtype plan has ${plan.length} layers, the model ${numLayers}`);
  return plan;
}

/** Bytes of KV cache one token occupies across all layers (k and v; an MLA layer's latent row). */
export function kvBytesPerToken(config: ModelConfig, plan: KvDTypePlan): number {
  let bytes = 0;
  for (const [l, { k, v }] of kvLayerDTypes(plan, config.numLayers).entries()) {
    if (!usesKvCache(config, l)) continue;
    const latent = latentRowDim(config, k);
    bytes +=
      latent !== null
        ? KV_DTYPES[k].rowBytes(latent)
        : config.numKvHeads * (KV_DTYPES[k].rowBytes(config.headDim) + KV_DTYPES[v].rowBytes(config.headDim));
  }
  return bytes;
}

/**
 * MLA models (ModelConfig.mla): the width of a layer's latent row (kvLoraRank + qkRopeHeadDim), stored
 * as one KV head in the K dtype with no V side (the V dtype of the plan is unused); null otherwise.
 * Rotated dtypes (turbo) are refused: their rows decode to R·x, whose leading part is not c_kv.
 */
function latentRowDim(config: ModelConfig, k: KvDType): number | null {
  if (!config.mla) return null;
  if (KV_DTYPES[k].rotated)
    throw new RangeError(
      `KV cache dtype ${k} is not supported for ${config.architecture}'s latent (MLA) cache; use f32, bf16, fp8 or nvfp4`,
    );
  return config.mla.kvLoraRank + config.mla.qkRopeHeadDim;
}

/**
 * One zeroed KvLayer per model layer (a recurrent layer's with empty k / v; an MLA layer's one latent
 * head in k, v empty), laid out [numBlocks][blockSize][numKvHeads] rows of
 * rowBytes(headDim) bytes, keys and values in the plan's dtypes. Each k/v gets its own ArrayBuffer so
 * typed views over it (Float32Array, Uint16Array) are aligned; `alloc` (Ops.allocateLarge) makes them.
 */
export function allocateKvCache(
  config: ModelConfig,
  numBlocks: number,
  blockSize: number,
  plan: KvDTypePlan,
  alloc: (bytes: number) => Uint8Array = (bytes) => new Uint8Array(bytes),
): KvLayer[] {
  if (!Number.isInteger(numBlocks) || numBlocks <= 0) throw new RangeError(`numBlocks must be a positive integer, got ${numBlocks}`);
  if (!Number.isInteger(blockSize) || blockSize <= 0) throw new RangeError(`blockSize must be a positive integer, got ${blockSize}`);
  return kvLayerDTypes(plan, config.numLayers).map(({ k, v }, l) => {
    // A recurrent layer (ModelConfig.layerTypes) keeps its state elsewhere: its KvLayer holds no rows.
    const latent = usesKvCache(config, l) ? latentRowDim(config, k) : null;
    if (latent !== null)
      return {
        kDtype: k,
        vDtype: v,
        numBlocks,
        blockSize,
        numKvHeads: 1,
        headDim: latent,
        k: alloc(numBlocks * blockSize * KV_DTYPES[k].rowBytes(latent)),
        v: new Uint8Array(0),
        kScale: 1,
        vScale: 1,
      };
    const rows = usesKvCache(config, l) ? numBlocks * blockSize * config.numKvHeads : 0;
    return {
      kDtype: k,
      vDtype: v,
      numBlocks,
      blockSize,
      numKvHeads: config.numKvHeads,
      headDim: config.headDim,
      k: alloc(rows * KV_DTYPES[k].rowBytes(config.headDim)),
      v: alloc(rows * KV_DTYPES[v].rowBytes(config.headDim)),
      kScale: 1,
      vScale: 1,
    };
  });
}

/** Whether layer `l` stores keys and values in the paged cache (every layer but a hybrid model's recurrent and feed-forward-only ones). */
export function usesKvCache(config: ModelConfig, l: number): boolean {
  const t = config.layerTypes?.[l];
  return t !== 'linear_attention' && t !== 'mamba' && t !== 'mlp' && t !== 'moe';
}
