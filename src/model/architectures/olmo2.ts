// OLMo 2 (Olmo2ForCausalLM): the Llama decoder with its RMSNorms moved onto the sublayer outputs, no
// pre-norms — x += post_attention_layernorm(attn(x)); x += post_feedforward_layernorm(mlp(x)) — and
// q/k RMSNorm over each token's whole projected q (numHeads·headDim) and k (numKvHeads·headDim), before
// RoPE. SwiGLU MLP, untied lm_head. GGUF: llama.cpp's 'olmo2' (post_attention_norm / post_ffw_norm renamed by
// loaders/gguf-names.ts; Q/K rows not interleaved: its converter is TextModel's, not LlamaModel's).
import { DecoderTransformer } from './decoder.js';
import type { ArchitectureModule } from './model.js';

export const olmo2: ArchitectureModule = {
  hfSlidingWindow: 'never',
  alwaysQkvBias: false,
  ggufQkPermuted: false,
  // Olmo2Config's rms_norm_eps (config.json reading otherwise assumes 1e-6).
  hfDefaults: { rms_norm_eps: 1e-5 },
  decoderOptions: (config) => ({
    qkvBias: config.attentionBias ? 'required' : 'none',
    oBiasIfPresent: config.attentionBias,
    qkNorm: true,
    qkNormOver: 'all',
    slidingWindow: null,
    normPlacement: 'post',
  }),
  create: (checkpoint, ops) => new DecoderTransformer(checkpoint, ops, olmo2.decoderOptions(checkpoint.config)),
};
