// Two-rank expert parallelism, one rank against two: tokens per second and the bytes the link
// exchanges per token, rows sent as f32 and as bf16.
//
//   node dist/bench/expert-parallel.js [--model PATH | --checkpoint qwen3moe-q8_0] [--prompt 128] [--tokens 32] [--threads N]
//   node dist/bench/expert-parallel.js --synthetic [--layers 8] [--experts 32] [--hidden 512] [--inter 384] [--k 4]
//                                      [--dtype q8_0] [--batches 1,8,128] [--reps 20] [--threads N]
//
// Model mode (a mixture-of-experts checkpoint; the default once this build runs one): `svc serve`
// alone, then the head and the expert worker (`--rank 1`) as two processes on loopback; prefill
// and decode speed from a prompt of --prompt token ids and --tokens greedy tokens, bytes per token
// from the head's /metrics (svc_expert_parallel_bytes_total) around each request.
//
// Synthetic mode (no MoE model needed: the transport and the experts alone): L random MoE layers;
// one rank runs ops.moe over every expert of each layer; two ranks run the head's half here (this
// process) while a worker process (bench/expert-parallel-worker.ts) computes the other half,
// through the real link thread and socket. Rows per second through the L layers, and bytes per row.
//
// Each process gets --threads kernel threads (default: the cores / 2, so both ranks fit the machine
// at once). On one machine the ranks share its cores and memory bandwidth: the two-rank figures
// here measure the protocol's cost, not the speed-up of two machines.
import { spawn, type ChildProcess } from 'node:child_process';
import { availableParallelism } from 'node:os';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { nativeOps, setNumThreads } from '../src/kernels/index.js';
import { ARCHITECTURES, expertRange } from '../src/model/architectures/index.js';
import { HeadLink, readStatus } from '../src/engine/expert-parallel/index.js';
import type { RowsDtype } from '../src/engine/expert-parallel/protocol.js';
import { randomExperts, randomRouting, rng, shardOf, type ExpertSetShape } from './moe-experts.js';
import { ensureCheckpoint } from './gen-checkpoints.js';
import { SHAPE_IDS } from './shapes.js';
import { freePort, OutputTail, stopServer } from './server-process.js';

const HERE = dirname(fileURLToPath(import.meta.url));
const REPO_ROOT = resolve(HERE, '..', '..');
const BIN = join(REPO_ROOT, 'bin', 'svc.js');

function arg(name: string, fallback: string): string {
  const i = process.argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : fallback;
}
const flag = (name: string) => process.argv.includes(`--${name}`);
const threads = Number(arg('threads', String(Math.max(1, Math.floor(availableParallelism() / 2)))));

const fmt = (n: number, digits = 1) => (Number.isFinite(n) ? n.toFixed(digits) : '—');

// ---- synthetic: the layers alone ----

