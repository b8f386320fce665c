// svc as the benchmark sees it: a real `svc serve --model-from-path FILE` child process, driven
// over HTTP with streamed /v1/completions requests (token-id prompts, greedy, ignore_eos), the
// way a client would. The server is started once per checkpoint and serves every measurement.
// With worldSize > 1 it is several processes: the head (rank 0, HTTP and scheduler) and workers
// (ranks 1…, no HTTP) that meet it at --master-addr/--master-port (expert parallelism).
import { spawn, type ChildProcess } from 'node:child_process';
import { resolve } from 'node:path';
import type { BenchEngine, RequestTiming } from './measure.js';
import { freePort, hasExited, OutputTail, peakRssBytes, postJson, stopServer, type LoadStats } from './server-process.js';
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
  /** Ranks to start (default 1: a plain single process). */
  worldSize?: number;
}

/** A spawned `svc` process and the tail of its output. */
interface SvcProcess {
  child: ChildProcess;
  tail: OutputTail;
  label: string;
}

/** Spawns `node bin/svc.js ARGS` with SVC_THREADS; the pipes are drained into the tail for error messages. */
function spawnSvc(label: string, args: string[], opts: SvcOptions): SvcProcess {
  const argv = [resolve(opts.repoRoot, 'bin', 'svc.js'), ...args];
  opts.log(`    ${label}: node ${argv.map((a) => (a.includes(' ') ? JSON.stringify(a) : a)).join(' ')}`);
  const child = spawn(process.execPath, argv, {
    cwd: opts.repoRoot,
    env: { ...process.env, SVC_THREADS: String(opts.threads) },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const tail = new OutputTail();
  const onData = (chunk: Buffer) => tail.add(chunk.toString('utf8'));
  child.stdout!.on('data', onData);
  child.stderr!.on('data', onData);
  return { child, tail, label };
}

/** Rejects when the process exits or fails to spawn (a dead worker must not leave the head waiting). */
function exitOf(p: SvcProcess): Promise<never> {
  return new Promise((_, fail) => {
    p.child.once('exit', (code, signal) =>
      fail(new Error(`${p.label} exited (${signal ?? `code ${code}`}) before it was ready; output:\n${p.tail}`)),
    );
    p.child.once('error', fail);
  });
}

/** Resolves once the process has logged `pattern`. */
function logged(p: SvcProcess, pattern: RegExp): Promise<void> {
  return new Promise((ok) => {
    const check = () => {
      if (!pattern.test(p.tail.toString())) return;
      p.child.stdout!.off('data', check);
      p.child.stderr!.off('data', check);
      ok();
    };
    p.child.stdout!.on('data', check);
    p.child.stderr!.on('data', check);
  });
}

/**
 * Starts the server (and with worldSize > 1 its workers) and resolves once the head logs
 * `Listening on` (the model is loaded and /health answers 200 from then on); rejects if any
 * process exits or the start times out first, stopping the others.
 */
export async function startSvcServer(
  modelPath: string,
  opts: SvcOptions,
): Promise<{ child: ChildProcess; workers: ChildProcess[]; url: string; tail: OutputTail; load: LoadStats }> {
  const port = await freePort();
  const worldSize = opts.worldSize ?? 1;
  const model = ['serve', '--model-from-path', modelPath];
  // Workers first, so the head finds them at the rendezvous; they serve no HTTP, so only the head
  // gets the serving flags.
  const masterPort = worldSize > 1 ? await freePort() : 0;
  // The head listens for the rendezvous on --master-port; workers dial it at --master-addr.
  const rankArgs = (rank: number) =>
    worldSize === 1
      ? []
      : [
          '--rank',
          String(rank),
          '--world-size',
          String(worldSize),
          ...(rank > 0 ? ['--master-addr', '127.0.0.1'] : []),
          '--master-port',
          String(masterPort),
        ];
  const t0 = performance.now();
  const workers = Array.from({ length: worldSize - 1 }, (_, i) => spawnSvc(`svc rank ${i + 1}`, [...model, ...rankArgs(i + 1)], opts));
  const head = spawnSvc(
    worldSize > 1 ? 'svc rank 0' : 'svc',
    [
      ...model,
      '--port',
      String(port),
      '--bind',
      '127.0.0.1',
      '--max-seq-len',
      String(opts.maxSeqLen),
      '--max-batch-size',
      String(opts.maxBatchSize),
      ...rankArgs(0),
      ...opts.extraArgs,
    ],
    opts,
  );
  const all = [head, ...workers];
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, fail) => {
    timer = setTimeout(
      () => fail(new Error(`svc did not log "Listening on" within ${opts.startupTimeoutMs / 1000} s; output:\n${head.tail}`)),
      opts.startupTimeoutMs,
    );
  });
  try {
    await Promise.race([logged(head, /Listening on/), timeout, ...all.map(exitOf)]);
  } catch (err) {
    await Promise.all(all.map((p) => stopServer(p.child)));
    throw err;
  } finally {
    clearTimeout(timer);
  }
  const load = { ms: performance.now() - t0, peakRssBytes: peakRssBytes(head.child.pid) };
  // The data listeners stay attached: they drain the pipes and keep the tail for later errors.
  return { child: head.child, workers: workers.map((w) => w.child), url: `http://127.0.0.1:${port}`, tail: head.tail, load };
}

