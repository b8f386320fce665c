// A vision tower's config.json `vision_config`, normalised. SigLIP and CLIP vision towers share one
// layout (ViT: patch embedding, learned positions, pre-LN encoder layers); what differs is read here,
// with transformers' SiglipVisionConfig / CLIPVisionConfig defaults for keys a config leaves out
// (llava-hf configs rely on them).
import type { GeluKind } from '../../kernels/ops.js';

type Json = Record<string, unknown>;

export type VisionFamily = 'siglip' | 'clip';

export interface VisionTowerConfig {
  readonly family: VisionFamily;
  readonly hiddenSize: number;
  readonly intermediateSize: number;
  readonly numLayers: number;
  readonly numHeads: number;
  readonly numChannels: number;
  /** Side of the square input, in pixels; the patch grid is ⌊imageSize / patchSize⌋ (SigLIP-so400m: 384 / 14 → 27, the last 6 pixels unused, as the stride-14 convolution). */
  readonly imageSize: number;
  readonly patchSize: number;
  readonly hiddenAct: GeluKind;
  readonly layerNormEps: number;
  /** SigLIP's attention-pooling head (vision_use_head); CLIP's pooled output is its class row instead. */
  readonly useHead: boolean;
}

const DEFAULTS: Record<VisionFamily, Json> = {
  siglip: {
    hidden_size: 768,
    intermediate_size: 3072,
    num_hidden_layers: 12,
    num_attention_heads: 12,
    num_channels: 3,
    image_size: 224,
    patch_size: 16,
    hidden_act: 'gelu_pytorch_tanh',
    layer_norm_eps: 1e-6,
    vision_use_head: true,
  },
  clip: {
    hidden_size: 768,
    intermediate_size: 3072,
    num_hidden_layers: 12,
    num_attention_heads: 12,
    num_channels: 3,
    image_size: 224,
    patch_size: 32,
    hidden_act: 'quick_gelu',
    layer_norm_eps: 1e-5,
    vision_use_head: false,
  },
};

const FAMILIES: Record<string, VisionFamily> = { siglip_vision_model: 'siglip', clip_vision_model: 'clip' };

/** transformers' ACT2FN names of the GELUs the ops implement. */
export function geluKindOf(act: unknown, where: string): GeluKind {
  switch (act) {
    case 'gelu':
      return 'erf';
    // gelu_fast is the same tanh formula, written 0.5·x·(1 + tanh(0.7978845608·x·(1 + 0.044715·x²))).
    case 'gelu_pytorch_tanh':
    case 'gelu_new':
    case 'gelu_fast':
      return 'tanh';
    case 'quick_gelu':
      return 'quick';
    default:
      throw new Error(`${where}: activation ${JSON.stringify(act)} is not supported (gelu, gelu_pytorch_tanh, gelu_new, quick_gelu)`);
  }
}

/** `vision_config` as a VisionTowerConfig; `defaultType` stands in for a missing model_type (LlavaConfig's is CLIP). */
export function visionTowerConfig(raw: Json, where: string, defaultType = 'clip_vision_model'): VisionTowerConfig {
  const type = typeof raw.model_type === 'string' ? raw.model_type : defaultType;
  const family = FAMILIES[type] as VisionFamily | undefined;
  if (family === undefined) throw new Error(`${where}: vision tower "${type}" is not supported (siglip_vision_model, clip_vision_model)`);
  const c = { ...DEFAULTS[family], ...raw };
  const num = (key: string): number => {
    const v = c[key];
    if (typeof v !== 'number' || !Number.isFinite(v)) throw new Error(`${where}: vision_config.${key} is not a number`);
    return v;
  };
  const config: VisionTowerConfig = {
    family,
    hiddenSize: num('hidden_size'),
    intermediateSize: num('intermediate_size'),
    numLayers: num('num_hidden_layers'),
    numHeads: num('num_attention_heads'),
    numChannels: num('num_channels'),
    imageSize: num('image_size'),
    patchSize: num('patch_size'),
    hiddenAct: geluKindOf(c.hidden_act, `${where}: vision_config.hidden_act`),
    layerNormEps: num('layer_norm_eps'),
    useHead: family === 'siglip' && c.vision_use_head !== false,
  };
  if (config.hiddenSize % config.numHeads !== 0) {
    throw new Error(`${where}: vision hidden_size ${config.hiddenSize} is not a multiple of its ${config.numHeads} heads`);
  }
  return config;
}
