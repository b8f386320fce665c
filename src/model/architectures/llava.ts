// LLaVA (LlavaForConditionalGeneration): a vision tower and projector (src/model/vision/) in front
// of a language model of another family (text_config: Llama, Mistral, Qwen2 …). The text path is that
// family's: this module hands every decoder question to its module. Image rows reach the decoder as
// ForwardBatch.inputEmbeddings, made by the vision encoder (createVisionEncoder).
import type { ModelConfig } from '../types.js';
import type { ArchitectureModule } from './model.js';
import { llama } from './llama.js';
import { mistral } from './mistral.js';
import { qwen2 } from './qwen2.js';
import { qwen3 } from './qwen3.js';
import { mixtral } from './mixtral.js';
import { qwen3Moe } from './qwen3-moe.js';

// By ARCHITECTURES row name (index.ts imports this module, so it cannot be looked up there).
const TEXT_FAMILIES: Readonly<Record<string, ArchitectureModule>> = { llama, mistral, qwen2, qwen3, mixtral, qwen3_moe: qwen3Moe };

function textModule(config: ModelConfig): ArchitectureModule {
  const module = config.textArchitecture === undefined ? undefined : TEXT_FAMILIES[config.textArchitecture];
  if (!module) throw new Error(`llava: language model architecture ${String(config.textArchitecture)} is not supported`);
  return module;
}

export const llava: ArchitectureModule = {
  // config.json is read through text_config's own family (wrapsTextConfig), so these three are never asked.
  hfSlidingWindow: 'never',
  alwaysQkvBias: false,
  ggufQkPermuted: false,
  wrapsTextConfig: true,
  decoderOptions: (config) => textModule(config).decoderOptions(config),
  create: (checkpoint, ops, options) => textModule(checkpoint.config).create(checkpoint, ops, options),
};
