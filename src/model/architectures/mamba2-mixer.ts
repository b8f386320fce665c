// The Mamba2 mixer (transformers' Mamba2Mixer / NemotronHMamba2Mixer, torch_forward):
//   [_, _, z, xBC, dt] = in_proj · x          (two d_mlp blocks, 0 wide in every known checkpoint, unused)
//   xBC = SiLU(causal depthwise conv1d(xBC) + conv bias)           → x [heads · head_dim] | B | C [n_groups · d_state]
//   y = SSD scan (dt = clamp(softplus(dt + dt_bias)), A = −exp(A_log), B / C per group, D skip)
//   out = out_proj · (RMSNorm over groups of normGroupSize of (y · silu(z))) · norm.weight
// The gate multiplies before the norm (norm_before_gate=False), unlike Qwen3.5's gated RMSNorm.
// The conv window and the SSM state carry over between steps in the sequence's state slot.
import type { Ops, RecurrentSeq, SsdParams, WeightMatrix } from '../../kernels/ops.js';
import type { ModelConfig, SsmConfig } from '../types.js';
import { mambaConvChannels, type MambaLayerState } from './mamba-state.js';
import type { CheckpointWeights } from './weights.js';
import type { GgufConfigReader } from './model.js';

export interface Mamba2MixerWeights {
  inZ: WeightMatrix;
  inXbc: WeightMatrix;
  inDt: WeightMatrix;
  inBias: { z: Float32Array; xbc: Float32Array; dt: Float32Array } | null;
  /** conv1d.weight [channels, 1, kernel] transposed to [kernel, channels] (ops.causalConv1d). */
  convWeight: Float32Array;
  convBias: Float32Array | undefined;
  /** A, D, dt_bias per head and the dt clamp. */
  params: SsdParams;
  /** The gated RMSNorm's weight [heads · head_dim]. */
  norm: Float32Array;
  outProj: WeightMatrix;
  outBias: Float32Array | undefined;
}

/** Loads the mixer under `prefix` (…layers.N.mixer.). */
export function loadMamba2Mixer(w: CheckpointWeights, c: ModelConfig, s: SsmConfig, prefix: string): Mamba2MixerWeights {
  const inner = s.numHeads * s.headDim;
  const conv = mambaConvChannels(s);
  const K = s.convKernel;
  const projName = `${prefix}in_proj.weight`;
  const projRows = w.shape(projName)?.[0] ?? 0;
  const dMlp = (projRows - 2 * inner - 2 * s.nGroups * s.stateSize - s.numHeads) / 2;
  if (!Number.isInteger(dMlp) || dMlp < 0) throw new Error(`${projName}: ${projRows} rows do not fit the mixer's shapes`);
  const parts = dMlp > 0 ? [2 * dMlp, inner, conv, s.numHeads] : [inner, conv, s.numHeads];
  const blocks = w.rowBlocks(projName, c.hiddenSize, parts);
  const [inZ, inXbc, inDt] = blocks.slice(dMlp > 0 ? 1 : 0);
  const bias = s.projBias ? w.optionalVector(`${prefix}in_proj.bias`, projRows) : undefined;
  const at = 2 * dMlp;
  const raw = w.array(`${prefix}conv1d.weight`, [conv, 1, K]);
  const convWeight = new Float32Array(K * conv);
  for (let ch = 0; ch < conv; ch++) for (let j = 0; j < K; j++) convWeight[j * conv + ch] = raw[ch * K + j];
  // transformers: A = -torch.exp(self.A_log.float()).
  const a = w.vector(`${prefix}A_log`, s.numHeads).map((v) => -Math.exp(v));
  return {
    inZ,
    inXbc,
    inDt,
    inBias: bias
      ? {
          z: bias.slice(at, at + inner),
          xbc: bias.slice(at + inner, at + inner + conv),
          dt: bias.slice(at + inner + conv, at + inner + conv + s.numHeads),
        }
      : null,
    convWeight,
    convBias: s.convBias ? w.vector(`${prefix}conv1d.bias`, conv) : undefined,
    params: {
      numHeads: s.numHeads,
      headDim: s.headDim,
      stateSize: s.stateSize,
      nGroups: s.nGroups,
      a,
      d: w.vector(`${prefix}D`, s.numHeads),
      dtBias: w.vector(`${prefix}dt_bias`, s.numHeads),
      dtMin: s.dtMin,
      dtMax: s.dtMax,
    },
    norm: w.vector(`${prefix}norm.weight`, inner),
    outProj: w.matrix(`${prefix}out_proj.weight`, c.hiddenSize, inner),
    outBias: s.projBias ? w.optionalVector(`${prefix}out_proj.bias`, c.hiddenSize) : undefined,
  };
}

/** Activation buffers of a Mamba2 mixer, grown to the largest batch seen. */
export class Mamba2Scratch {
  private capacity = 0;
  z = new Float32Array(0);
  xbc = new Float32Array(0);
  conv = new Float32Array(0);
  dt = new Float32Array(0);
  x = new Float32Array(0);
  b = new Float32Array(0);
  c = new Float32Array(0);
  y = new Float32Array(0);
  private readonly ones: Float32Array;

  constructor(private readonly s: SsmConfig) {
    this.ones = new Float32Array(s.normGroupSize).fill(1);
  }

