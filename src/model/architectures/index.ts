// Architecture registry: one row per architecture, mapping the names checkpoints give it (config.json
// `architectures` and `model_type`, GGUF `general.architecture`) to the module that reads its config
// quirks and runs it.
// A new architecture is its module plus one row here.
import type { Ops } from '../../kernels/ops.js';
import type { Checkpoint } from '../types.js';
import type { ArchitectureModule, Model } from './model.js';
import { llama } from './llama.js';
import { mistral } from './mistral.js';
import { qwen2 } from './qwen2.js';
import { qwen3 } from './qwen3.js';
import { qwen2Vl } from './qwen2-vl.js';
import { mixtral } from './mixtral.js';
import { qwen3Moe } from './qwen3-moe.js';
import { llava } from './llava.js';
import { phi3 } from './phi3.js';
import { granite } from './granite.js';
import { graniteMoe } from './granite-moe.js';
import { gemma2, gemma3 } from './gemma.js';
import { olmo2 } from './olmo2.js';
import { qwen35, qwen35Moe } from './qwen3-5.js';
import { gptOss } from './gpt-oss.js';
import { deepseekV2 } from './deepseek-v2.js';
import { mamba2 } from './mamba2.js';
import { nemotronH } from './nemotron-h.js';
import { MtpLayer } from './mtp.js';
import type { ModelOptions } from './expert-placement.js';

export type { ArchitectureModule, ForwardBatch, ForwardOptions, Model, OutputHead, RecurrentState } from './model.js';
export { expertRange, isMoe, type ExpertShard, type ModelOptions, type RemoteExperts } from './expert-placement.js';
export { findMtpWeights, MtpLayer, type MtpPresence, type MtpRows } from './mtp.js';
export { loadExpertShard } from './moe.js';

export interface ArchitectureRow {
  /** ModelConfig.architecture: logs, and MODEL.toml `[match] architectures`. */
  readonly name: string;
  /** config.json `architectures` classes it runs (the causal-LM head classes, as vLLM's registry keys them). */
  readonly hfArchitectures: readonly string[];
  /** config.json `model_type` values it runs, for configs whose `architectures` is missing or unknown. */
  readonly hfModelTypes: readonly string[];
  /** GGUF `general.architecture` values it runs. */
  readonly ggufArchitectures: readonly string[];
  readonly module: ArchitectureModule;
}

