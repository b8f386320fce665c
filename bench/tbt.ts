// `npm run bench:tbt` (or `node dist/bench/tbt.js`): time between tokens (TBT) of running streams
// while long prompts keep arriving, --scheduling-policy fifo against slai at a few deadlines.
//
// Each run starts the engine (the worker thread `svc serve` runs, in this process: no HTTP, so
// the gaps measured are the engine's own), starts N streams that decode for as long as the run
// lasts, and once they are decoding sends long prompts (one token each) one after the other: the
// next arrives when the previous one's prefill is done. TBT is the time between two consecutive
// token events of a stream, over the 4 streams, while the long prompts are arriving. The runs of
// the configurations alternate (fifo, slai@D1, slai@D2, fifo, …) so that a busy spell on a shared
// machine lands on all of them; the table gives the median over reps of each figure.
//
//   node dist/bench/tbt.js [--model PATH | --checkpoint qwen3-q8_0] [--streams 4] [--prompt 2048] [--arrivals 6]
//                          [--deadlines 50,100] [--reps 3] [--threads N] [--max-prefill-tokens 8192]
import { mkdirSync, writeFileSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { basename, dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { startEngine, type EngineOptions, type RunningEngine } from '../src/engine/engine-client.js';
import { firstToken, percentile, request, tokens } from './engine-jobs.js';
import { ensureCheckpoint } from './gen-checkpoints.js';

const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
const TINY_CHAT = resolve(REPO_ROOT, '..', 'shared', 'models', 'svc-tiny-chat');

interface Settings {
  model: string;
  streams: number;
  promptTokens: number;
  arrivals: number;
  deadlines: number[];
  reps: number;
  threads: number;
  maxPrefillTokens: number;
}

/** One configuration's run. */
interface Run {
  tbtMs: number[];
  /** TBT before the first arrival: the streams decoding alone. */
  aloneMs: number[];
  /** Per long prompt: arrival → its (only) token, i.e. its prefill latency. */
  ttftMs: number[];
  /** The window: first arrival → last long prompt done. */
  windowMs: number;
  streamTokens: number;
  slaiDeferred: number;
  slaiLimited: number;
  costs: number[];
  margin: number;
}

const STREAM_PROMPT = 32;

function parse(argv: string[]): Settings {
  const get = (flag: string) => {
    const i = argv.indexOf(flag);
    return i >= 0 ? argv[i + 1] : undefined;
  };
  const int = (flag: string, fallback: number) => {
    const raw = get(flag);
    const n = raw === undefined ? fallback : Number(raw);
    if (!Number.isInteger(n) || n < 1) throw new Error(`${flag} needs a positive integer, got "${raw}"`);
    return n;
  };
  const checkpoint = get('--checkpoint');
  const model = get('--model') ?? (checkpoint ? ensureCheckpoint(checkpoint, { log: console.error }).path : TINY_CHAT);
  return {
    model,
    streams: int('--streams', 4),
    promptTokens: int('--prompt', 2048),
    arrivals: int('--arrivals', 6),
    deadlines: (get('--deadlines') ?? '50,100').split(',').map(Number),
    reps: int('--reps', 3),
    threads: int('--threads', Number(process.env.SVC_THREADS ?? availableParallelism())),
    maxPrefillTokens: int('--max-prefill-tokens', 8192),
  };
}

async function runOnce(s: Settings, policy: 'fifo' | 'slai', deadlineMs: number): Promise<Run> {
  const maxSeqLen = Math.max(s.promptTokens + 16, 4096);
  const options: EngineOptions = {
    modelPath: s.model,
    fastLoad: true,
    kvCacheDtype: 'fp8',
    maxSeqLen,
    maxBatchSize: s.streams + 2,
    maxPrefillTokens: s.maxPrefillTokens,
    maxNumSeqs: s.streams + 2,
    gpuMemoryUtilization: 0.9,
    oomGuardMb: 512,
    blockSize: 16,
    enablePrefixCaching: false,
    swapSpaceBytes: 0,
    schedulingPolicy: policy,
    tbtDeadlineMs: deadlineMs,
  };
  const engine: RunningEngine = await startEngine(options);
  try {
    // Streams: token event times, per stream.
    const times: number[][] = [];
    let streamTokens = 0;
    const streams = Array.from({ length: s.streams }, (_, i) => {
      const handle = engine.submit(request(tokens(STREAM_PROMPT, 1000 + i), maxSeqLen - STREAM_PROMPT));
      const t: number[] = [];
      times.push(t);
      const done = (async () => {
        for await (const ev of handle.events)
          if (ev.type === 'tokens') {
            t.push(performance.now());
            streamTokens += ev.ids.length;
          }
      })();
      return { handle, done };
    });
    // Decoding for a while first: the step-time model has its samples before the first arrival.
    while (times.some((t) => t.length < 16)) await new Promise((r) => setTimeout(r, 5));

    const start = performance.now();
    const startTokens = streamTokens;
    const ttftMs: number[] = [];
    for (let a = 0; a < s.arrivals; a++) {
      const t0 = performance.now();
      const at = await firstToken(engine.submit(request(tokens(s.promptTokens, a + 1), 1)));
      ttftMs.push(at - t0);
    }
    const end = performance.now();
    const tokensInWindow = streamTokens - startTokens;
    for (const st of streams) st.handle.cancel();
    await Promise.all(streams.map((st) => st.done));

    const tbtMs: number[] = [];
    const aloneMs: number[] = [];
    for (const t of times)
      for (let i = 2; i < t.length; i++) {
        if (t[i] > start && t[i] <= end) tbtMs.push(t[i] - t[i - 1]);
        else if (t[i] <= start) aloneMs.push(t[i] - t[i - 1]);
      }
    const st = engine.stats().stepTime;
    return {
      tbtMs,
      aloneMs,
      ttftMs,
      windowMs: end - start,
      streamTokens: tokensInWindow,
      slaiDeferred: st?.slaiDeferred ?? 0,
      slaiLimited: st?.slaiLimited ?? 0,
      costs: st?.costs ?? [],
      margin: st?.margin ?? 1,
    };
  } finally {
    await engine.shutdown();
  }
}

const median = (xs: readonly number[]) => percentile(xs, 50);
const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

async function main(): Promise<void> {
  const s = parse(process.argv.slice(2));
  // The worker's kernels read it when they load.
  process.env.SVC_THREADS = String(s.threads);
  const configs: { label: string; policy: 'fifo' | 'slai'; deadlineMs: number }[] = [
    { label: 'fifo', policy: 'fifo', deadlineMs: 100 },
    ...s.deadlines.map((d) => ({ label: `slai ${d} ms`, policy: 'slai' as const, deadlineMs: d })),
  ];
  console.error(
    `tbt bench: ${s.model}, ${s.threads} threads, ${s.streams} streams, ${s.arrivals} × ${s.promptTokens}-token prompts, ${s.reps} rep(s)`,
  );
  const runs = new Map<string, Run[]>(configs.map((c) => [c.label, []]));
  for (let r = 0; r < s.reps; r++) {
    for (const c of configs) {
      const run = await runOnce(s, c.policy, c.deadlineMs);
      runs.get(c.label)!.push(run);
      console.error(
        `  rep ${r + 1} ${c.label}: TBT p50 ${percentile(run.tbtMs, 50).toFixed(1)} ms, p99 ${percentile(run.tbtMs, 99).toFixed(1)} ms, ` +
          `max ${Math.max(...run.tbtMs).toFixed(0)} ms; prompt TTFT ${mean(run.ttftMs).toFixed(0)} ms; ` +
          `deferred ${run.slaiDeferred}, limited ${run.slaiLimited}; costs ${run.costs.map((x) => x.toPrecision(3)).join(' ')}, margin ${run.margin.toFixed(2)}`,
      );
    }
  }

  console.log(
    `\nTBT of ${s.streams} decoding streams while ${s.arrivals} ${s.promptTokens}-token prompts arrive one after another; ` +
      `${basename(s.model)}, ${s.threads} threads, --max-prefill-tokens ${s.maxPrefillTokens}, median of ${s.reps} run(s)\n`,
  );
  console.log(
    '| policy | TBT p50 (ms) | TBT p99 (ms) | TBT max (ms) | TBT p50, no arrivals (ms) | prompt TTFT mean (ms) | stream tokens/s |',
  );
  console.log('|---|---:|---:|---:|---:|---:|---:|');
  for (const c of configs) {
    const rs = runs.get(c.label)!;
    const m = (f: (r: Run) => number) => median(rs.map(f));
    console.log(
      `| ${c.label} | ${m((r) => percentile(r.tbtMs, 50)).toFixed(1)} | ${m((r) => percentile(r.tbtMs, 99)).toFixed(1)} | ` +
        `${m((r) => Math.max(...r.tbtMs)).toFixed(0)} | ${m((r) => percentile(r.aloneMs, 50)).toFixed(1)} | ${m((r) => mean(r.ttftMs)).toFixed(0)} | ` +
        `${m((r) => (r.streamTokens / r.windowMs) * 1000).toFixed(1)} |`,
    );
  }
  const out = resolve(REPO_ROOT, 'bench', 'results', `tbt-${basename(s.model).replace(/\.gguf$/, '')}.json`);
  mkdirSync(dirname(out), { recursive: true });
  // Per run, the figures (not every gap).
  const summary = Object.fromEntries(
    [...runs].map(([label, rs]) => [
      label,
      rs.map(({ tbtMs, aloneMs, ...rest }) => ({
        tbtP50Ms: percentile(tbtMs, 50),
        tbtP99Ms: percentile(tbtMs, 99),
        tbtMaxMs: Math.max(...tbtMs),
        gaps: tbtMs.length,
        aloneP50Ms: percentile(aloneMs, 50),
        ...rest,
      })),
    ]),
  );
  writeFileSync(out, JSON.stringify({ generatedAt: new Date().toISOString(), settings: s, runs: summary }, null, 2) + '\n');
  console.error(`\nwrote ${out}`);
}

main().catch((err: unknown) => {
  console.error(err instanceof Error ? err.message : err);
  process.exit(1);
});
