// A MoE layer's weights as checkpoints store them, turned into a router matrix and MoeExperts for a
// range of experts. Under base = model.layers.N.mlp. (or Mixtral's model.layers.N.block_sparse_moe.):
//  - router: {base}gate.weight [numExperts, hidden];
//  - per expert (Hugging Face): {base}experts.{e}.{gate,up,down}_proj.weight (Qwen3-MoE), or
//    {base}experts.{e}.{w1,w3,w2}.weight (Mixtral);
//  - stacked and fused (transformers 5): {base}experts.gate_up_proj [E, 2I, H] (each expert's gate
//    rows, then its up rows) and {base}experts.down_proj [E, H, I];
//  - stacked and split (GGUF ffn_{gate,up,down}_exps, under the names the loader gives them):
//    {base}experts.{gate,up,down}_proj [E, I, H] / [E, H, I];
//  - GraniteMoe (block_sparse_moe. only): router {base}router.layer.weight, experts stacked and fused
//    as {base}input_linear.weight [E, 2I, H] (each expert's gate rows, then its up rows: HF's chunk(2)
//    activates the first half) and {base}output_linear.weight [E, H, I]; GraniteMoeShared's shared
//    expert is model.layers.N.shared_mlp.{input,output}_linear.weight ([2S, H] fused gate/up, [H, S]).
// Stacked tensors are sliced per expert without copying; experts outside the range are not read.
import type { MoeExperts, WeightMatrix } from '../../kernels/ops.js';
import type { ModelConfig } from '../types.js';
import type { CheckpointWeights } from './weights.js';

const BASES = ['mlp.', 'block_sparse_moe.'];
/** Per-expert tensor names: gate, up, down. */
const PER_EXPERT_NAMES = [
  ['gate_proj', 'up_proj', 'down_proj'],
  ['w1', 'w3', 'w2'],
] as const;

/** The shape numbers of a MoE config, checked once. */
export interface ExpertShape {
  numExperts: number;
  perToken: number;
  hidden: number;
  width: number;
}

export function expertShape(c: ModelConfig): ExpertShape {
  const { numExperts, numExpertsPerTok, moeIntermediateSize } = c;
  if (!numExperts || !numExpertsPerTok || !moeIntermediateSize) {
    throw new Error(`${c.architecture}: a MoE layer needs numExperts, numExpertsPerTok and moeIntermediateSize in its config`);
  }
  if (numExpertsPerTok > numExperts) throw new Error(`${numExpertsPerTok} experts per token of only ${numExperts}`);
  return { numExperts, perToken: numExpertsPerTok, hidden: c.hiddenSize, width: moeIntermediateSize };
}

/** The router of the layer whose tensors start with `prefix` (model.layers.N.). */
export function loadRouter(w: CheckpointWeights, c: ModelConfig, prefix: string): WeightMatrix {
  const s = expertShape(c);
  const granite = `${prefix}block_sparse_moe.router.layer.weight`;
  if (w.has(granite)) return w.matrix(granite, s.numExperts, s.hidden);
  const base = BASES.find((b) => w.has(`${prefix}${b}gate.weight`));
  if (base === undefined) throw new Error(`layer ${prefix}: no router (${BASES.map((b) => `${prefix}${b}gate.weight`).join(' or ')})`);
  return w.matrix(`${prefix}${base}gate.weight`, s.numExperts, s.hidden);
}

/**
 * Experts [first, end) of the layer whose tensors start with `prefix`, prepared; the others null
 * and, where stored as tensors of their own, told to the loader as left alone.
 */
