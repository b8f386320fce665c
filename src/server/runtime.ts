// Everything the main thread needs to talk to a loaded model, gathered in one place: tokenizer,
// chat template, MODEL.toml, sampling defaults and chat settings. serve.ts (and a model swap)
// build the ModelRuntime from this plus the running engine.
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { findChatTemplate } from '../chat/template.js';
import { PromptWorkers } from '../chat/prompt-workers.js';
import { isToolCallParserName, TOOL_CALL_PARSER_NAMES } from '../chat/tool-formats/registry.js';
import type { RunningEngine } from '../engine/engine-client.js';
import { findModelToml, SAMPLING_KEYS, type ModelToml } from '../model/model-toml.js';
import { releaseHeapMemory } from '../kernels/release-heap.js';
import {
  loadTokenizerDefinition,
  packTokenizerDefinition,
  tokenizerFromDefinition,
  tokenizerFromPacked,
  type Tokenizer,
  type TokenizerDefinition,
} from '../model/tokenizer.js';
import type { ModelRuntime, ModelSamplingDefaults } from '../chat/model-runtime.js';
import { imageTokenLayout, readPreprocessorConfig } from '../model/vision/index.js';

export interface RuntimeSettings {
  /** --tool-call-parser; undefined = from MODEL.toml. */
  toolCallParser?: string;
  disableThinking: boolean;
  /** --max-thinking-budget; undefined = from MODEL.toml. */
  maxThinkingBudget?: number;
}

/** MODEL.toml [sampling] wins; otherwise the checkpoint's generation_config.json (as vLLM uses it). */
export function samplingDefaults(source: string, modelToml: ModelToml | null): ModelSamplingDefaults {
  const out: ModelSamplingDefaults = {};
  let from: Record<string, unknown> = modelToml?.sampling ?? {};
  if (Object.keys(from).length === 0) {
    const path = join(source, 'generation_config.json');
    if (statSync(source).isDirectory() && existsSync(path)) {
      const gen = JSON.parse(readFileSync(path, 'utf8')) as Record<string, unknown>;
      // do_sample false means greedy in transformers.
      from = gen.do_sample === false ? { temperature: 0 } : gen;
    }
  }
  for (const k of SAMPLING_KEYS) if (typeof from[k] === 'number') out[k] = from[k] as number;
  return out;
}

/** What the main thread needs of a model besides its engine: made from the files alone. */
export interface PromptSide {
  tokenizer: Tokenizer;
  chatTemplate: string | null;
  /** Spawned at once, building their tokenizers; they learn the context length from createModelRuntime. */
  prompts: PromptWorkers;
}

/** A PromptSide whose prompt worker is building its tokenizer while this thread has not built its own. */
export interface StartedPromptSide {
  /** The definition as read, until finishPromptSide builds this thread's tokenizer from it and drops it. */
  definition: TokenizerDefinition | null;
  /** The same definition, packed: what the workers build from, and the tokenizer keeps. */
  packed: SharedArrayBuffer;
  chatTemplate: string | null;
  prompts: PromptWorkers;
}

/**
 * Reads the tokenizer's definition and the chat template and starts the prompt worker on its tokenizer.
 * serve.ts calls it while the engine loads the weights, then finishPromptSide, so that the builds
 * (worker's, this thread's, the weights) overlap instead of adding up.
 */
export function startPromptSide(source: string): StartedPromptSide {
  const definition = loadTokenizerDefinition(source);
  const packed = packTokenizerDefinition(definition);
  const chatTemplate = findChatTemplate(source);
  return { definition, packed, chatTemplate, prompts: new PromptWorkers(packed, chatTemplate, null) };
}

/** Builds this thread's tokenizer from the definition the workers got. */
export function finishPromptSide(started: StartedPromptSide): PromptSide {
  try {
    const tokenizer = buildTokenizer(started);
    // The build's garbage (and the definition's, read from the model) goes back to the OS now,
    // before the server takes requests: peak RSS while loading is one of the start-up figures.
    releaseHeapMemory();
    return { tokenizer, chatTemplate: started.chatTemplate, prompts: started.prompts };
  } catch (err) {
    void started.prompts.close();
    throw err;
  }
}

/**
 * This thread's tokenizer, from the started side's definition, which it takes: the definition's tables
 * are garbage once this frame is gone (an interpreter frame keeps its temporaries alive until it returns).
 */
function buildTokenizer(started: StartedPromptSide): Tokenizer {
  const { definition } = started;
  started.definition = null;
  return definition ? tokenizerFromDefinition(definition, started.packed) : tokenizerFromPacked(started.packed);
}

/** The main thread's side of a model, around an engine that has loaded it. */
export function createModelRuntime(
  source: string,
  modelName: string,
  engine: RunningEngine,
  settings: RuntimeSettings,
  side?: PromptSide,
): { runtime: ModelRuntime; modelToml: ModelToml | null } {
  const config = engine.info.config;
  const modelToml = findModelToml(source, config.architecture, modelName, { checkpointName: config.nameOrPath });
  const parser = toolCallParser(settings, modelToml);
  const { tokenizer, chatTemplate, prompts } = side ?? finishPromptSide(startPromptSide(source));
  prompts.setMaxSeqLen(engine.info.maxSeqLen);
  const imageLayout = imageTokenLayout(config, readPreprocessorConfig(source), source);
  const runtime: ModelRuntime = {
    engine,
    tokenizer,
    chatTemplate,
    eosTokenIds: config.eosTokenIds,
    modelConfig: config,
    maxSeqLen: engine.info.maxSeqLen,
    samplingDefaults: samplingDefaults(source, modelToml),
    chat: {
      toolCallParser: parser,
      reasoning: modelToml?.model.reasoning ?? false,
      reasoningFormat: modelToml?.model.reasoningFormat ?? 'think',
      disableThinking: settings.disableThinking,
      maxThinkingBudget: settings.maxThinkingBudget ?? modelToml?.model.maxThinkingBudget ?? null,
    },
    // Prompts are rendered and tokenized off the event loop; closed with the runtime (closeModelRuntime).
    prompts,
    vision: imageLayout ? { layout: imageLayout } : null,
  };
  // Tool-call grammars work out their vocabulary from this tokenizer rather than reading it again.
  engine.setTokenizer(runtime.tokenizer);
  return { runtime, modelToml };
}

/** Releases what the runtime holds besides the engine (its prompt workers). */
export async function closeModelRuntime(runtime: ModelRuntime): Promise<void> {
  await runtime.prompts?.close();
}

/** --tool-call-parser, else MODEL.toml's, else hermes; a name no format has is a start-up error, not a 500 per request. */
function toolCallParser(settings: RuntimeSettings, modelToml: ModelToml | null): string {
  const unknown = (name: string) => `unknown tool-call parser '${name}' (known: ${TOOL_CALL_PARSER_NAMES.join(', ')})`;
  const fromToml = modelToml?.model.toolCallParser ?? null;
  // The file is checked even when the flag overrides it: a typo there is still a typo.
  if (fromToml !== null && !isToolCallParserName(fromToml))
    throw new Error(`${modelToml!.source}: [model]: tool_call_parser: ${unknown(fromToml)}`);
  const name = settings.toolCallParser ?? fromToml ?? 'hermes';
  if (!isToolCallParserName(name)) throw new Error(`--tool-call-parser: ${unknown(name)}`);
  return name;
}
