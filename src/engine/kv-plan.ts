// --kv-cache-dtype and --kv-high-precision-layers → the K and V storage dtype of every layer.
// A name is one storage dtype for keys and values, or an asymmetric `<k>k_<v>v` pair. Promoted
// ("high-precision") layers — the first and last N attention layers — store both in bf16. N is the
// flag's value, or, at 0, the spec's automatic value per dtype: bf16 / fp8 / nvfp4 promote none;
// turbo2 and bf16k_turbo3v promote max(4, ceil(4L/5)); every other turbo and asymmetric name
// max(2, ceil(L/3)). No spelling of the flag promotes nothing under a turbo dtype.
import type { KvDType } from '../kernels/dtypes.js';
import type { KvLayerDTypes } from './kv-cache.js';

/** Every --kv-cache-dtype value, symmetric first, then the nine asymmetric pairs. */
export const KV_CACHE_DTYPE_NAMES = [
  'bf16',
  'fp8',
  'nvfp4',
  'turbo2',
  'turbo3',
  'turbo4',
  'turbo8',
  'turbo4k_turbo3v',
  'turbo4k_turbo8v',
  'turbo3k_turbo8v',
  'bf16k_turbo4v',
  'bf16k_turbo3v',
  'bf16k_turbo2v',
  'fp8k_turbo4v',
  'fp8k_turbo3v',
  'fp8k_turbo2v',
] as const;
export type KvCacheDtypeName = (typeof KV_CACHE_DTYPE_NAMES)[number];

/** --kv-high-precision-layers: a count of layers at each end, or every layer. */
export type HighPrecisionLayers = number | 'all';

/** The K and V storage dtypes a name stands for. */
export function kvPair(name: KvCacheDtypeName): KvLayerDTypes {
  const pair = /^(\w+?)k_(\w+)v$/.exec(name);
  if (pair) return { k: pair[1] as KvDType, v: pair[2] as KvDType };
  return { k: name as KvDType, v: name as KvDType };
}

/** Layers promoted to bf16 at each end when the flag is 0 (the dtype's automatic value). */
export function automaticHighPrecisionLayers(name: KvCacheDtypeName, numLayers: number): number {
  if (name === 'bf16' || name === 'fp8' || name === 'nvfp4') return 0;
  if (name === 'turbo2' || name === 'bf16k_turbo3v') return Math.max(4, Math.ceil((4 * numLayers) / 5));
  return Math.max(2, Math.ceil(numLayers / 3));
}

/** How many layers at each end are promoted: the flag's value, else the automatic one. */
export function highPrecisionLayerCount(name: KvCacheDtypeName, numLayers: number, flag: HighPrecisionLayers): number {
  if (flag === 'all') return numLayers;
  return flag > 0 ? flag : automaticHighPrecisionLayers(name, numLayers);
}

/** Per layer, K and V dtypes: bf16 in the first and last N layers, the name's pair elsewhere. */
export function kvLayerPlan(name: KvCacheDtypeName, numLayers: number, flag: HighPrecisionLayers): KvLayerDTypes[] {
  const n = highPrecisionLayerCount(name, numLayers, flag);
  const pair = kvPair(name);
  const promoted: KvLayerDTypes = { k: 'bf16', v: 'bf16' };
  return Array.from({ length: numLayers }, (_, i) => (i < n || i >= numLayers - n ? promoted : pair));
}

/** One line for the start-up log: the plan's dtypes and which layers were promoted. */
export function describeKvPlan(name: KvCacheDtypeName, plan: readonly KvLayerDTypes[]): string {
  const promoted = plan.map((p, i) => (p.k === 'bf16' && p.v === 'bf16' && name !== 'bf16' ? i : -1)).filter((i) => i >= 0);
  if (promoted.length === 0) return name;
  if (promoted.length === plan.length) return `${name}, every layer promoted to bf16`;
  return `${name}, layers ${promoted.join(',')} promoted to bf16`;
}
