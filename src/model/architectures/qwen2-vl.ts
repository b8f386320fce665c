// Qwen2-VL's language model (Qwen2VLForConditionalGeneration): Qwen2 (q/k/v biases, none on o_proj)
// with multimodal RoPE — each rotary frequency follows the temporal, height or width position of its
// mrope_section, so an image's rows sit on a 2-D grid (src/model/vision/mrope-positions.ts computes a
// prompt's positions). Text rows have all three positions equal, which is plain RoPE: a batch
// without mropePositions runs exactly as Qwen2. The vision tower (visual.*) is not part of this model:
// config.json's vision_config goes to ModelConfig.visionHfConfig, and src/model/vision/ runs it.
import { DecoderTransformer } from './decoder.js';
import type { ArchitectureModule } from './model.js';

export const qwen2Vl: ArchitectureModule = {
  hfSlidingWindow: 'use_sliding_window',
  alwaysQkvBias: true,
  ggufQkPermuted: false,
  keepsVisionConfig: true,
  decoderOptions: (config) => {
    if (!config.mropeSection) throw new Error(`${config.architecture}: the config has no mrope_section`);
    return {
      qkvBias: 'required',
      oBiasIfPresent: false,
      qkNorm: false,
      slidingWindow: config.slidingWindow,
      mropeSection: Int32Array.from(config.mropeSection),
    };
  },
  create: (checkpoint, ops) => new DecoderTransformer(checkpoint, ops, qwen2Vl.decoderOptions(checkpoint.config)),
};
