// llama.cpp as the benchmark's baseline through a native build's `llama-server`: a child process
// driven over HTTP exactly as svc is (token-id prompts, greedy, EOS ignored, a fixed token count,
// streamed), with k parallel slots for the concurrent runs. Its load time (spawn → /health 200) and
// peak RSS while loading are measured the same way as svc's.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import type { LlamaCppInfo } from './llamacpp.js';
import type { BenchEngine, RequestTiming, ServerTimings } from './measure.js';
import { freePort, hasExited, OutputTail, peakRssBytes, postJson, stopServer, type LoadStats } from './server-process.js';
import { forEachSseData } from './sse.js';

export interface LlamaServerOptions {
  /** Path of the llama-server binary. */
  binary: string;
  threads: number;
  /** Tokens each slot must hold (prompt + generated). */
  contextTokens: number;
  /** Slots (-np): the largest concurrency measured. */
  parallel: number;
  startupTimeoutMs: number;
  log: (line: string) => void;
  /** More llama-server flags, after the ones above (the context sweep's -b/-ub/-fa/-ctk/-ctv). */
  extraArgs?: string[];
}

/** `llama-server --version`: "version: 0.5.0-dev (build 1, commit de3ff81)" → the build and commit. */
export function llamaServerVersion(binary: string): string {
  const res = spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: 30_000 });
  const out = `${res.stdout ?? ''}${res.stderr ?? ''}`;
  const m = /version: (\S+) \(build (\d+), commit ([0-9a-f]+)\)/.exec(out);
  return m ? `${m[1]}, build ${m[2]}, commit ${m[3]}` : 'unknown version';
}

async function healthy(url: string): Promise<boolean> {
  try {
    const res = await fetch(`${url}/health`, { signal: AbortSignal.timeout(2000) });
    await res.body?.cancel();
    return res.status === 200;
  } catch {
    return false;
  }
}

async function startServer(
  ggufPath: string,
  opts: LlamaServerOptions,
): Promise<{ child: ChildProcess; url: string; tail: OutputTail; load: LoadStats; systemInfo: string }> {
  const port = await freePort();
  const args = [
    '-m',
    ggufPath,
    '--host',
    '127.0.0.1',
    '--port',
    String(port),
    '-t',
    String(opts.threads),
    '-tb',
    String(opts.threads),
    // Without a unified KV cache each slot gets -c / -np tokens.
    '-np',
    String(opts.parallel),
    '-c',
    String(opts.contextTokens * opts.parallel),
    // Every prompt is new (cache_prompt: false); keeping none in host memory keeps RSS comparable.
    '--cache-ram',
    '0',
    '--no-webui',
    ...(opts.extraArgs ?? []),
  ];
  opts.log(`    llama-server: ${opts.binary} ${args.join(' ')}`);
  const t0 = performance.now();
  const child = spawn(opts.binary, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  const tail = new OutputTail();
  let systemInfo = '';
  const onData = (chunk: Buffer) => {
    const text = chunk.toString('utf8');
    tail.add(text);
    // Logged once, early: which CPU features the build uses.
    systemInfo ||= /system_info: ([^\n]*)/.exec(text)?.[1]?.trim() ?? '';
  };
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  const url = `http://127.0.0.1:${port}`;
  let spawnError: Error | null = null;
  child.once('error', (err) => (spawnError = err));
  // /health answers 503 while the model loads and 200 once it serves.
  for (;;) {
    if (spawnError) throw spawnError;
    if (hasExited(child))
      throw new Error(`llama-server exited (${child.signalCode ?? `code ${child.exitCode}`}) before it was ready; output:\n${tail}`);
    if (performance.now() - t0 > opts.startupTimeoutMs) {
      child.kill('SIGKILL');
      throw new Error(`llama-server was not ready within ${opts.startupTimeoutMs / 1000} s; output:\n${tail}`);
    }
    if (await healthy(url)) break;
    await new Promise((ok) => setTimeout(ok, 20));
  }
  const load = { ms: performance.now() - t0, peakRssBytes: peakRssBytes(child.pid) };
  return { child, url, tail, load, systemInfo };
}

interface LlamaServerFrame {
  content?: string;
  stop?: boolean;
  tokens_predicted?: number;
  timings?: { prompt_n?: number; prompt_ms?: number; predicted_n?: number; predicted_ms?: number };
  error?: { message?: string };
}

/** One streamed /completion; its end time (relative to t0) is when the final frame (stop: true) arrives. */
async function streamCompletion(url: string, prompt: number[], maxTokens: number, t0: number): Promise<RequestTiming> {
  const body = JSON.stringify({ prompt, n_predict: maxTokens, temperature: 0, ignore_eos: true, cache_prompt: false, stream: true });
  const res = await postJson(`${url}/completion`, body, 'llama-server');
  let endMs = NaN;
  let firstMs = NaN;
  let tokens = NaN;
  let server: ServerTimings | undefined;
  const onFrame = (data: string) => {
    const frame = JSON.parse(data) as LlamaServerFrame;
    if (frame.error) throw new Error(`llama-server stream error: ${frame.error.message ?? JSON.stringify(frame.error)}`);
    const now = performance.now() - t0;
    if (Number.isNaN(firstMs) && (frame.content || frame.stop)) firstMs = now;
    if (frame.stop) {
      endMs = now;
      // Tokens whose text is an incomplete character are not streamed on their own, so the count
      // comes from the final frame rather than from counting frames.
      tokens = frame.tokens_predicted ?? frame.timings?.predicted_n ?? NaN;
      const t = frame.timings;
      if (t?.prompt_n !== undefined && t.prompt_ms !== undefined && t.predicted_n !== undefined && t.predicted_ms !== undefined)
        server = { promptTokens: t.prompt_n, promptMs: t.prompt_ms, predictedTokens: t.predicted_n, predictedMs: t.predicted_ms };
    }
  };
  await forEachSseData(res as AsyncIterable<Buffer>, onFrame);
  if (Number.isNaN(endMs)) endMs = performance.now() - t0;
  return { endMs, tokens, firstMs: Number.isNaN(firstMs) ? endMs : firstMs, server };
}

/** Starts llama-server on the checkpoint and returns it as a benchmark engine (close() stops it). */
export async function openLlamaServer(ggufPath: string, opts: LlamaServerOptions): Promise<BenchEngine & { info: LlamaCppInfo }> {
  const version = llamaServerVersion(opts.binary);
  const { child, url, tail, load, systemInfo } = await startServer(ggufPath, opts);
  return {
    name: 'llama.cpp',
    load,
    info: { release: `native llama-server (${version})`, systemInfo, flashAttention: 'auto' },
    async generate(prompts, maxTokens) {
      const t0 = performance.now();
      try {
        return await Promise.all(prompts.map((p) => streamCompletion(url, p, maxTokens, t0)));
      } catch (err) {
        if (hasExited(child)) throw new Error(`${(err as Error).message}\nllama-server exited; output:\n${tail}`, { cause: err });
        throw err;
      }
    },
    close: () => stopServer(child),
  };
}