export const ARCHITECTURES: readonly ArchitectureRow[] = [
  // SmolLM2 checkpoints are Llama ones (LlamaForCausalLM); their MODEL.toml entry matches by name.
  { name: 'llama', hfArchitectures: ['LlamaForCausalLM'], hfModelTypes: ['llama'], ggufArchitectures: ['llama'], module: llama },
  // llama.cpp writes Mistral models as general.architecture 'llama'.
  { name: 'mistral', hfArchitectures: ['MistralForCausalLM'], hfModelTypes: ['mistral'], ggufArchitectures: [], module: mistral },
  { name: 'qwen2', hfArchitectures: ['Qwen2ForCausalLM'], hfModelTypes: ['qwen2'], ggufArchitectures: ['qwen2'], module: qwen2 },
  { name: 'qwen3', hfArchitectures: ['Qwen3ForCausalLM'], hfModelTypes: ['qwen3'], ggufArchitectures: ['qwen3'], module: qwen3 },
  // Vision-language: the language model only (its vision tower is src/model/vision/'s).
  {
    name: 'qwen2_vl',
    hfArchitectures: ['Qwen2VLForConditionalGeneration'],
    hfModelTypes: ['qwen2_vl'],
    ggufArchitectures: [],
    module: qwen2Vl,
  },
  // Mixture of experts. llama.cpp writes Mixtral as 'llama' too: a GGUF's expert count picks this row over Llama's.
  { name: 'mixtral', hfArchitectures: ['MixtralForCausalLM'], hfModelTypes: ['mixtral'], ggufArchitectures: ['llama'], module: mixtral },
  {
    name: 'qwen3_moe',
    hfArchitectures: ['Qwen3MoeForCausalLM'],
    hfModelTypes: ['qwen3_moe'],
    ggufArchitectures: ['qwen3moe'],
    module: qwen3Moe,
  },
  // Phi-3 (fused qkv / gate_up, partial rotary, LongRoPE) and Granite (multipliers; MoE, MoE with a shared expert).
  { name: 'phi3', hfArchitectures: ['Phi3ForCausalLM'], hfModelTypes: ['phi3'], ggufArchitectures: ['phi3'], module: phi3 },
  { name: 'granite', hfArchitectures: ['GraniteForCausalLM'], hfModelTypes: ['granite'], ggufArchitectures: ['granite'], module: granite },
  {
    name: 'granitemoe',
    hfArchitectures: ['GraniteMoeForCausalLM'],
    hfModelTypes: ['granitemoe'],
    ggufArchitectures: ['granitemoe'],
    module: graniteMoe,
  },
  // Its configs may say model_type granitemoe; the class picks this row (the same module: the shared expert comes from the config).
  {
    name: 'granitemoeshared',
    hfArchitectures: ['GraniteMoeSharedForCausalLM'],
    hfModelTypes: ['granitemoeshared'],
    ggufArchitectures: [],
    module: graniteMoe,
  },
  // Norms on both sides of each sublayer, soft-capping, sliding / global layers (gemma.ts).
  { name: 'gemma2', hfArchitectures: ['Gemma2ForCausalLM'], hfModelTypes: ['gemma2'], ggufArchitectures: ['gemma2'], module: gemma2 },
  // Gemma 3's language model; a Gemma3ForConditionalGeneration checkpoint runs as text only (its text_config).
  {
    name: 'gemma3',
    hfArchitectures: ['Gemma3ForCausalLM', 'Gemma3ForConditionalGeneration'],
    hfModelTypes: ['gemma3_text', 'gemma3'],
    ggufArchitectures: ['gemma3'],
    module: gemma3,
  },
  // Norms on the sublayer outputs only, q/k norms over whole projections (olmo2.ts).
  { name: 'olmo2', hfArchitectures: ['Olmo2ForCausalLM'], hfModelTypes: ['olmo2'], ggufArchitectures: ['olmo2'], module: olmo2 },
  // Hybrid Gated DeltaNet + gated attention, with per-sequence recurrent state (text path only).
  {
    name: 'qwen3_5',
    hfArchitectures: ['Qwen3_5ForConditionalGeneration', 'Qwen3_5ForCausalLM'],
    hfModelTypes: ['qwen3_5', 'qwen3_5_text'],
    ggufArchitectures: ['qwen35'],
    module: qwen35,
  },
  {
    name: 'qwen3_5_moe',
    hfArchitectures: ['Qwen3_5MoeForConditionalGeneration', 'Qwen3_5MoeForCausalLM'],
    hfModelTypes: ['qwen3_5_moe', 'qwen3_5_moe_text'],
    ggufArchitectures: ['qwen35moe'],
    module: qwen35Moe,
  },
  // Sliding / full layers with attention sinks, YaRN, MoE with biased experts and a clamped SwiGLU (MXFP4 experts dequantized at load).
  { name: 'gpt_oss', hfArchitectures: ['GptOssForCausalLM'], hfModelTypes: ['gpt_oss'], ggufArchitectures: ['gpt-oss'], module: gptOss },
  // Multi-head latent attention (the KV cache holds the latent) and DeepSeekMoE (deepseek-v2.ts).
  {
    name: 'deepseek_v2',
    hfArchitectures: ['DeepseekV2ForCausalLM'],
    hfModelTypes: ['deepseek_v2'],
    ggufArchitectures: ['deepseek2'],
    module: deepseekV2,
  },
  // State-space: Mamba2, and Nemotron-H's Mamba2 / attention / MLP / MoE blocks, with per-sequence recurrent state.
  { name: 'mamba2', hfArchitectures: ['Mamba2ForCausalLM'], hfModelTypes: ['mamba2'], ggufArchitectures: ['mamba2'], module: mamba2 },
  {
    name: 'nemotron_h',
    hfArchitectures: ['NemotronHForCausalLM'],
    hfModelTypes: ['nemotron_h'],
    ggufArchitectures: ['nemotron_h', 'nemotron_h_moe'],
    module: nemotronH,
  },
  // Vision-language: the language model is text_config's family; the vision side is src/model/vision/.
  { name: 'llava', hfArchitectures: ['LlavaForConditionalGeneration'], hfModelTypes: ['llava'], ggufArchitectures: [], module: llava },
];

/** The row for a config.json: its first `architectures` class svc knows, else its `model_type`. */
export function architectureForHf(architectures: readonly string[], modelType: string | undefined): ArchitectureRow | undefined {
  for (const cls of architectures) {
    const row = ARCHITECTURES.find((a) => a.hfArchitectures.includes(cls));
    if (row) return row;
  }
  return modelType === undefined ? undefined : ARCHITECTURES.find((a) => a.hfModelTypes.includes(modelType));
}

/**
 * The row whose GGUF `general.architecture` this is, if svc runs it. One name can stand for a dense
 * and a MoE family (llama.cpp's 'llama' is Llama and Mixtral): `hasExperts` (the file's
 * `<arch>.expert_count` > 0) picks the row with routed experts, or the one without.
 */
export function architectureForGguf(name: string, hasExperts = false): ArchitectureRow | undefined {
  const rows = ARCHITECTURES.filter((a) => a.ggufArchitectures.includes(name));
  return rows.find((a) => (a.module.experts !== undefined) === hasExperts) ?? rows[0];
}

/** The row named `name` (ModelConfig.architecture). */
export function architectureNamed(name: string): ArchitectureRow | undefined {
  return ARCHITECTURES.find((a) => a.name === name);
}

/** Builds the model for `checkpoint`, preparing its weights for `ops` once, here. */
export function createModel(checkpoint: Checkpoint, ops: Ops, options?: ModelOptions): Model {
  const row = architectureNamed(checkpoint.config.architecture);
  if (!row) throw new Error(`unsupported architecture ${String(checkpoint.config.architecture)}`);
  return row.module.create(checkpoint, ops, options);
}

/**
 * The checkpoint's multi-token-prediction layer (mtp.ts), run as its architecture runs a decoder
 * layer; its head scores token ids [0, draftVocab). Throws when the checkpoint has none.
 */
export function createMtpLayer(checkpoint: Checkpoint, ops: Ops, draftVocab: number): MtpLayer {
  const row = architectureNamed(checkpoint.config.architecture);
  if (!row) throw new Error(`unsupported architecture ${String(checkpoint.config.architecture)}`);
  return new MtpLayer(checkpoint, ops, row.module.decoderOptions(checkpoint.config), draftVocab);
}
