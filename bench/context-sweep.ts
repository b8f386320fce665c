// `npm run bench:context` (or `npm run bench -- --sweep 512,4096,16384,32768`): prefill and decode
// speed at context depth, svc against a native llama-server on the same GGUF with the same threads.
//
//   node dist/bench/context-sweep.js [--sweep 512,4096,16384,32768] [--models qwen3,llama] [--formats q8_0,q4_k_m]
//        [--engines svc,llamacpp] [--reps N] [--decode N] [--short N] [--threads N] [--svc-kv bf16[,fp8]]
//        [--llama-server PATH] [--llama-quantize PATH] [--svc-args "..."] [--llama-args "..."] [--cache DIR]
//        [--out FILE] [--small]
//
// Per checkpoint and depth D, one server per engine is started with room for D + N + 16 tokens
// (svc --max-seq-len, llama-server -c), no prompt cache (svc without --enable-prefix-caching,
// llama-server --cache-ram 0 --cache-reuse 0 and cache_prompt: false), and the reps alternate the
// engines (ABBA: svc, llama.cpp, llama.cpp, svc, …). Each engine's turn is two streamed requests,
// greedy, EOS ignored, N tokens each:
//   deep:  a D-token prompt (random ids, new every rep, the same for every engine within a rep):
//          prefill tok/s = D / TTFT and decode tok/s = (N − 1) / (end − TTFT), where TTFT is request
//          start → the first frame carrying output, timed by this client for both engines;
//   short: a --short-token prompt: the short-context decode, on the same server.
// Both servers of a depth stay up together (one at a time computes); they are stopped before the
// next depth. Tables go to stdout, progress and an ETA to stderr, the JSON and markdown to
// bench/results/context-sweep.{json,md} (--small: context-sweep-small.*), rewritten after each depth.
import { mkdirSync, writeFileSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { measureReadBandwidth, type Bandwidth } from './bandwidth.js';
import { ensureCheckpoint } from './gen-checkpoints.js';
import { executable, list, log, machineInfo, parseFlags, positiveInt, REPO_ROOT, threadCount } from './harness.js';
import { llamaServerVersion, openLlamaServer } from './llama-server.js';
import { median, PromptStream, type BenchEngine, type RequestTiming } from './measure.js';
import { DEFAULT_SHAPE_IDS, SHAPE_IDS } from './shapes.js';
import { openSvc } from './svc.js';

const SWEEP_FORMATS = ['q8_0', 'q4_0', 'q4_k_m', 'q5_k_m'] as const;
const ENGINES = ['svc', 'llamacpp'] as const;
const DEFAULT_DEPTHS = '512,4096,16384,32768';

/**
 * llama-server's batching and KV flags, written out (they are its defaults in the build measured):
 * logical batch 2048, micro-batch 512, flash attention as it decides (enabled on the CPU backend),
 * f16 K and V. svc runs with --kv-cache-dtype bf16 by default to match the 16-bit KV.
 */
export const LLAMA_SWEEP_ARGS = [
  ...['-b', '2048', '-ub', '512', '-fa', 'auto', '-ctk', 'f16', '-ctv', 'f16', '--cache-reuse', '0'],
  // Its read/write timeout (3600 s in that build, 600 s in older ones) must outlast a deep prefill.
  ...['--timeout', '3600'],
];

/**
 * svc's: one sequence at a time (the KV pool is one max-seq-len sequence, not the memory budget),
 * and no per-request time limit (300 s by default; a 32k prefill on 2 cores can take longer).
 */
export const SVC_SWEEP_ARGS = ['--max-num-seqs', '1', '--request-timeout', '0'];

/** The issue's targets: at 32k, prefill ≥ 2× llama.cpp and decode ≥ 70% of short-context decode; short decode ≥ 85% of the roofline. */
const TARGET_DEPTH = 32768;
const PREFILL_RATIO_TARGET = 2.0;
const DEPTH_DECODE_TARGET = 0.7;
const ROOFLINE_TARGET = 0.85;
/** Context room past the prompt and its N tokens. */
const CONTEXT_SLACK = 16;

interface SweepOptions {
  depths: number[];
  models: string[];
  formats: string[];
  engines: string[];
  reps: number;
  decodeTokens: number;
  shortTokens: number;
  threads: number;
  svcKv: string[];
  llamaServer: string | null;
  llamaQuantize: string | null;
  svcArgs: string[];
  llamaArgs: string[];
  cacheDir?: string;
  out: string;
  small: boolean;
}

const USAGE = [
  'usage: node dist/bench/context-sweep.js [--sweep 512,4096,16384,32768] [--models qwen3,llama] [--formats q8_0,q4_k_m]',
  '         [--engines svc,llamacpp] [--reps N] [--decode N] [--short N] [--threads N] [--svc-kv bf16[,fp8]]',
  '         [--llama-server PATH (or $SVC_BENCH_LLAMA_SERVER)] [--llama-quantize PATH] [--svc-args "..."] [--llama-args "..."]',
  '         [--cache DIR] [--out FILE] [--small]',
  '   (or: npm run bench -- --sweep DEPTHS [same flags])',
].join('\n');

function parseCli(argv: string[]): SweepOptions {
  const known = [
    '--sweep',
    '--models',
    '--formats',
    '--engines',
    '--reps',
    '--decode',
    '--short',
    '--threads',
    '--svc-kv',
    '--llama-server',
    '--llama-quantize',
    '--svc-args',
    '--llama-args',
    '--cache',
    '--out',
  ];
  const { flags, switches } = parseFlags(argv, known, ['--small'], USAGE);
  const get = (f: string) => flags.get(f);
  const ints = (raw: string, flag: string) => raw.split(',').map((x) => positiveInt(x.trim(), flag));
  const small = switches.has('--small');
  const engines = list(get('--engines') ?? ENGINES.join(','), ENGINES, 'engine');
  const llamaServer = executable(get('--llama-server') ?? process.env.SVC_BENCH_LLAMA_SERVER, '--llama-server');
  if (engines.includes('llamacpp') && !llamaServer)
    throw new Error(
      'the context sweep measures a native llama-server: pass --llama-server PATH (or $SVC_BENCH_LLAMA_SERVER), or --engines svc',
    );
  const decodeTokens = get('--decode') ? positiveInt(get('--decode')!, '--decode') : small ? 8 : 64;
  if (decodeTokens < 2) throw new Error('--decode must be at least 2 (decode rate is measured between token 1 and N)');
  return {
    depths: [...new Set(ints(get('--sweep') ?? (small ? '64,256' : DEFAULT_DEPTHS), '--sweep'))].sort((a, b) => a - b),
    models: list(get('--models') ?? DEFAULT_SHAPE_IDS.join(','), SHAPE_IDS, 'model'),
    formats: list(get('--formats') ?? 'q8_0,q4_k_m', SWEEP_FORMATS, 'format'),
    engines,
    reps: get('--reps') ? positiveInt(get('--reps')!, '--reps') : small ? 1 : 2,
    decodeTokens,
    shortTokens: get('--short') ? positiveInt(get('--short')!, '--short') : 32,
    threads: threadCount(get('--threads')),
    svcKv: (get('--svc-kv') ?? 'bf16').split(',').filter(Boolean),
    llamaServer,
    llamaQuantize: executable(get('--llama-quantize'), '--llama-quantize'),
    svcArgs: (get('--svc-args') ?? '').split(/\s+/).filter(Boolean),
    llamaArgs: (get('--llama-args') ?? '').split(/\s+/).filter(Boolean),
    cacheDir: get('--cache') ? resolve(get('--cache')!) : undefined,
    out: resolve(get('--out') ?? resolve(REPO_ROOT, 'bench', 'results', small ? 'context-sweep-small.json' : 'context-sweep.json')),
    small,
  };
}

/** One engine as the sweep runs it: `svc-bf16` (svc with that KV dtype) or `llama.cpp`. */
interface EngineSpec {
  id: string;
  /** How the tables name it. */
  label: string;
  kind: 'svc' | 'llama.cpp';
  open: (modelPath: string, contextTokens: number) => Promise<BenchEngine>;
}

function engineSpecs(o: SweepOptions): EngineSpec[] {
  const specs: EngineSpec[] = [];
  if (o.engines.includes('svc'))
    for (const kv of o.svcKv)
      specs.push({
        id: `svc-${kv}`,
        label: `svc (KV ${kv})`,
        kind: 'svc',
        open: (path, contextTokens) =>
          openSvc(path, {
            repoRoot: REPO_ROOT,
            threads: o.threads,
            maxSeqLen: contextTokens,
            maxBatchSize: 1,
            extraArgs: ['--kv-cache-dtype', kv, ...SVC_SWEEP_ARGS, ...o.svcArgs],
            startupTimeoutMs: 10 * 60_000,
            log,
          }),
      });
  if (o.engines.includes('llamacpp') && o.llamaServer) {
    const binary = o.llamaServer;
    specs.push({
      id: 'llama.cpp',
      label: 'llama.cpp (KV f16)',
      kind: 'llama.cpp',
      open: (path, contextTokens) =>
        openLlamaServer(path, {
          binary,
          threads: o.threads,
          contextTokens,
          parallel: 1,
          startupTimeoutMs: 10 * 60_000,
          log,
          extraArgs: [...LLAMA_SWEEP_ARGS, ...o.llamaArgs],
        }),
    });
  }
  return specs;
}

/** One engine's turn in one rep at one depth. */
interface Sample {
  engine: string;
  depth: number;
  rep: number;
  /** Deep request: prompt of `depth` tokens. */
  ttftMs: number;
  endMs: number;
  prefillTokS: number;
  decodeTokS: number;
  /** Short request: prompt of --short tokens. */
  shortTtftMs: number;
  shortEndMs: number;
  shortDecodeTokS: number;
  /** llama-server's own timings of the deep request: prompt_n / prompt_ms and (predicted_n − 1) / predicted_ms. */
  serverPrefillTokS?: number;
  serverDecodeTokS?: number;
}

/** Medians of one engine at one depth. */
interface EngineDepthResult {
  reps: number;
  ttftMs: number;
  prefillTokS: number;
  decodeTokS: number;
  shortDecodeTokS: number;
  serverPrefillTokS?: number;
  serverDecodeTokS?: number;
}

interface DepthResult {
  depth: number;
  contextTokens: number;
  /** Per engine id: medians, or the error that stopped it at this depth. */
  engines: Record<string, EngineDepthResult | { error: string }>;
  /** Spawn → serving of each engine's server at this depth, ms. */
  loadMs: Record<string, number>;
  samples: Sample[];
}

interface CheckpointResult {
  model: string;
  format: string;
  path: string;
  quantizer: string;
  weightBytes: number;
  rooflineTokS: number;
  depths: DepthResult[];
}

const rate = (tokens: number, ms: number) => (ms > 0 ? (tokens * 1000) / ms : NaN);

/** One streamed request on `engine`, checked: N tokens, nothing taken from a prompt cache. */
async function request(engine: BenchEngine, prompt: number[], maxTokens: number): Promise<RequestTiming & { firstMs: number }> {
  const [t] = await engine.generate([prompt], maxTokens);
  if (t.tokens !== maxTokens)
    throw new Error(`${engine.name} produced ${t.tokens} tokens where ${maxTokens} were asked (EOS must be ignored)`);
  if (t.cachedTokens) throw new Error(`${engine.name} took ${t.cachedTokens} prompt tokens from its prefix cache (it must be off)`);
  if (t.server && t.server.promptTokens !== prompt.length)
    throw new Error(`${engine.name} evaluated ${t.server.promptTokens} of ${prompt.length} prompt tokens (its prompt cache must be off)`);
  return { ...t, firstMs: t.firstMs ?? t.endMs };
}

/**
 * The time left, from the requests measured so far: a deep request's ms per prompt token fitted
 * linear in depth (attention grows with it) over every engine's samples; constant while only one
 * depth is measured (then an underestimate), an assumed 200 tok/s before any.
 */
class Eta {
  private readonly points: { depth: number; msPerToken: number }[] = [];
  private readonly shortMs: number[] = [];
  add(s: Sample): void {
    this.points.push({ depth: s.depth, msPerToken: s.endMs / s.depth });
    this.shortMs.push(s.shortEndMs);
  }
  requestMs(depth: number): number {
    const n = this.points.length;
    const short = this.shortMs.length ? median(this.shortMs) : 0;
    if (n === 0) return depth * 5 + short;
    const mx = this.points.reduce((a, p) => a + p.depth, 0) / n;
    const my = this.points.reduce((a, p) => a + p.msPerToken, 0) / n;
    const sxx = this.points.reduce((a, p) => a + (p.depth - mx) ** 2, 0);
    const slope = sxx > 0 ? Math.max(0, this.points.reduce((a, p) => a + (p.depth - mx) * (p.msPerToken - my), 0) / sxx) : 0;
    return depth * Math.max(my + slope * (depth - mx), 0) + short;
  }
}

const minutes = (ms: number) => `${(ms / 60_000).toFixed(1)} min`;

export async function runContextSweep(argv: string[]): Promise<void> {
  const o = parseCli(argv);
  const specs = engineSpecs(o);
  if (specs.length === 0) throw new Error('no engine to measure');
  const checkpoints = o.models.flatMap((model) => o.formats.map((format) => ({ model, format })));
  const turns = checkpoints.length * o.depths.length * specs.length * o.reps;
  const promptTokens = o.depths.reduce((a, d) => a + d, 0) * checkpoints.length * specs.length * o.reps;
  log(
    `context sweep: depths ${o.depths.join('/')}, ${checkpoints.map((c) => `${c.model} ${c.format}`).join(', ')}; ` +
      `${specs.map((s) => s.label).join(' vs ')}; ${o.reps} rep(s), ${o.decodeTokens} tokens per request, ${o.threads} threads`,
  );
  log(
    `plan: ${turns} engine turns, ${promptTokens.toLocaleString('en-US')} deep prompt tokens in all: ` +
      `${minutes((promptTokens / 300) * 1000)}–${minutes((promptTokens / 100) * 1000)} of prefill alone at 300–100 tok/s`,
  );

  const bandwidth: Bandwidth = await measureReadBandwidth(o.threads, o.small ? 256 << 20 : 1 << 30);
  log(`memory read bandwidth: ${bandwidth.gbPerS.toFixed(1)} GB/s (${bandwidth.method})`);

  const eta = new Eta();
  const t0 = performance.now();
  let done = 0;
  const remaining: number[] = checkpoints.flatMap(() => o.depths.flatMap((d) => Array<number>(specs.length * o.reps).fill(d)));
  const results: CheckpointResult[] = [];
  const tables: string[] = [];
  const llamaCpp = o.llamaServer && o.engines.includes('llamacpp') ? `native llama-server (${llamaServerVersion(o.llamaServer)})` : null;
  const write = () => writeResults(o, specs, bandwidth, llamaCpp, results);

  for (const { model, format } of checkpoints) {
    const artifact = ensureCheckpoint(`${model}-${format}`, {
      small: o.small,
      cacheDir: o.cacheDir,
      llamaQuantize: o.llamaQuantize ?? undefined,
      log,
    });
    const cp: CheckpointResult = {
      model,
      format,
      path: artifact.path,
      quantizer: artifact.quantizer,
      weightBytes: artifact.activeBytes,
      rooflineTokS: (bandwidth.gbPerS * 1e9) / artifact.activeBytes,
      depths: [],
    };
    results.push(cp);
    for (const depth of o.depths) {
      const contextTokens = depth + o.decodeTokens + CONTEXT_SLACK;
      const dr: DepthResult = { depth, contextTokens, engines: {}, loadMs: {}, samples: [] };
      cp.depths.push(dr);
      log(`${model} ${format}, depth ${depth} (context ${contextTokens}):`);
      const prompts = new PromptStream(`svc-context-sweep:${model}-${format}:${depth}`);
      const open = new Map<string, BenchEngine>();
      try {
        for (const spec of specs) {
          try {
            const engine = await spec.open(artifact.path, contextTokens);
            open.set(spec.id, engine);
            dr.loadMs[spec.id] = engine.load?.ms ?? NaN;
            // Warm-up: weights paged in, thread pools, both request shapes.
            await request(engine, prompts.take(o.shortTokens), 4);
            await request(engine, prompts.take(Math.min(512, depth)), 2);
          } catch (err) {
            dr.engines[spec.id] = { error: (err as Error).message };
            log(`    ${spec.label} failed: ${(err as Error).message.split('\n')[0]}`);
          }
        }
        for (let rep = 0; rep < o.reps; rep++) {
          const deep = prompts.take(depth);
          const short = prompts.take(o.shortTokens);
          const order = rep % 2 === 0 ? specs : [...specs].reverse();
          for (const spec of order) {
            const engine = open.get(spec.id);
            remaining.splice(remaining.indexOf(depth), 1);
            done++;
            if (!engine) continue;
            try {
              const d = await request(engine, deep, o.decodeTokens);
              const s = await request(engine, short, o.decodeTokens);
              const sample: Sample = {
                engine: spec.id,
                depth,
                rep,
                ttftMs: d.firstMs,
                endMs: d.endMs,
                prefillTokS: rate(depth, d.firstMs),
                decodeTokS: rate(o.decodeTokens - 1, d.endMs - d.firstMs),
                shortTtftMs: s.firstMs,
                shortEndMs: s.endMs,
                shortDecodeTokS: rate(o.decodeTokens - 1, s.endMs - s.firstMs),
                ...(d.server
                  ? {
                      serverPrefillTokS: rate(d.server.promptTokens, d.server.promptMs),
                      serverDecodeTokS: rate(d.server.predictedTokens - 1, d.server.predictedMs),
                    }
                  : {}),
              };
              dr.samples.push(sample);
              eta.add(sample);
              const left = remaining.reduce((a, dd) => a + eta.requestMs(dd), 0);
              log(
                `  [${done}/${turns}] ${spec.label} rep ${rep + 1}: prefill ${sample.prefillTokS.toFixed(1)} tok/s ` +
                  `(TTFT ${(sample.ttftMs / 1000).toFixed(2)} s), decode ${sample.decodeTokS.toFixed(1)} tok/s, ` +
                  `short decode ${sample.shortDecodeTokS.toFixed(1)} tok/s; elapsed ${minutes(performance.now() - t0)}, ` +
                  `ETA ~${minutes(left)}`,
              );
            } catch (err) {
              dr.engines[spec.id] = { error: (err as Error).message };
              log(`    ${spec.label} failed: ${(err as Error).message.split('\n')[0]}`);
              await engine.close().catch(() => undefined);
              open.delete(spec.id);
            }
          }
        }
      } finally {
        for (const engine of open.values()) await engine.close().catch((err: Error) => log(`    close failed: ${err.message}`));
      }
      for (const spec of specs) {
        if (dr.engines[spec.id]) continue;
        const ss = dr.samples.filter((s) => s.engine === spec.id);
        const m = (f: (s: Sample) => number) => median(ss.map(f));
        const ttftMs = m((s) => s.ttftMs);
        dr.engines[spec.id] = {
          reps: ss.length,
          ttftMs,
          prefillTokS: rate(depth, ttftMs),
          decodeTokS: rate(
            o.decodeTokens - 1,
            m((s) => s.endMs - s.ttftMs),
          ),
          shortDecodeTokS: rate(
            o.decodeTokens - 1,
            m((s) => s.shortEndMs - s.shortTtftMs),
          ),
          ...(ss.every((s) => s.serverPrefillTokS !== undefined) && ss.length
            ? { serverPrefillTokS: m((s) => s.serverPrefillTokS!), serverDecodeTokS: m((s) => s.serverDecodeTokS!) }
            : {}),
        };
      }
      write();
    }
    for (const table of formatCheckpoint(cp, specs, o, bandwidth)) {
      tables.push(table);
      process.stdout.write(`\n${table}\n`);
    }
  }
  write();
  log(`\nwrote ${o.out} and ${o.out.replace(/\.json$/, '.md')} (${minutes(performance.now() - t0)})`);
}

const isResult = (r: EngineDepthResult | { error: string } | undefined): r is EngineDepthResult => r !== undefined && !('error' in r);

function fmt(v: number | undefined, digits = 1): string {
  return v !== undefined && Number.isFinite(v) ? v.toFixed(digits) : 'n/a';
}

function ratioCell(a: number | undefined, b: number | undefined, target: number | undefined, suffix = '×'): string {
  if (a === undefined || b === undefined) return '—';
  const r = a / b;
  if (!Number.isFinite(r)) return 'n/a';
  const met = target === undefined ? '' : r >= target ? ' ✓' : ' ✗';
  return `${r.toFixed(2)}${suffix}${met}`;
}

/** One table per svc variant: depth × {prefill, decode} × {svc, llama.cpp, ratio} and svc's decode at depth over its short-context decode. */
function formatCheckpoint(cp: CheckpointResult, specs: EngineSpec[], o: SweepOptions, bandwidth: Bandwidth): string[] {
  const llama = specs.find((s) => s.kind === 'llama.cpp');
  const svcs = specs.filter((s) => s.kind === 'svc');
  const variants = svcs.length ? svcs : llama ? [llama] : [];
  return variants.map((svc) => {
    const header = [
      'depth',
      `${svc.kind} prefill tok/s`,
      'llama.cpp prefill tok/s',
      'prefill ratio',
      `${svc.kind} decode tok/s`,
      'llama.cpp decode tok/s',
      'decode ratio',
      `${svc.kind} decode / short`,
    ];
    const body = cp.depths.map((d) => {
      const s = d.engines[svc.id];
      const l = llama && llama !== svc ? d.engines[llama.id] : undefined;
      const sv = isResult(s) ? s : undefined;
      const lv = isResult(l) ? l : undefined;
      const atTarget = d.depth >= TARGET_DEPTH;
      return [
        String(d.depth),
        s === undefined ? '—' : sv ? fmt(sv.prefillTokS) : 'error',
        l === undefined ? '—' : lv ? fmt(lv.prefillTokS) : 'error',
        ratioCell(sv?.prefillTokS, lv?.prefillTokS, atTarget ? PREFILL_RATIO_TARGET : undefined),
        s === undefined ? '—' : sv ? fmt(sv.decodeTokS) : 'error',
        l === undefined ? '—' : lv ? fmt(lv.decodeTokS) : 'error',
        ratioCell(sv?.decodeTokS, lv?.decodeTokS, undefined),
        ratioCell(sv?.decodeTokS, sv?.shortDecodeTokS, atTarget ? DEPTH_DECODE_TARGET : undefined, ''),
      ];
    });
    const widths = header.map((_, i) => Math.max(...[header, ...body].map((r) => r[i].length)));
    const row = (cells: string[]) => `| ${cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]) : c.padStart(widths[i]))).join(' | ')} |`;
    const shortOf = (id: string) => {
      const xs = cp.depths.map((d) => d.engines[id]).filter(isResult);
      return xs.length ? median(xs.map((x) => x.shortDecodeTokS)) : NaN;
    };
    const shortLine = (spec: EngineSpec, target: boolean) => {
      const v = shortOf(spec.id);
      const pct = v / cp.rooflineTokS;
      const met = target && Number.isFinite(pct) ? (pct >= ROOFLINE_TARGET ? ' ✓' : ' ✗') : '';
      return `${spec.label} ${fmt(v)} tok/s = ${Number.isFinite(pct) ? (100 * pct).toFixed(0) : 'n/a'}%${met}`;
    };
    const lines = [
      `### ${cp.model} ${cp.format.toUpperCase()}: ${svc.label}${llama && llama !== svc ? ` vs ${llama.label}` : ''}`,
      '',
      `${o.threads} threads; prompt of D tokens then ${o.decodeTokens} tokens, greedy; prefill = D / TTFT (client-timed), ` +
        `decode = ${o.decodeTokens - 1} / (end − TTFT); medians of ${o.reps} rep(s), engines alternating.`,
      '',
      row(header),
      `|${widths.map((w, i) => (i === 0 ? '-'.repeat(w + 2) : `${'-'.repeat(w + 1)}:`)).join('|')}|`,
      ...body.map(row),
      '',
      `Short-context decode (${o.shortTokens}-token prompt, median over the depths' servers) against the roofline ` +
        `${cp.rooflineTokS.toFixed(1)} tok/s (${(cp.weightBytes / 2 ** 30).toFixed(2)} GiB per token at ${bandwidth.gbPerS.toFixed(1)} GB/s; ` +
        `target ≥ ${(100 * ROOFLINE_TARGET).toFixed(0)}%): ${[svc, ...(llama && llama !== svc ? [llama] : [])].map((s) => shortLine(s, s === svc)).join('; ')}.`,
      `Targets at ${TARGET_DEPTH}: prefill ratio ≥ ${PREFILL_RATIO_TARGET.toFixed(1)}×, decode / short ≥ ${DEPTH_DECODE_TARGET.toFixed(2)}.`,
    ];
    if (llama && llama !== svc) {
      const own = cp.depths
        .map((d) => ({ depth: d.depth, r: d.engines[llama.id] }))
        .filter((x): x is { depth: number; r: EngineDepthResult } => isResult(x.r) && x.r.serverPrefillTokS !== undefined);
      if (own.length)
        lines.push(
          `llama-server's own timings, prefill / decode tok/s (prompt_n / prompt_ms, (predicted_n − 1) / predicted_ms): ` +
            own.map((x) => `${x.depth}: ${fmt(x.r.serverPrefillTokS)} / ${fmt(x.r.serverDecodeTokS)}`).join(', ') +
            '.',
        );
    }
    for (const d of cp.depths)
      for (const spec of specs) {
        const r = d.engines[spec.id];
        if (r && !isResult(r)) lines.push(`${spec.label} at ${d.depth} failed: ${r.error.split('\n')[0]}`);
      }
    return lines.join('\n');
  });
}

function writeResults(
  o: SweepOptions,
  specs: EngineSpec[],
  bandwidth: Bandwidth,
  llamaCpp: string | null,
  results: CheckpointResult[],
): void {
  const summary = {
    generatedAt: new Date().toISOString(),
    settings: {
      depths: o.depths,
      reps: o.reps,
      decodeTokens: o.decodeTokens,
      shortTokens: o.shortTokens,
      threads: o.threads,
      engines: specs.map((s) => s.id),
      svcArgs: ['--max-batch-size', '1', ...SVC_SWEEP_ARGS, ...o.svcArgs],
      svcKv: o.svcKv,
      llamaArgs: [...LLAMA_SWEEP_ARGS, ...o.llamaArgs],
      method:
        'prefill = depth / TTFT, TTFT = request start → first streamed frame with output (client-timed, both engines); ' +
        'decode = (N − 1) / (end − TTFT); medians over reps of the latencies',
    },
    machine: machineInfo(),
    bandwidth,
    llamaCpp,
    checkpoints: results,
  };
  mkdirSync(dirname(o.out), { recursive: true });
  writeFileSync(o.out, `${JSON.stringify(summary, null, 2)}\n`);
  const tables = results.flatMap((cp) => (cp.depths.length ? formatCheckpoint(cp, specs, o, bandwidth) : []));
  writeFileSync(o.out.replace(/\.json$/, '.md'), `${tables.join('\n\n')}\n`);
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  runContextSweep(process.argv.slice(2)).catch((err: Error) => {
    process.stderr.write(`context sweep: ${err.message}\n`);
    process.exitCode = 1;
  });
}
