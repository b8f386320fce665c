// llama.cpp as the benchmark's baseline, driven in-process through node-llama-cpp's prebuilt CPU
// binaries (no build, no download): the fallback when no native llama-server is given (see
// llama-server.ts). In-process, so it has no load time or load RSS of its own. Concurrent requests are sequences of one context, which
// node-llama-cpp batches into a single llama_decode per step, as llama-server would.
import { readFileSync } from 'node:fs';
import type { LlamaContext, LlamaContextSequence, Token } from 'node-llama-cpp';
import type { BenchEngine, RequestTiming } from './measure.js';

export interface LlamaCppOptions {
  threads: number;
  /** Tokens each sequence must hold (prompt + generated). */
  contextTokens: number;
  /** Largest prompt, so a prompt is one llama_decode batch. */
  batchTokens: number;
}

export interface LlamaCppInfo {
  /** Which llama.cpp was measured (native build and commit, or node-llama-cpp's prebuilt release), and the CPU features it detected. */
  release: string;
  systemInfo: string;
  flashAttention: string;
}

/** Loads `ggufPath` with llama.cpp; the engine creates one context per concurrency level it is asked for. */
export async function openLlamaCpp(ggufPath: string, opts: LlamaCppOptions): Promise<BenchEngine & { info: LlamaCppInfo }> {
  const { getLlama, LlamaLogLevel } = await import('node-llama-cpp');
  const llama = await getLlama({
    gpu: false,
    build: 'never',
    skipDownload: true,
    usePrebuiltBinaries: true,
    progressLogs: false,
    maxThreads: opts.threads,
    logLevel: LlamaLogLevel.error,
  });
  const model = await llama.loadModel({ modelPath: ggufPath, gpuLayers: 0 });
  let context: LlamaContext | null = null;
  let sequences: LlamaContextSequence[] = [];

  // A context sized for exactly k sequences: a 1-sequence run should not pay for 8 KV caches.
  const contextFor = async (k: number): Promise<LlamaContextSequence[]> => {
    if (context && sequences.length === k) return sequences;
    await context?.dispose();
    context = await model.createContext({
      sequences: k,
      contextSize: opts.contextTokens,
      batchSize: Math.max(opts.batchTokens, k),
      threads: { ideal: opts.threads, min: opts.threads },
    });
    sequences = Array.from({ length: k }, () => context!.getSequence());
    return sequences;
  };

  const run = async (seq: LlamaContextSequence, prompt: number[], maxTokens: number, t0: number): Promise<RequestTiming> => {
    let tokens = 0;
    // yieldEogToken keeps generating through EOS: a fixed token count, like ignore_eos.
    for await (const _ of seq.evaluate(prompt as Token[], { temperature: 0, yieldEogToken: true })) {
      if (++tokens >= maxTokens) break;
    }
    return { endMs: performance.now() - t0, tokens };
  };

  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.resolve('node-llama-cpp')), 'utf8')) as { version: string };
  const info: LlamaCppInfo = {
    release: `node-llama-cpp ${pkg.version} prebuilt CPU binaries (llama.cpp ${llama.llamaCppRelease.release}), in-process`,
    systemInfo: llama.systemInfo,
    flashAttention: String(model.defaultContextFlashAttention),
  };

  return {
    name: 'llama.cpp',
    info,
    async generate(prompts, maxTokens) {
      const seqs = await contextFor(prompts.length);
      for (const s of seqs) await s.clearHistory();
      const t0 = performance.now();
      return Promise.all(prompts.map((p, i) => run(seqs[i], p, maxTokens, t0)));
    },
    async close() {
      await context?.dispose();
      await model.dispose();
      await llama.dispose();
    },
  };
}
