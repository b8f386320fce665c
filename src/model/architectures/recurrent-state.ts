// Per-sequence state of Gated DeltaNet layers (Qwen3.5): for each linear-attention layer, the conv
// window (the last kernel − 1 inputs of every conv channel) and the delta-rule matrices ([vHeads,
// kDim, vDim]), in numSlots slots. The ops read and write them in place at a sequence's slot
// (ops.causalConv1d, ops.gatedDeltaRule: state [numSlots, …]).
import type { LinearAttentionConfig, ModelConfig } from '../types.js';
import type { RecurrentState } from './model.js';
import { mambaSlotFloats } from './mamba-state.js';

/**
 * Bytes of one slot of a model's recurrent state (0 for an attention-only model): what the engine
 * budgets per slot before it builds the model. Gated DeltaNet layers (Qwen3.5) and Mamba2 mixers
 * (Mamba2, Nemotron-H: mamba-state.ts) alike.
 */
export function recurrentStateBytesPerSlot(config: ModelConfig): number {
  const count = (type: string): number => config.layerTypes?.filter((t) => t === type).length ?? 0;
  let bytes = 0;
  const la = config.linearAttention;
  if (la) {
    const channels = 2 * la.numKeyHeads * la.keyHeadDim + la.numValueHeads * la.valueHeadDim;
    bytes += 4 * ((la.convKernel - 1) * channels + la.numValueHeads * la.keyHeadDim * la.valueHeadDim) * count('linear_attention');
  }
  if (config.ssm) {
    const { conv, ssm } = mambaSlotFloats(config.ssm);
    bytes += 4 * (conv + ssm) * count('mamba');
  }
  return bytes;
}

/** f32 conv window and delta-rule state of one linear-attention layer, slot after slot. */
export interface LinearLayerState {
  readonly conv: Float32Array;
  readonly delta: Float32Array;
}

export class LinearAttentionState implements RecurrentState {
  readonly bytesPerSlot: number;
  /** Per model layer: its state, or null for an attention layer. */
  readonly layers: readonly (LinearLayerState | null)[];
  private readonly convSlot: number;
  private readonly deltaSlot: number;

  constructor(
    readonly numSlots: number,
    la: LinearAttentionConfig,
    isLinear: readonly boolean[],
  ) {
    if (!Number.isInteger(numSlots) || numSlots < 1)
      throw new RangeError(`recurrent state: numSlots must be a positive integer, got ${numSlots}`);
    const channels = 2 * la.numKeyHeads * la.keyHeadDim + la.numValueHeads * la.valueHeadDim;
    this.convSlot = (la.convKernel - 1) * channels;
    this.deltaSlot = la.numValueHeads * la.keyHeadDim * la.valueHeadDim;
    this.layers = isLinear.map((linear) =>
      linear ? { conv: new Float32Array(numSlots * this.convSlot), delta: new Float32Array(numSlots * this.deltaSlot) } : null,
    );
    this.bytesPerSlot = 4 * (this.convSlot + this.deltaSlot) * isLinear.filter(Boolean).length;
  }

  reset(slot: number): void {
    this.check(slot);
    for (const l of this.layers) {
      l?.conv.fill(0, slot * this.convSlot, (slot + 1) * this.convSlot);
      l?.delta.fill(0, slot * this.deltaSlot, (slot + 1) * this.deltaSlot);
    }
  }

  copy(fromSlot: number, toSlot: number): void {
    this.check(fromSlot);
    this.check(toSlot);
    if (fromSlot === toSlot) return;
    for (const l of this.layers) {
      l?.conv.copyWithin(toSlot * this.convSlot, fromSlot * this.convSlot, (fromSlot + 1) * this.convSlot);
      l?.delta.copyWithin(toSlot * this.deltaSlot, fromSlot * this.deltaSlot, (fromSlot + 1) * this.deltaSlot);
    }
  }

  check(slot: number): void {
    if (!Number.isInteger(slot) || slot < 0 || slot >= this.numSlots)
      throw new RangeError(`recurrent state: slot ${slot} outside ${this.numSlots}`);
  }
}