  ensure(rows: number): void {
    if (rows <= this.capacity) return;
    const cap = Math.max(rows, Math.ceil(this.capacity * 1.5));
    const s = this.s;
    const inner = s.numHeads * s.headDim;
    const conv = mambaConvChannels(s);
    const bc = s.nGroups * s.stateSize;
    this.z = new Float32Array(cap * inner);
    this.xbc = new Float32Array(cap * conv);
    this.conv = new Float32Array(cap * conv);
    this.dt = new Float32Array(cap * s.numHeads);
    this.x = new Float32Array(cap * inner);
    this.b = new Float32Array(cap * bc);
    this.c = new Float32Array(cap * bc);
    this.y = new Float32Array(cap * inner);
    this.capacity = cap;
  }

  unitWeight(): Float32Array {
    return this.ones;
  }
}

function addRows(y: Float32Array, n: number, bias: Float32Array): void {
  const w = bias.length;
  for (let i = 0; i < n; i++) for (let j = 0; j < w; j++) y[i * w + j] += bias[j];
}

/**
 * The mixer over n rows of `x` (the block-normed hidden states) into out [n, hidden], each sequence
 * continuing from its slot of `state` (which it leaves holding the state after its last row).
 */
export function runMamba2Mixer(
  ops: Ops,
  c: ModelConfig,
  s: SsmConfig,
  w: Mamba2MixerWeights,
  sc: Mamba2Scratch,
  x: Float32Array,
  n: number,
  seqs: readonly RecurrentSeq[],
  state: MambaLayerState,
  out: Float32Array,
): void {
  const inner = s.numHeads * s.headDim;
  const conv = mambaConvChannels(s);
  const bc = s.nGroups * s.stateSize;
  sc.ensure(n);
  ops.matmul(x, n, w.inZ, sc.z);
  ops.matmul(x, n, w.inXbc, sc.xbc);
  ops.matmul(x, n, w.inDt, sc.dt);
  if (w.inBias) {
    addRows(sc.z, n, w.inBias.z);
    addRows(sc.xbc, n, w.inBias.xbc);
    addRows(sc.dt, n, w.inBias.dt);
  }
  ops.causalConv1d(sc.xbc, conv, s.convKernel, w.convWeight, seqs, state.conv, sc.conv, w.convBias);
  for (let i = 0; i < n; i++) {
    const row = i * conv;
    sc.x.set(sc.conv.subarray(row, row + inner), i * inner);
    sc.b.set(sc.conv.subarray(row + inner, row + inner + bc), i * bc);
    sc.c.set(sc.conv.subarray(row + inner + bc, row + conv), i * bc);
  }
  ops.ssdScan(sc.x, sc.dt, sc.b, sc.c, seqs, w.params, state.ssm, sc.y);
  // Gated RMSNorm: y · silu(z) first, then RMS over each group of normGroupSize, then · weight.
  ops.siluMul(sc.z, sc.y, sc.z, n * inner);
  const g = s.normGroupSize;
  if (g === inner) {
    ops.rmsnorm(sc.z, n, inner, w.norm, c.rmsNormEps, sc.y);
  } else {
    ops.rmsnorm(sc.z, (n * inner) / g, g, sc.unitWeight(), c.rmsNormEps, sc.y);
    for (let i = 0; i < n * inner; i++) sc.y[i] *= w.norm[i % inner];
  }
  ops.matmul(sc.y, n, w.outProj, out, w.outBias);
}

/**
 * Mamba2Model.set_gguf_parameters' keys (conversion/mamba.py), as llama_model_mamba2 reads them:
 * `ssm.inner_size`, `ssm.state_size`, `ssm.time_step_rank` (the head count; head size = inner / it),
 * `ssm.group_count`, `ssm.conv_kernel`; the biases are there when their tensors are. The gated norm
 * is per group as llama.cpp runs it (the file stores it [n_group, inner / n_group]; one group: the
 * whole width, as transformers); no dt clamp (llama.cpp has none; transformers' default is (0, inf)).
 */
export function ggufSsmConfig(g: GgufConfigReader, numLayers: number): SsmConfig {
  const need = (key: string): number => {
    const v = g.num(key);
    if (v === undefined || !Number.isInteger(v) || v < 1) throw new Error(`missing or invalid ${g.arch}.${key}`);
    return v;
  };
  const inner = need('ssm.inner_size');
  const numHeads = need('ssm.time_step_rank');
  const nGroups = need('ssm.group_count');
  if (inner % numHeads !== 0 || numHeads % nGroups !== 0) {
    throw new Error(`ssm.inner_size ${inner}, ssm.time_step_rank ${numHeads} and ssm.group_count ${nGroups} do not divide`);
  }
  return {
    numHeads,
    headDim: inner / numHeads,
    stateSize: need('ssm.state_size'),
    nGroups,
    convKernel: need('ssm.conv_kernel'),
    convBias: anyLayerHas(g, numLayers, 'ssm_conv1d.bias'),
    projBias: anyLayerHas(g, numLayers, 'ssm_in.bias'),
    dtMin: 0,
    dtMax: Infinity,
    normGroupSize: inner / nGroups,
  };
}

function anyLayerHas(g: GgufConfigReader, numLayers: number, part: string): boolean {
  return Array.from({ length: numLayers }, (_, l) => g.hasTensor(`blk.${l}.${part}`)).some(Boolean);
}
