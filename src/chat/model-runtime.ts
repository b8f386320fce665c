// What a request needs from the loaded model: the engine that runs it, its tokenizer and chat
// template, and how its output is read. src/server/runtime.ts builds it when a model loads; the
// server's lifecycle hands it to each request.
import type { Engine } from '../engine/types.js';
import type { ReasoningFormatName } from '../model/model-toml.js';
import type { ModelConfig } from '../model/types.js';
import type { Tokenizer } from '../model/tokenizer.js';
import type { ImageTokenLayout } from '../model/vision/types.js';
import type { PromptWorkers } from './prompt-workers.js';

/** Everything a request needs from the loaded model. */
export interface ModelRuntime {
  engine: Engine;
  tokenizer: Tokenizer;
  /** Jinja chat template; null when the model has none (chat requests are then refused). */
  chatTemplate: string | null;
  /** Token ids that end generation unless the request sets ignore_eos. */
  eosTokenIds: number[];
  modelConfig: ModelConfig;
  /** The context length served (prompt + completion): --max-seq-len, else the model's own. */
  maxSeqLen: number;
  /** Sampling values a request gets when it omits them (MODEL.toml, generation_config.json). */
  samplingDefaults: ModelSamplingDefaults;
  /** How this model's output is read: tool-call format, reasoning, thinking budget. */
  chat: ChatSettings;
  /**
   * Threads that render and tokenize prompts off the event loop (a served model always has them;
   * without, prompts are built on the calling thread, as in tests that build a runtime by hand).
   */
  prompts?: PromptWorkers;
  /**
   * The model's vision support; null or absent for a text-only model, whose chat routes refuse
   * image input (400 no_vision_support, src/server/images/load.ts). Set by a vision model's
   * runtime; the encoder itself (VisionEncoder, src/model/vision/types.ts) is model math and runs
   * beside the weights in the engine worker, so the main thread holds only what it needs to know.
   */
  vision?: VisionSupport | null;
}

/** What a request needs to know of a vision model on the main thread. */
export interface VisionSupport {
  /** The image token, and how many of them (and which M-RoPE grid) an image of a given size takes. */
  layout: ImageTokenLayout;
}

/** The model's own sampling defaults (MODEL.toml [sampling], else generation_config.json), under their usual names. */
export interface ModelSamplingDefaults {
  temperature?: number;
  top_p?: number;
  top_k?: number;
  min_p?: number;
}

export interface ChatSettings {
  /** Tool-call parser name (--tool-call-parser, else MODEL.toml, else hermes). */
  toolCallParser: string;
  /** The model writes reasoning (MODEL.toml `reasoning`), whether or not it is disabled. */
  reasoning: boolean;
  /** How it writes it (MODEL.toml `reasoning_format`): `<think>`, `[THINK]` or Gemma 4's `<|channel>`; absent = think. */
  reasoningFormat?: ReasoningFormatName;
  /** --disable-thinking: no reasoning is rendered or returned. */
  disableThinking: boolean;
  /** Reasoning-token ceiling per request (--max-thinking-budget, else MODEL.toml); null = none. */
  maxThinkingBudget: number | null;
}
