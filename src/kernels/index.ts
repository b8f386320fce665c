// Which kernels the engine runs: the native addon, or the plain-TypeScript reference when
// SVC_KERNELS=reference (slow; for debugging a suspected kernel bug).
import { readEnv } from '../common/env.js';
import type { Ops } from './ops.js';
import { nativeOps } from './native.js';
import { referenceOps } from './reference.js';

export { nativeArgmax, nativeOps, nativeInfo, setCpuPath, setNumThreads } from './native.js';
export type { CpuPath, NativeInfo } from './native.js';
export { referenceOps } from './reference.js';

/** The ops SVC_KERNELS names (an invalid value throws the EnvError naming it). */
export function defaultOps(): Ops {
  return readEnv('SVC_KERNELS') === 'reference' ? referenceOps : nativeOps;
}
