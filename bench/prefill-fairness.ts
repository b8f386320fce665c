// `npm run bench:fairness` (or `node dist/bench/prefill-fairness.js`): does chunked prefill stay
// fair? Issue 19: "a long prefill never holds back running decodes by more than one chunk's time".
//
// In-process, as bench/tbt.ts (the engine worker `svc serve` runs, no HTTP, so the gaps are the
// engine's own): one stream (--streams) decodes; once it has decoded --before gaps, a long prompt
// (--prompt, 16k tokens, one token asked) arrives; the stream decodes on until --after gaps past the
// long prompt's first token. The stream's gaps between tokens are split into before the arrival,
// during the prefill (a gap ending after the arrival and starting before the long prompt's token)
// and after it. The reference is one chunk alone, timed on the same engine with nothing else
// running: the chunk a step prefills beside a decode (C, from --max-prefill-tokens and
// --max-batch-size as the scheduler sizes it, src/engine/scheduler.ts) at the deepest position —
// the long prompt's first P − C tokens (from the prefix cache, which is on for this) followed by C
// new ones: its TTFT is one C-token chunk at depth P − C — and at depth 0 (a fresh C-token prompt).
// A step during the prefill holds one chunk and the stream's decode, so the bound is the deepest
// chunk plus one decode step; the check passes when the longest gap is nearer one such step than
// two (max / bound < 1.5): a decode held back by a second chunk would show about 2.
//
//   node dist/bench/prefill-fairness.js [--model PATH | --checkpoint qwen3-q8_0] [--prompt 16384] [--streams 1]
//        [--reps 2] [--threads N] [--max-prefill-tokens 8192] [--max-batch-size 8] [--kv-cache-dtype fp8]
//        [--policy fifo|slai] [--tbt-deadline-ms 100] [--before 32] [--after 32] [--out FILE]
import { mkdirSync, writeFileSync } from 'node:fs';
import { basename, dirname, resolve } from 'node:path';
import { startEngine, type EngineOptions, type RunningEngine } from '../src/engine/engine-client.js';
import { KV_CACHE_DTYPE_NAMES, type KvCacheDtypeName } from '../src/engine/kv-plan.js';
import { SHARED_STEP_PREFILL_DIVISOR } from '../src/engine/scheduler.js';
import { firstToken, percentile, request, tokens } from './engine-jobs.js';
import { ensureCheckpoint } from './gen-checkpoints.js';
import { log, machineInfo, parseFlags, positiveInt, REPO_ROOT, threadCount } from './harness.js';

const STREAM_PROMPT = 32;
/** Stream tokens decoded before the --before gaps are counted (the engine settles). */
const WARM_TOKENS = 8;
/** The fairness bound: the longest gap over (deepest chunk + one decode step) stays under this. */
const FAIR_RATIO = 1.5;
const BLOCK_SIZE = 16;
/** Token events of one step reach their streams within this (ms): one worker message. */
const SAME_STEP_MS = 1;

interface Settings {
  model: string;
  promptTokens: number;
  streams: number;
  reps: number;
  threads: number;
  maxPrefillTokens: number;
  maxBatchSize: number;
  kvCacheDtype: KvCacheDtypeName;
  policy: 'fifo' | 'slai';
  tbtDeadlineMs: number;
  before: number;
  after: number;
  out: string;
}

const USAGE = [
  'usage: node dist/bench/prefill-fairness.js [--model PATH | --checkpoint qwen3-q8_0] [--prompt 16384] [--streams 1] [--reps 2]',
  '         [--threads N] [--max-prefill-tokens 8192] [--max-batch-size 8] [--kv-cache-dtype fp8] [--policy fifo|slai]',
  '         [--tbt-deadline-ms 100] [--before 32] [--after 32] [--out FILE]',
].join('\n');

