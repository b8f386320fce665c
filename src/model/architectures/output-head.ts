// A model's lm_head restricted to some token ids (OutputHead), for drafting: bf16 copies of those
// rows, prepared once. Every family's model builds it the same way.
import type { Ops, WeightMatrix } from '../../kernels/ops.js';
import { f32ToBf16 } from '../../kernels/dequant.js';
import type { OutputHead } from './model.js';

/** lm_head rows `ids` as bf16 (half the bytes a draft step reads; drafts need the argmax, not every bit). */
export function bf16OutputHead(ops: Ops, lmHead: WeightMatrix, ids: Int32Array, hiddenSize: number): OutputHead {
  const rows = new Float32Array(ids.length * hiddenSize);
  ops.embed(ids, lmHead, rows);
  const bits = new Uint16Array(rows.length);
  for (let i = 0; i < rows.length; i++) bits[i] = f32ToBf16(rows[i]);
  const weight = ops.prepareWeight({ dtype: 'bf16', rows: ids.length, cols: hiddenSize, data: new Uint8Array(bits.buffer) });
  return { ids: Int32Array.from(ids), weight };
}

/**
 * The final norm and lm_head (or a drafter's `head`) on the rows that sample only (lm_head is the
 * largest matmul: vocab × hidden): hidden [rows, hiddenSize] in, logits [rows.length, head rows] out.
 * `normed` is scratch holding at least rows.length rows.
 */
export function selectedRowLogits(
  ops: Ops,
  hidden: Float32Array,
  normed: Float32Array,
  rows: Int32Array,
  hiddenSize: number,
  finalNorm: { weight: Float32Array; eps: number },
  head: WeightMatrix,
): Float32Array {
  const m = rows.length;
  for (let i = 0; i < m; i++) normed.set(hidden.subarray(rows[i] * hiddenSize, (rows[i] + 1) * hiddenSize), i * hiddenSize);
  ops.rmsnorm(normed, m, hiddenSize, finalNorm.weight, finalNorm.eps, normed);
  const logits = new Float32Array(m * head.rows);
  ops.matmul(normed, m, head, logits);
  return logits;
}
