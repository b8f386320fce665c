// The "KV cache precision" group of the flag table, in help and README order.
import { flag } from './spec.js';
import { choice, highPrecisionLayers, integer } from './values.js';
import { KV_CACHE_DTYPE_NAMES } from '../../engine/kv-plan.js';

/** Every storage dtype and the nine asymmetric `<k>k_<v>v` pairs (src/engine/kv-plan.ts). */
export const KV_CACHE_DTYPES = KV_CACHE_DTYPE_NAMES;
export type KvCacheDtype = (typeof KV_CACHE_DTYPES)[number];

export const KV_CACHE_FLAGS = [
  flag({
    name: 'kv-cache-dtype',
    key: 'kvCacheDtype',
    group: 'KV cache precision',
    value: choice(KV_CACHE_DTYPES, 'dtype'),
    default: 'fp8',
    help: 'Storage precision of the KV cache: bf16, fp8, nvfp4, turbo2/3/4/8, or a <k>k_<v>v pair (bf16k_turbo3v: BF16 keys, turbo3 values).',
    built: true,
  }),
  flag({
    name: 'kv-high-precision-layers',
    key: 'kvHighPrecisionLayers',
    group: 'KV cache precision',
    value: highPrecisionLayers,
    default: 0,
    help:
      'Keep the first and last N attention layers at BF16 (all: every layer); 0 applies the ' +
      "dtype's automatic value. An unparsable value warns and becomes 0.",
    built: true,
  }),
  flag({
    name: 'fp8-kv-calibration-tokens',
    key: 'fp8KvCalibrationTokens',
    group: 'KV cache precision',
    value: integer(0),
    default: 0,
    help: 'Online max-norm calibration of the fp8 layer scales over the first N tokens (fp8 only; 0: scale 1).',
    built: true,
  }),
] as const;