function parse(argv: string[]): Settings {
  const known = [
    '--model',
    '--checkpoint',
    '--prompt',
    '--streams',
    '--reps',
    '--threads',
    '--max-prefill-tokens',
    '--max-batch-size',
    '--kv-cache-dtype',
    '--policy',
    '--tbt-deadline-ms',
    '--before',
    '--after',
    '--out',
  ];
  const { flags } = parseFlags(argv, known, [], USAGE);
  const int = (flag: string, fallback: number) => (flags.has(flag) ? positiveInt(flags.get(flag)!, flag) : fallback);
  const model = flags.get('--model') ?? ensureCheckpoint(flags.get('--checkpoint') ?? 'qwen3-q8_0', { log }).path;
  const kvCacheDtype = flags.get('--kv-cache-dtype') ?? 'fp8';
  if (!(KV_CACHE_DTYPE_NAMES as readonly string[]).includes(kvCacheDtype))
    throw new Error(`unknown --kv-cache-dtype "${kvCacheDtype}" (known: ${KV_CACHE_DTYPE_NAMES.join(', ')})`);
  const policy = flags.get('--policy') ?? 'fifo';
  if (policy !== 'fifo' && policy !== 'slai') throw new Error(`--policy is fifo or slai, got "${policy}"`);
  const promptTokens = int('--prompt', 16384);
  return {
    model,
    promptTokens,
    streams: int('--streams', 1),
    reps: int('--reps', 2),
    threads: threadCount(flags.get('--threads')),
    maxPrefillTokens: int('--max-prefill-tokens', 8192),
    maxBatchSize: int('--max-batch-size', 8),
    kvCacheDtype: kvCacheDtype as KvCacheDtypeName,
    policy,
    tbtDeadlineMs: int('--tbt-deadline-ms', 100),
    before: int('--before', 32),
    after: int('--after', 32),
    out: resolve(
      flags.get('--out') ??
        resolve(REPO_ROOT, 'bench', 'results', `prefill-fairness-${basename(model).replace(/\.gguf$/, '')}-${promptTokens}.json`),
    ),
  };
}

/**
 * The prefill chunk of a step that also runs a decode, as the fifo scheduler sizes it for one long
 * prompt beside running decodes: at most maxPrefillTokens / SHARED_STEP_PREFILL_DIVISOR, or the
 * prompt's promised share (maxPrefillTokens / maxBatchSize) if that is more.
 */
function sharedChunkTokens(s: Pick<Settings, 'maxPrefillTokens' | 'maxBatchSize' | 'promptTokens'>): number {
  const share = Math.max(1, Math.floor(s.maxPrefillTokens / s.maxBatchSize));
  const budget = Math.max(Math.floor(s.maxPrefillTokens / SHARED_STEP_PREFILL_DIVISOR), Math.min(s.promptTokens, share));
  return Math.min(s.maxPrefillTokens, budget, s.promptTokens);
}

/** One rep: the stream's gaps (ms) around the long prompt and the reference chunks. */
interface Rep {
  beforeMs: number[];
  duringMs: number[];
  afterMs: number[];
  /** Every gap of the first stream with its end time relative to the arrival (ms), for a timeline. */
  timeline: { atMs: number; gapMs: number }[];
  /** The long prompt: arrival → its token. */
  promptTtftMs: number;
  /** One chunk alone: C tokens at depth 0, and P − hit tokens after a prefix-cache hit of hit tokens. */
  firstChunkMs: number;
  deepChunkMs: number;
  deepChunkTokens: number;
  /** Prefix-cache hit of the deep-chunk reference (should be P − deepChunkTokens). */
  deepChunkHitTokens: number;
}

async function waitFor(cond: () => boolean): Promise<void> {
  while (!cond()) await new Promise((r) => setTimeout(r, 2));
}