async function synthetic(): Promise<void> {
  const shape: ExpertSetShape = {
    numLayers: Number(arg('layers', '8')),
    numExperts: Number(arg('experts', '32')),
    hidden: Number(arg('hidden', '512')),
    inter: Number(arg('inter', '384')),
    dtype: arg('dtype', 'q8_0') as 'f32' | 'q8_0',
    seed: 1,
  };
  const k = Number(arg('k', '4'));
  const batches = arg('batches', '1,8,128').split(',').map(Number);
  const reps = Number(arg('reps', '20'));
  setNumThreads(threads);
  const all = randomExperts(shape, nativeOps);
  const local = shardOf(all, expertRange(shape.numExperts, { rank: 0, worldSize: 2 }));
  const identity = { hash: 'synthetic', summary: `synthetic MoE ${JSON.stringify(shape)}` };
  console.log(
    `Synthetic MoE: ${shape.numLayers} layers × ${shape.numExperts} experts (hidden ${shape.hidden}, moe inter ${shape.inter}, ${shape.dtype}), ` +
      `top-${k} routing; ${threads} kernel threads per rank; ${reps} reps\n`,
  );
  console.log(
    '| rows per step | 1 rank rows/s | 2 ranks f32 rows/s | bytes/row f32 (sent + received) | 2 ranks bf16 rows/s | bytes/row bf16 |',
  );
  console.log('|---|---|---|---|---|---|');
  const results = new Map<number, string[]>();
  for (const n of batches) {
    const rand = rng(n);
    const steps = Array.from({ length: shape.numLayers }, () => randomRouting(rand, n, k, shape.numExperts, shape.hidden));
    const out = new Float32Array(n * shape.hidden);
    const t0 = performance.now();
    for (let r = 0; r < reps; r++)
      for (let l = 0; l < shape.numLayers; l++) nativeOps.moe(steps[l].x, n, all[l], steps[l].ids, steps[l].weights, k, out);
    results.set(n, [fmt((n * reps * 1000) / (performance.now() - t0), 0)]);
  }
  for (const dtype of ['f32', 'bf16'] as RowsDtype[]) {
    const port = await freePort();
    const link = new HeadLink({ worldSize: 2, host: '127.0.0.1', port, identity, replyTimeoutMs: 120_000, rowsDtype: dtype });
    const worker = spawn(process.execPath, [join(HERE, 'expert-parallel-worker.js'), JSON.stringify({ port, shape, identity })], {
      stdio: ['ignore', 'ignore', 'pipe'],
      env: { ...process.env, SVC_THREADS: String(threads) },
    });
    const tail = new OutputTail();
    worker.stderr!.on('data', (d) => tail.add(String(d)));
    try {
      link.waitForPeer(120_000);
    } catch (err) {
      throw new Error(`${(err as Error).message}\n${tail}`, { cause: err });
    }
    const remote = link.remoteExperts(shape.numExperts, shape.hidden);
    for (const n of batches) {
      const rand = rng(n);
      const steps = Array.from({ length: shape.numLayers }, () => randomRouting(rand, n, k, shape.numExperts, shape.hidden));
      const out = new Float32Array(n * shape.hidden);
      const before = readStatus(link.control, 2, '');
      const t0 = performance.now();
      for (let r = 0; r < reps; r++)
        for (let l = 0; l < shape.numLayers; l++) {
          const s = steps[l];
          remote.start(l, s.x, n, s.ids, s.weights, k);
          nativeOps.moe(s.x, n, local[l], s.ids, s.weights, k, out);
          remote.finish(out, n);
        }
      const ms = performance.now() - t0;
      const after = readStatus(link.control, 2, '');
      const bytes = after.bytesSent - before.bytesSent + (after.bytesReceived - before.bytesReceived);
      results.get(n)!.push(fmt((n * reps * 1000) / ms, 0), fmt(bytes / (n * reps), 0));
    }
    await stopServer(worker as ChildProcess);
    await link.close();
  }
  for (const n of batches) console.log(`| ${n} | ${results.get(n)!.join(' | ')} |`);
  console.log(`\nbytes/row: over all ${shape.numLayers} layers, i.e. per token through the MoE part of the model.`);
}

// ---- a MoE model over HTTP ----

interface Server {
  child: ChildProcess;
  tail: OutputTail;
  ready: Promise<void>;
}

function svc(args: string[], readyAt: RegExp, env: NodeJS.ProcessEnv = {}): Server {
  const child = spawn(process.execPath, [BIN, ...args], {
    stdio: ['ignore', 'ignore', 'pipe'],
    env: { ...process.env, SVC_THREADS: String(threads), ...env },
  });
  const tail = new OutputTail();
  const ready = new Promise<void>((ok, fail) => {
    child.stderr!.on('data', (d) => {
      tail.add(String(d));
      if (readyAt.test(tail.toString())) ok();
    });
    child.once('exit', (code) => fail(new Error(`svc exited (${code}) before it was ready:\n${tail}`)));
  });
  return { child, tail, ready };
}

