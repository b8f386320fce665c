// Per-sequence state of Mamba2 mixer layers (Mamba2, Nemotron-H): for each mixer, the conv window
// (the last conv_kernel − 1 inputs of every conv channel, [x | B | C]) and the SSM state ([heads,
// head_dim, d_state]), in numSlots slots. The ops read and write them in place at a sequence's slot
// (ops.causalConv1d, ops.ssdScan: state [numSlots, …]).
import type { SsmConfig } from '../types.js';
import type { RecurrentState } from './model.js';

/** Conv channels of a Mamba2 mixer: x (heads · head_dim) then B and C (n_groups · d_state each). */
export function mambaConvChannels(s: SsmConfig): number {
  return s.numHeads * s.headDim + 2 * s.nGroups * s.stateSize;
}

/** f32 values one slot of one mixer holds: its conv window and its SSM state. */
export function mambaSlotFloats(s: SsmConfig): { conv: number; ssm: number } {
  return { conv: (s.convKernel - 1) * mambaConvChannels(s), ssm: s.numHeads * s.headDim * s.stateSize };
}

/** f32 conv window and SSM state of one Mamba2 mixer, slot after slot. */
export interface MambaLayerState {
  readonly conv: Float32Array;
  readonly ssm: Float32Array;
}

export class MambaState implements RecurrentState {
  readonly bytesPerSlot: number;
  /** Per model layer: its state, or null for a layer without one (attention, MLP, MoE). */
  readonly layers: readonly (MambaLayerState | null)[];
  private readonly convSlot: number;
  private readonly ssmSlot: number;

  constructor(
    readonly numSlots: number,
    ssm: SsmConfig,
    isMamba: readonly boolean[],
  ) {
    if (!Number.isInteger(numSlots) || numSlots < 1)
      throw new RangeError(`recurrent state: numSlots must be a positive integer, got ${numSlots}`);
    const sizes = mambaSlotFloats(ssm);
    this.convSlot = sizes.conv;
    this.ssmSlot = sizes.ssm;
    this.layers = isMamba.map((m) =>
      m ? { conv: new Float32Array(numSlots * this.convSlot), ssm: new Float32Array(numSlots * this.ssmSlot) } : null,
    );
    this.bytesPerSlot = 4 * (this.convSlot + this.ssmSlot) * isMamba.filter(Boolean).length;
  }

  reset(slot: number): void {
    this.check(slot);
    for (const l of this.layers) {
      l?.conv.fill(0, slot * this.convSlot, (slot + 1) * this.convSlot);
      l?.ssm.fill(0, slot * this.ssmSlot, (slot + 1) * this.ssmSlot);
    }
  }

  copy(fromSlot: number, toSlot: number): void {
    this.check(fromSlot);
    this.check(toSlot);
    if (fromSlot === toSlot) return;
    for (const l of this.layers) {
      l?.conv.copyWithin(toSlot * this.convSlot, fromSlot * this.convSlot, (fromSlot + 1) * this.convSlot);
      l?.ssm.copyWithin(toSlot * this.ssmSlot, fromSlot * this.ssmSlot, (fromSlot + 1) * this.ssmSlot);
    }
  }

  check(slot: number): void {
    if (!Number.isInteger(slot) || slot < 0 || slot >= this.numSlots)
      throw new RangeError(`recurrent state: slot ${slot} outside ${this.numSlots}`);
  }
}
