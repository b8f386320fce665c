// Which kernels the engine runs: the native addon, or the plain-TypeScript reference when
// SVC_KERNELS=reference (slow; for debugging a suspected kernel bug).
import type { Ops } from './ops.js';
import { nativeOps } from './native.js';
import { referenceOps } from './reference.js';

export { nativeOps, nativeInfo, setCpuPath, setNumThreads } from './native.js';
export type { CpuPath, NativeInfo } from './native.js';
export { referenceOps } from './reference.js';

export function defaultOps(): Ops {
  const which = process.env.SVC_KERNELS;
  if (which === undefined || which === '' || which === 'native') return nativeOps;
  if (which === 'reference') return referenceOps;
  throw new Error(`SVC_KERNELS=${which}: expected 'native' or 'reference'`);
}