async function runRep(engine: RunningEngine, s: Settings, rep: number, chunk: number): Promise<Rep> {
  // The stream(s): token event times.
  const times: number[][] = [];
  const streams = Array.from({ length: s.streams }, (_, i) => {
    const handle = engine.submit(request(tokens(STREAM_PROMPT, 10_000 * (rep + 1) + i), 4096));
    const t: number[] = [];
    times.push(t);
    const done = (async () => {
      for await (const ev of handle.events) if (ev.type === 'tokens') for (let k = 0; k < ev.ids.length; k++) t.push(performance.now());
    })();
    return { handle, done };
  });
  let arrival = NaN;
  let promptDone = NaN;
  const long = tokens(s.promptTokens, 1 + rep);
  try {
    await waitFor(() => times.every((t) => t.length > WARM_TOKENS + s.before));
    arrival = performance.now();
    promptDone = await firstToken(engine.submit(request(long, 1)));
    await waitFor(() => times.every((t) => t.filter((x) => x > promptDone).length > s.after));
  } finally {
    for (const st of streams) st.handle.cancel();
    await Promise.all(streams.map((st) => st.done));
  }
  const beforeMs: number[] = [];
  const duringMs: number[] = [];
  const afterMs: number[] = [];
  for (const t of times)
    for (let i = WARM_TOKENS + 1; i < t.length; i++) {
      const gap = t[i] - t[i - 1];
      if (t[i] <= arrival) beforeMs.push(gap);
      // The stream's token of the last chunk's step comes in the same message as the prompt's.
      else if (t[i - 1] < promptDone - SAME_STEP_MS) duringMs.push(gap);
      else afterMs.push(gap);
    }
  const t0 = times[0];
  const timeline = t0.slice(WARM_TOKENS + 1).map((at, i) => ({ atMs: at - arrival, gapMs: at - t0[WARM_TOKENS + i] }));

  // Reference chunks, alone. Deepest: the long prompt's first whole blocks up to P − C come from
  // the prefix cache, the rest (C tokens, rounded up to a block) is one step.
  const hit = Math.floor((s.promptTokens - chunk) / BLOCK_SIZE) * BLOCK_SIZE;
  const deepPrompt = [...long.slice(0, hit), ...tokens(s.promptTokens - hit, 500 + rep)];
  const hitBefore = engine.stats().prefixHitTokens;
  let t = performance.now();
  const deepChunkMs = (await firstToken(engine.submit(request(deepPrompt, 1)))) - t;
  const deepChunkHitTokens = engine.stats().prefixHitTokens - hitBefore;
  t = performance.now();
  const firstChunkMs = (await firstToken(engine.submit(request(tokens(chunk, 700 + rep), 1)))) - t;
  return {
    beforeMs,
    duringMs,
    afterMs,
    timeline,
    promptTtftMs: promptDone - arrival,
    firstChunkMs,
    deepChunkMs,
    deepChunkTokens: s.promptTokens - hit,
    deepChunkHitTokens,
  };
}

const median = (xs: readonly number[]) => percentile(xs, 50);
const fmt = (v: number, digits = 1) => (Number.isFinite(v) ? v.toFixed(digits) : 'n/a');

/** The figures of one rep, as the table and the JSON give them. */
function figures(r: Rep) {
  const beforeP50 = median(r.beforeMs);
  const duringMax = Math.max(...r.duringMs);
  const bound = r.deepChunkMs + beforeP50;
  return {
    beforeP50Ms: beforeP50,
    duringGaps: r.duringMs.length,
    duringP50Ms: median(r.duringMs),
    duringMaxMs: duringMax,
    afterP50Ms: median(r.afterMs),
    promptTtftMs: r.promptTtftMs,
    firstChunkMs: r.firstChunkMs,
    deepChunkMs: r.deepChunkMs,
    boundMs: bound,
    ratio: duringMax / bound,
  };
}