export function loadLayerExperts(w: CheckpointWeights, c: ModelConfig, prefix: string, range: readonly [number, number]): MoeExperts {
  const s = expertShape(c);
  const [first, end] = range;
  const gate: (WeightMatrix | null)[] = new Array<WeightMatrix | null>(s.numExperts).fill(null);
  const up = gate.slice();
  const down = gate.slice();
  const stacked = (name: string): string | null => (w.has(name) ? name : w.has(`${name}.weight`) ? `${name}.weight` : null);
  const place = (into: (WeightMatrix | null)[], mats: WeightMatrix[]) => mats.forEach((m, i) => (into[first + i] = m));
  const graniteIn = `${prefix}block_sparse_moe.input_linear.weight`;
  const graniteOut = `${prefix}block_sparse_moe.output_linear.weight`;
  if (w.has(graniteIn) && w.has(graniteOut)) {
    const [g, u] = w.stackedMatrices(graniteIn, s.numExperts, 2 * s.width, s.hidden, range, [
      { start: 0, rows: s.width },
      { start: s.width, rows: s.width },
    ]);
    place(gate, g);
    place(up, u);
    place(down, w.stackedMatrices(graniteOut, s.numExperts, s.hidden, s.width, range, [{ start: 0, rows: s.hidden }])[0]);
    return { gate, up, down };
  }
  for (const b of BASES) {
    const base = `${prefix}${b}experts.`;
    const names = PER_EXPERT_NAMES.find(([g]) => w.has(`${base}0.${g}.weight`));
    if (names) {
      const [g, u, d] = names;
      for (let e = 0; e < s.numExperts; e++) {
        const p = `${base}${e}.`;
        if (e < first || e >= end) {
          for (const n of names) w.skip(`${p}${n}.weight`);
          continue;
        }
        gate[e] = w.matrix(`${p}${g}.weight`, s.width, s.hidden);
        up[e] = w.matrix(`${p}${u}.weight`, s.width, s.hidden);
        down[e] = w.matrix(`${p}${d}.weight`, s.hidden, s.width);
      }
      return { gate, up, down };
    }
    const downName = stacked(`${base}down_proj`);
    const gateUp = stacked(`${base}gate_up_proj`);
    const gateName = stacked(`${base}gate_proj`);
    const upName = stacked(`${base}up_proj`);
    if (downName === null || (gateUp === null && (gateName === null || upName === null))) continue;
    if (gateUp !== null) {
      // Each expert's block is its gate rows, then its up rows (transformers' chunk(2) of the fused output).
      const [g, u] = w.stackedMatrices(gateUp, s.numExperts, 2 * s.width, s.hidden, range, [
        { start: 0, rows: s.width },
        { start: s.width, rows: s.width },
      ]);
      place(gate, g);
      place(up, u);
    } else if (gateName !== null && upName !== null) {
      place(gate, w.stackedMatrices(gateName, s.numExperts, s.width, s.hidden, range, [{ start: 0, rows: s.width }])[0]);
      place(up, w.stackedMatrices(upName, s.numExperts, s.width, s.hidden, range, [{ start: 0, rows: s.width }])[0]);
    }
    place(down, w.stackedMatrices(downName, s.numExperts, s.hidden, s.width, range, [{ start: 0, rows: s.hidden }])[0]);
    return { gate, up, down };
  }
  throw new Error(
    `layer ${prefix}: no experts (looked for ${prefix}{mlp,block_sparse_moe}.experts.{0.gate_proj, 0.w1, gate_up_proj, gate_proj, down_proj}, ${prefix}block_sparse_moe.input_linear)`,
  );
}

/** A shared dense SwiGLU expert every row runs, added to the routed output (GraniteMoeShared). */
export interface SharedExpert {
  readonly gate: WeightMatrix;
  readonly up: WeightMatrix;
  readonly down: WeightMatrix;
}

/** The shared expert of the layer under `prefix` (shared_mlp.input_linear [2S, H], gate rows first; output_linear [H, S]), when the config has one. */
export function loadSharedExpert(w: CheckpointWeights, c: ModelConfig, prefix: string): SharedExpert | null {
  const width = c.sharedExpertIntermediateSize;
  if (!width) return null;
  const [gate, up] = w.rowBlocks(`${prefix}shared_mlp.input_linear.weight`, c.hiddenSize, [width, width]);
  return { gate, up, down: w.matrix(`${prefix}shared_mlp.output_linear.weight`, c.hiddenSize, width) };
}
