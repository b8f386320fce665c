// svc as the benchmark sees it: a real `svc serve --model-from-path FILE` child process, driven
// over HTTP with streamed /v1/completions requests (token-id prompts, greedy, ignore_eos), the
// way a client would. The server is started once per checkpoint and serves every measurement.
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import type { BenchEngine, RequestTiming } from './measure.js';
import { freePort, hasExited, OutputTail, peakRssBytes, stopServer, type LoadStats } from './server-process.js';
import { forEachSseData } from './sse.js';

export interface SvcOptions {
  repoRoot: string;
  /** Kernel threads, passed as SVC_THREADS. */
  threads: number;
  /** --max-seq-len: prompt + generated tokens, which also sizes the KV pool. */
  maxSeqLen: number;
  /** --max-batch-size: the largest concurrency measured. */
  maxBatchSize: number;
  /** Extra `svc serve` flags (--svc-args). */
  extraArgs: string[];
  /** Extra request fields merged into every completion request (--svc-body), e.g. a response_format. */
  extraBody?: Record<string, unknown>;
  startupTimeoutMs: number;
  log: (line: string) => void;
}

/**
 * Starts the server and resolves once it logs `Listening on` (the model is loaded and /health
 * answers 200 from then on); rejects if it exits or times out first.
 */
export async function startSvcServer(
  modelPath: string,
  opts: SvcOptions,
): Promise<{ child: ChildProcess; url: string; tail: OutputTail; load: LoadStats }> {
  const port = await freePort();
  const args = [
    resolve(opts.repoRoot, 'bin', 'svc.js'),
    'serve',
    '--model-from-path',
    modelPath,
    '--port',
    String(port),
    '--bind',
    '127.0.0.1',
    '--max-seq-len',
    String(opts.maxSeqLen),
    '--max-batch-size',
    String(opts.maxBatchSize),
    ...opts.extraArgs,
  ];
  opts.log(`    svc: node ${args.map((a) => (a.includes(' ') ? JSON.stringify(a) : a)).join(' ')}`);
  const t0 = performance.now();
  const child = spawn(process.execPath, args, {
    cwd: opts.repoRoot,
    env: { ...process.env, SVC_THREADS: String(opts.threads) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tail = new OutputTail();
  await new Promise<void>((ok, fail) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      fail(new Error(`svc did not log "Listening on" within ${opts.startupTimeoutMs / 1000} s; output:\n${tail}`));
    }, opts.startupTimeoutMs);
    const onData = (chunk: Buffer) => {
      const text = chunk.toString('utf8');
      tail.add(text);
      if (/Listening on/.test(tail.toString())) {
        clearTimeout(timer);
        ok();
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code, signal) => {
      clearTimeout(timer);
      fail(new Error(`svc exited (${signal ?? `code ${code}`}) before it was ready; output:\n${tail}`));
    });
    child.once('error', (err) => {
      clearTimeout(timer);
      fail(err);
    });
  });
  const load = { ms: performance.now() - t0, peakRssBytes: peakRssBytes(child.pid) };
  // The data listeners stay attached: they drain the pipes and keep the tail for later errors.
  return { child, url: `http://127.0.0.1:${port}`, tail, load };
}

interface CompletionFrame {
  choices?: { finish_reason?: string | null }[];
  usage?: { completion_tokens?: number } | null;
  error?: { message?: string };
}

/**
 * One streamed completion; its end time is relative to t0. Streaming (rather than one JSON body)
 * is what clients do and lets the finish be timed when the last token is out, before the tail.
 */
async function streamCompletion(
  url: string,
  prompt: number[],
  maxTokens: number,
  t0: number,
  extraBody: Record<string, unknown> = {},
): Promise<RequestTiming> {
  const res = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      ...extraBody,
      prompt,
      max_tokens: maxTokens,
      temperature: 0,
      ignore_eos: true,
      stream: true,
      stream_options: { include_usage: true },
    }),
  });
  if (!res.ok || !res.body) throw new Error(`svc /v1/completions: HTTP ${res.status}: ${await res.text()}`);
  let endMs = NaN;
  let tokens = NaN;
  const onFrame = (data: string) => {
    if (data === '[DONE]') return;
    const frame = JSON.parse(data) as CompletionFrame;
    if (frame.error) throw new Error(`svc stream error: ${frame.error.message ?? JSON.stringify(frame.error)}`);
    // The finish chunk is sent as soon as the last token is sampled; usage and [DONE] follow.
    if (frame.choices?.some((c) => c.finish_reason)) endMs = performance.now() - t0;
    if (frame.usage?.completion_tokens !== undefined) tokens = frame.usage.completion_tokens;
  };
  await forEachSseData(res.body as AsyncIterable<Uint8Array>, onFrame);
  if (Number.isNaN(endMs)) endMs = performance.now() - t0;
  return { endMs, tokens };
}

/** Starts `svc serve` on the checkpoint and returns it as a benchmark engine (close() stops it). */
export async function openSvc(modelPath: string, opts: SvcOptions): Promise<BenchEngine> {
  const { child, url, tail, load } = await startSvcServer(modelPath, opts);
  return {
    name: 'svc',
    load,
    async generate(prompts, maxTokens) {
      const t0 = performance.now();
      try {
        return await Promise.all(prompts.map((p) => streamCompletion(url, p, maxTokens, t0, opts.extraBody)));
      } catch (err) {
        if (hasExited(child)) throw new Error(`${(err as Error).message}\nsvc exited; output:\n${tail}`, { cause: err });
        throw err;
      }
    },
    close: () => stopServer(child),
  };
}