async function main(): Promise<void> {
  const s = parse(process.argv.slice(2));
  // The worker's kernels read it when they load.
  process.env.SVC_THREADS = String(s.threads);
  const chunk = sharedChunkTokens(s);
  const chunks = Math.ceil(s.promptTokens / chunk);
  log(
    `prefill fairness: ${s.model}, ${s.threads} threads, ${s.streams} stream(s), a ${s.promptTokens}-token prompt arriving; ` +
      `--max-prefill-tokens ${s.maxPrefillTokens}, --max-batch-size ${s.maxBatchSize}: chunk beside a decode ${chunk} tokens ` +
      `(${chunks} chunks); --scheduling-policy ${s.policy}; KV ${s.kvCacheDtype}; ${s.reps} rep(s)`,
  );
  const maxSeqLen = Math.max(s.promptTokens + 16, STREAM_PROMPT + 4096);
  const options: EngineOptions = {
    modelPath: s.model,
    fastLoad: true,
    kvCacheDtype: s.kvCacheDtype,
    maxSeqLen,
    maxBatchSize: s.maxBatchSize,
    maxPrefillTokens: s.maxPrefillTokens,
    maxNumSeqs: s.streams + 2,
    gpuMemoryUtilization: 0.9,
    oomGuardMb: 512,
    blockSize: BLOCK_SIZE,
    // For the deep-chunk reference; the stream and the long prompt are new token ids, never hit.
    enablePrefixCaching: true,
    swapSpaceBytes: 0,
    schedulingPolicy: s.policy,
    tbtDeadlineMs: s.tbtDeadlineMs,
  };
  const engine = await startEngine(options);
  const reps: Rep[] = [];
  try {
    // Warm-up: weights paged in, thread pool, a prefill chunk's scratch.
    await firstToken(engine.submit(request(tokens(chunk, 99), 1)));
    for (let r = 0; r < s.reps; r++) {
      const rep = await runRep(engine, s, r, chunk);
      reps.push(rep);
      const f = figures(rep);
      log(
        `  rep ${r + 1}: TBT before p50 ${fmt(f.beforeP50Ms)} ms; during ${f.duringGaps} gaps (${chunks} chunks + 1), p50 ${fmt(f.duringP50Ms)} ms, ` +
          `max ${fmt(f.duringMaxMs)} ms; after p50 ${fmt(f.afterP50Ms)} ms; prompt TTFT ${fmt(f.promptTtftMs / 1000, 2)} s; ` +
          `chunk alone ${fmt(f.firstChunkMs)} ms at 0, ${fmt(f.deepChunkMs)} ms at ${s.promptTokens - rep.deepChunkTokens} ` +
          `(prefix hit ${rep.deepChunkHitTokens}); max / (deep chunk + decode) ${fmt(f.ratio, 2)}`,
      );
      if (rep.deepChunkHitTokens !== s.promptTokens - rep.deepChunkTokens)
        log(`  warning: the deep-chunk reference hit ${rep.deepChunkHitTokens} cached tokens, not ${s.promptTokens - rep.deepChunkTokens}`);
    }
  } finally {
    await engine.shutdown();
  }

  const rows = reps.map(figures);
  const med = (f: (x: (typeof rows)[number]) => number) => median(rows.map(f));
  const header =
    '| rep | TBT before p50 ms | gaps during prefill (chunks + 1) | TBT during p50 ms | TBT during max ms | TBT after p50 ms | ' +
    `prompt TTFT s | chunk alone at 0 ms | chunk alone at ${s.promptTokens - chunk} ms | max / (deep chunk + decode) |`;
  const line = (label: string, f: (g: (x: (typeof rows)[number]) => number) => number, gaps: string) => {
    const ratio = f((x) => x.ratio);
    return (
      `| ${label} | ${fmt(f((x) => x.beforeP50Ms))} | ${gaps} | ${fmt(f((x) => x.duringP50Ms))} | ${fmt(f((x) => x.duringMaxMs))} | ` +
      `${fmt(f((x) => x.afterP50Ms))} | ${fmt(f((x) => x.promptTtftMs) / 1000, 2)} | ${fmt(f((x) => x.firstChunkMs))} | ` +
      `${fmt(f((x) => x.deepChunkMs))} | ${fmt(ratio, 2)}${Number.isFinite(ratio) ? (ratio < FAIR_RATIO ? ' ✓' : ' ✗') : ''} |`
    );
  };
  const table = [
    `### Prefill fairness: ${basename(s.model)}, a ${s.promptTokens}-token prompt arriving beside ${s.streams} decoding stream(s)`,
    '',
    `${s.threads} threads, --scheduling-policy ${s.policy}, --max-prefill-tokens ${s.maxPrefillTokens}, --max-batch-size ${s.maxBatchSize} ` +
      `(chunk beside a decode: ${chunk} tokens, ${chunks} chunks), KV ${s.kvCacheDtype}. A gap is the time between two tokens of a stream; ` +
      `"during" gaps end after the arrival and start before the prompt's token: one per chunk, and the step under way when it arrived. Pass (✓): the longest gap during the prefill < ${FAIR_RATIO} × (the deepest chunk alone + the decode step before).`,
    '',
    header,
    `|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|`,
    ...rows.map((x, i) => line(String(i + 1), (f) => f(x), `${x.duringGaps} (${chunks} + 1)`)),
    ...(rows.length > 1
      ? [
          line(
            'median',
            med,
            `${fmt(
              med((x) => x.duringGaps),
              0,
            )} (${chunks} + 1)`,
          ),
        ]
      : []),
  ].join('\n');
  process.stdout.write(`\n${table}\n`);

  mkdirSync(dirname(s.out), { recursive: true });
  const summary = {
    generatedAt: new Date().toISOString(),
    settings: { ...s, chunkTokens: chunk, chunks, fairRatio: FAIR_RATIO },
    machine: machineInfo(),
    reps: reps.map((r, i) => ({ ...rows[i], ...r })),
  };
  writeFileSync(s.out, `${JSON.stringify(summary, null, 2)}\n`);
  writeFileSync(s.out.replace(/\.json$/, '.md'), `${table}\n`);
  log(`\nwrote ${s.out} and ${s.out.replace(/\.json$/, '.md')}`);
}

main().catch((err: unknown) => {
  process.stderr.write(`prefill fairness: ${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
});
