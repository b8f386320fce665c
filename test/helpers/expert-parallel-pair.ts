// Two real `svc serve` processes on loopback, as a user starts two-rank expert parallelism: the head
// (rank 0: HTTP, scheduler, attention, experts [0, E/2)) and the expert worker (rank 1: experts
// [E/2, E), no HTTP), meeting at a free --master-port. Also where the end-to-end tests find a
// mixture-of-experts checkpoint: the benchmark generator's small `qwen3moe` shape, once both it and
// the architecture exist in this build (until then: a reason to skip).
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ARCHITECTURES } from '../../src/model/architectures/index.js';
import { SHAPE_IDS } from '../../bench/shapes.js';
import { ensureCheckpoint } from '../../bench/gen-checkpoints.js';
import { freePort, runSvc } from './svc-cli.js';

export type SvcProcess = ReturnType<typeof runSvc>;

/** The head's readiness marker (it is logged only once rank 1 has connected) and the worker's. */
export const HEAD_READY = /^Listening on /m;
export const WORKER_READY = /connected to the head at /;

export const MOE_SHAPE = 'qwen3moe';
export const MOE_ARCHITECTURE = 'qwen3_moe';

let generated: Map<string, string> | null = null;

/**
 * The small generated MoE checkpoint in `format` (q8_0, bf16 …), made once per process in a
 * temporary cache; or `{ skip }` saying what this build lacks.
 */
export function moeCheckpoint(format = 'q8_0'): { path: string } | { skip: string } {
  if (!ARCHITECTURES.some((a) => a.name === MOE_ARCHITECTURE))
    return { skip: `no ${MOE_ARCHITECTURE} architecture in this build yet (src/model/architectures/moe.ts)` };
  if (!SHAPE_IDS.includes(MOE_SHAPE)) return { skip: `the benchmark generator has no ${MOE_SHAPE} shape yet (bench/shapes.ts)` };
  generated ??= new Map();
  let path = generated.get(format);
  if (path === undefined) {
    const cacheDir = mkdtempSync(join(tmpdir(), 'svc-ep-moe-'));
    path = ensureCheckpoint(`${MOE_SHAPE}-${format}`, { small: true, cacheDir }).path;
    generated.set(format, path);
  }
  return { path };
}

export interface HeadProcess {
  svc: SvcProcess;
  port: number;
  masterPort: number;
  base: string;
}

/** The head (rank 0) on free ports; ready (HEAD_READY) only once a worker has connected. */
export async function startHead(model: string, args: string[] = [], env?: NodeJS.ProcessEnv): Promise<HeadProcess> {
  const port = await freePort();
  const masterPort = await freePort();
  const svc = runSvc(
    ['serve', '--model-from-path', model, '--port', String(port), '--world-size', '2', '--master-port', String(masterPort), ...args],
    HEAD_READY,
    env,
  );
  return { svc, port, masterPort, base: `http://127.0.0.1:${port}` };
}

/** The expert worker (rank 1) of the head at 127.0.0.1:masterPort; ready at WORKER_READY. */
export function startWorker(model: string, masterPort: number, args: string[] = [], env?: NodeJS.ProcessEnv): SvcProcess {
  return runSvc(
    [
      'serve',
      '--model-from-path',
      model,
      '--rank',
      '1',
      '--world-size',
      '2',
      '--master-addr',
      '127.0.0.1',
      '--master-port',
      String(masterPort),
      ...args,
    ],
    WORKER_READY,
    env,
  );
}

/** Head and worker, both ready; stop() ends both (SIGTERM) and resolves with their exit codes. */
export async function startPair(model: string, headArgs: string[] = [], env?: NodeJS.ProcessEnv) {
  const head = await startHead(model, headArgs, env);
  const worker = startWorker(model, head.masterPort, [], env);
  await Promise.all([head.svc.ready, worker.ready]);
  return {
    head,
    worker,
    async stop(): Promise<[number | null, number | null]> {
      head.svc.child.kill('SIGTERM');
      worker.child.kill('SIGTERM');
      return Promise.all([head.svc.exited, worker.exited]);
    },
  };
}

/** A greedy completion's text and token count (temperature 0). */
export async function greedy(
  base: string,
  prompt: string,
  maxTokens: number,
): Promise<{ status: number; text: string; tokens: number; body: unknown }> {
  const res = await fetch(`${base}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt, max_tokens: maxTokens, temperature: 0 }),
  });
  const body = (await res.json()) as { choices?: { text: string }[]; usage?: { completion_tokens: number } };
  return { status: res.status, text: body.choices?.[0]?.text ?? '', tokens: body.usage?.completion_tokens ?? 0, body };
}

/** One series' value from /metrics text (`name{labels} value`). */
export function metricValue(text: string, series: string): number {
  const line = text.split('\n').find((l) => l.startsWith(`${series} `));
  return line === undefined ? NaN : Number(line.slice(series.length + 1));
}