async function complete(base: string, prompt: number[], maxTokens: number): Promise<number> {
  const t0 = performance.now();
  const res = await fetch(`${base}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt, max_tokens: maxTokens, temperature: 0, ignore_eos: true }),
  });
  if (res.status !== 200) throw new Error(`completion: ${res.status} ${await res.text()}`);
  await res.json();
  return performance.now() - t0;
}

async function linkBytes(base: string): Promise<number> {
  const text = await (await fetch(`${base}/metrics`)).text();
  let total = 0;
  for (const m of text.matchAll(/^svc_expert_parallel_bytes_total\{direction="\w+"\} (\d+)/gm)) total += Number(m[1]);
  return total;
}

async function modelBench(model: string): Promise<void> {
  const promptLen = Number(arg('prompt', '128'));
  const tokens = Number(arg('tokens', '32'));
  const prompt = Array.from({ length: promptLen }, (_, i) => 1000 + ((i * 7919) % 5000));
  console.log(`Model ${model}: prompt ${promptLen} tokens, ${tokens} greedy tokens; ${threads} kernel threads per process\n`);
  console.log('| ranks | rows | prefill tok/s | decode tok/s | bytes per prompt token | bytes per generated token |');
  console.log('|---|---|---|---|---|---|');
  for (const [ranks, dtype] of [
    [1, 'f32'],
    [2, 'f32'],
    [2, 'bf16'],
  ] as [number, RowsDtype][]) {
    const port = await freePort();
    const masterPort = await freePort();
    const common = ['serve', '--model-from-path', model, '--max-seq-len', String(promptLen + tokens + 16)];
    const env = { SVC_EP_ROWS_DTYPE: dtype };
    const head = svc(
      [...common, '--port', String(port), ...(ranks === 2 ? ['--world-size', '2', '--master-port', String(masterPort)] : [])],
      /^Listening on /m,
      env,
    );
    const worker =
      ranks === 2
        ? svc(
            [...common, '--rank', '1', '--world-size', '2', '--master-addr', '127.0.0.1', '--master-port', String(masterPort)],
            /connected to the head/,
          )
        : null;
    try {
      await Promise.all([head.ready, worker?.ready]);
      const base = `http://127.0.0.1:${port}`;
      await complete(base, prompt, 2); // warm-up
      const b0 = ranks === 2 ? await linkBytes(base) : 0;
      const prefillMs = await complete(base, prompt, 1);
      const b1 = ranks === 2 ? await linkBytes(base) : 0;
      const totalMs = await complete(base, prompt, tokens);
      const b2 = ranks === 2 ? await linkBytes(base) : 0;
      const decodeMs = totalMs - prefillMs;
      const perPrompt = ranks === 2 ? fmt((b1 - b0) / promptLen, 0) : '—';
      const perToken = ranks === 2 ? fmt((b2 - b1 - (b1 - b0)) / (tokens - 1), 0) : '—';
      console.log(
        `| ${ranks} | ${ranks === 2 ? dtype : '—'} | ${fmt((promptLen * 1000) / prefillMs)} | ${fmt(((tokens - 1) * 1000) / decodeMs)} | ${perPrompt} | ${perToken} |`,
      );
    } finally {
      await stopServer(head.child);
      if (worker) await stopServer(worker.child);
    }
  }
}

async function main(): Promise<void> {
  if (flag('synthetic')) return synthetic();
  let model = process.argv.includes('--model') ? arg('model', '') : '';
  if (model === '') {
    const moe = ARCHITECTURES.some((a) => a.name === 'qwen3_moe') && SHAPE_IDS.includes('qwen3moe');
    if (!moe) {
      console.log('No mixture-of-experts architecture or qwen3moe bench shape in this build yet: the synthetic layers instead.\n');
      return synthetic();
    }
    model = ensureCheckpoint(arg('checkpoint', 'qwen3moe-q8_0'), { small: flag('small') }).path;
  }
  await modelBench(model);
}

await main();