interface CompletionFrame {
  choices?: { text?: string; finish_reason?: string | null }[];
  usage?: { completion_tokens?: number; prompt_tokens_details?: { cached_tokens?: number } | null } | null;
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
  const res = await postJson(
    `${url}/v1/completions`,
    JSON.stringify({
      ...extraBody,
      prompt,
      max_tokens: maxTokens,
      temperature: 0,
      ignore_eos: true,
      stream: true,
      stream_options: { include_usage: true },
    }),
    'svc',
  );
  let endMs = NaN;
  let firstMs = NaN;
  let tokens = NaN;
  let cachedTokens: number | undefined;
  const onFrame = (data: string) => {
    if (data === '[DONE]') return;
    const frame = JSON.parse(data) as CompletionFrame;
    if (frame.error) throw new Error(`svc stream error: ${frame.error.message ?? JSON.stringify(frame.error)}`);
    const now = performance.now() - t0;
    if (Number.isNaN(firstMs) && frame.choices?.some((c) => c.text || c.finish_reason)) firstMs = now;
    // The finish chunk is sent as soon as the last token is sampled; usage and [DONE] follow.
    if (frame.choices?.some((c) => c.finish_reason)) endMs = now;
    if (frame.usage?.completion_tokens !== undefined) tokens = frame.usage.completion_tokens;
    if (frame.usage?.prompt_tokens_details?.cached_tokens !== undefined) cachedTokens = frame.usage.prompt_tokens_details.cached_tokens;
  };
  await forEachSseData(res as AsyncIterable<Buffer>, onFrame);
  if (Number.isNaN(endMs)) endMs = performance.now() - t0;
  return { endMs, tokens, firstMs: Number.isNaN(firstMs) ? endMs : firstMs, cachedTokens };
}

/**
 * A GGUF checkpoint's first load repacks its matrices and writes the packed-weights cache once
 * serving; every later load maps it. This start, unmeasured, makes sure the measured one is such a
 * later load (as a user's every start after the first), and stops once the cache is written.
 */
async function warmPackedCache(modelPath: string, opts: SvcOptions): Promise<void> {
  if (!modelPath.endsWith('.gguf')) return;
  const { child, workers, tail } = await startSvcServer(modelPath, opts);
  try {
    if (!/written to .* in the background/.test(tail.toString())) return;
    const deadline = performance.now() + opts.startupTimeoutMs;
    while (!/packed-weights cache: (wrote|cannot write)/.test(tail.toString())) {
      if (hasExited(child)) throw new Error(`svc exited while writing its packed-weights cache; output:\n${tail}`);
      if (performance.now() > deadline) throw new Error(`svc did not write its packed-weights cache in time; output:\n${tail}`);
      await new Promise((ok) => setTimeout(ok, 200));
    }
    opts.log(`    svc: packed-weights cache written (unmeasured start)`);
  } finally {
    await stopServer(child);
    await Promise.all(workers.map(stopServer));
  }
}

/**
 * Starts `svc serve` on the checkpoint and returns it as a benchmark engine (close() stops it).
 * Its load figures are those of a start with the packed-weights cache in place (warmPackedCache).
 */
export async function openSvc(modelPath: string, opts: SvcOptions): Promise<BenchEngine> {
  await warmPackedCache(modelPath, opts);
  const { child, workers, url, tail, load } = await startSvcServer(modelPath, opts);
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
    close: async () => {
      await stopServer(child);
      await Promise.all(workers.map(stopServer));
    },
  };
}
