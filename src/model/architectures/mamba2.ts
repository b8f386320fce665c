// Mamba2 (Mamba2ForCausalLM, model_type mamba2): every block `hidden += Mamba2Mixer(RMSNorm(hidden))`
// (mamba2-mixer.ts), then norm_f and lm_head (tied to the embeddings unless the checkpoint has one),
// tensors under `backbone.` (the loader renames them model.*). Run by nemotron-h.ts's model class with every layer a Mamba block. As
// transformers' MambaRMSNormGated, the gated norm spans the whole inner width (it takes no group
// size, whatever n_groups is); the dt clamp is time_step_limit.
// GGUF (llama.cpp's 'mamba2'): the loader undoes the converter's A = −exp(A_log) and reshapes
// (loaders/gguf-names.ts); ggufMamba2Config reads the ssm.* keys.
import type { ModelConfig, SsmConfig } from '../types.js';
import type { ArchitectureModule, GgufConfigReader } from './model.js';
import type { DecoderOptions } from './decoder-layer.js';
import { SsmHybridModel } from './nemotron-h.js';
import { ggufSsmConfig } from './mamba2-mixer.js';

type Json = Readonly<Record<string, unknown>>;

function int(raw: Json, key: string): number {
  const v = raw[key];
  if (typeof v !== 'number' || !Number.isInteger(v) || v < 1) throw new Error(`missing or invalid "${key}"`);
  return v;
}

/** time_step_limit [lo, hi] (transformers' default (0, inf); JSON may spell inf as null or a string). */
function dtLimit(raw: Json): [number, number] {
  const lim = raw.time_step_limit;
  if (!Array.isArray(lim) || lim.length !== 2) return [0, Infinity];
  const lo = typeof lim[0] === 'number' ? lim[0] : 0;
  const hi = typeof lim[1] === 'number' ? lim[1] : Infinity;
  return [lo, hi];
}

function mamba2Config(raw: Json): Partial<ModelConfig> {
  if ((raw.hidden_act ?? 'silu') !== 'silu') throw new Error(`hidden_act ${String(raw.hidden_act)} (only silu is run)`);
  const hidden = int(raw, 'hidden_size');
  const numHeads = int(raw, 'num_heads');
  const headDim = int(raw, 'head_dim');
  const expand = typeof raw.expand === 'number' ? raw.expand : 2;
  const inner = Math.trunc(expand * hidden);
  if (numHeads * headDim !== inner) throw new Error(`num_heads ${numHeads} × head_dim ${headDim} is not expand × hidden_size ${inner}`);
  const nGroups = int(raw, 'n_groups');
  if (numHeads % nGroups !== 0) throw new Error(`n_groups ${nGroups} does not divide num_heads ${numHeads}`);
  const [dtMin, dtMax] = dtLimit(raw);
  const ssm: SsmConfig = {
    numHeads,
    headDim,
    stateSize: int(raw, 'state_size'),
    nGroups,
    convKernel: int(raw, 'conv_kernel'),
    convBias: raw.use_conv_bias !== false,
    projBias: raw.use_bias === true,
    dtMin,
    dtMax,
    normGroupSize: inner,
  };
  const numLayers = int(raw, 'num_hidden_layers');
  return {
    ssm,
    layerTypes: Array.from({ length: numLayers }, () => 'mamba' as const),
    rmsNormEps: typeof raw.layer_norm_epsilon === 'number' ? raw.layer_norm_epsilon : 1e-5,
    // No attention: nothing is stored per token.
    numHeads: 1,
    numKvHeads: 1,
    intermediateSize: inner,
  };
}

function ggufMamba2Config(g: GgufConfigReader, c: ModelConfig): Partial<ModelConfig> {
  const ssm = ggufSsmConfig(g, c.numLayers);
  return {
    ssm,
    layerTypes: Array.from({ length: c.numLayers }, () => 'mamba' as const),
    numHeads: 1,
    numKvHeads: 1,
    headDim: c.hiddenSize,
    intermediateSize: ssm.numHeads * ssm.headDim,
  };
}

const options = (): DecoderOptions => ({ qkvBias: 'none', oBiasIfPresent: false, qkNorm: false, slidingWindow: null });

export const mamba2: ArchitectureModule = {
  hfSlidingWindow: 'never',
  alwaysQkvBias: false,
  ggufQkPermuted: false,
  // Mamba2Config's defaults for what the generic reader asks and Mamba2 does not have (no attention).
  hfDefaults: {
    num_attention_heads: 1,
    intermediate_size: 0,
    num_heads: 128,
    head_dim: 64,
    n_groups: 8,
    state_size: 128,
    conv_kernel: 4,
    expand: 2,
    tie_word_embeddings: true,
  },
  hfConfig: mamba2Config,
  ggufConfig: ggufMamba2Config,
  decoderOptions: options,
  // Its `backbone.` tensors are read as `model.` (loaders/state-space-names.ts).
  create: (checkpoint, ops) => new SsmHybridModel(checkpoint, ops, { prefix: 'model.' }),
};
