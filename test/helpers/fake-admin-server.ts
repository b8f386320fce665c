// TEST ONLY: a stand-in for the server's /admin/ JSON API (issue 15), so that the dashboard's
// browser test runs before the real one exists. It starts the real svc app in-process with the
// svc-tiny-chat engine already running but the lifecycle in `no_model` (chat answers 503
// model_not_loaded), and adds five fake routes: GET /admin/state, /admin/library, /admin/stats,
// POST /admin/load (fakes a tensor-by-tensor progress, then makes the running engine's runtime
// Ready), POST /admin/library. The library holds svc-tiny-chat and one model the "build cannot
// run" (its load is refused with 409 model_refused). Auth applies to the fake routes like to any
// other when `apiKeys` is given. Replace with the real server once /admin/ lands.
import { readdirSync, statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import { basename, join } from 'node:path';
import type { FastifyInstance } from 'fastify';
import { pino } from 'pino';
import { ApiError } from '../../src/common/api-error.js';
import { planChatOutput } from '../../src/chat/output-plan.js';
import type { ApiKeys } from '../../src/ops/auth.js';
import { startEngine, type RunningEngine } from '../../src/engine/engine-client.js';
import { buildApp } from '../../src/server/app.js';
import { Lifecycle } from '../../src/server/lifecycle.js';
import { closeModelRuntime, createModelRuntime } from '../../src/server/runtime.js';
import { TINY_CHAT } from './paths.js';
import { TINY_MAX_SEQ_LEN, TINY_OPTIONS } from './tiny-server.js';

interface LibraryEntry {
  id: string;
  path: string;
  source: 'hub' | 'path' | 'demo';
  architecture: string;
  sizeBytes: number;
  runnable: boolean;
  reason: string | null;
  recipes: { name: string; flags: Record<string, unknown> }[];
}

export const REFUSED_MODEL = 'mamba-130m';
export const REFUSED_REASON = "architecture 'MambaForCausalLM' is not supported by this build";
const TOTAL_TENSORS = 30;

function dirSize(dir: string): number {
  return readdirSync(dir).reduce((sum, name) => sum + statSync(join(dir, name)).size, 0);
}

export interface FakeAdminServer {
  base: string;
  app: FastifyInstance;
  lifecycle: Lifecycle;
  close(): Promise<void>;
}

export async function startFakeAdminServer(apiKeys: ApiKeys | null = null): Promise<FakeAdminServer> {
  const engine: RunningEngine = await startEngine({
    modelPath: TINY_CHAT,
    fastLoad: true,
    kvCacheDtype: 'bf16',
    maxSeqLen: TINY_MAX_SEQ_LEN,
    maxBatchSize: 8,
    maxPrefillTokens: 2048,
    maxNumSeqs: 16,
    gpuMemoryUtilization: 0.9,
    oomGuardMb: 0,
    blockSize: 16,
    enablePrefixCaching: false,
    swapSpaceBytes: 0,
  });
  const { runtime } = createModelRuntime(TINY_CHAT, 'svc-tiny-chat', engine, { disableThinking: false });
  await runtime.prompts?.ready();
  const lifecycle = new Lifecycle('no_model');
  const app = buildApp({ options: TINY_OPTIONS, logger: pino({ level: 'warn' }), lifecycle, chatOutput: planChatOutput, apiKeys });

  const startedAt = Date.now();
  let model: { id: string; path: string; recipe: string } | null = null;
  let loading: { id: string; tensors: number; totalTensors: number } | null = null;
  let timer: NodeJS.Timeout | null = null;
  const library: LibraryEntry[] = [
    {
      id: 'svc-tiny-chat',
      path: TINY_CHAT,
      source: 'path',
      architecture: 'Qwen3ForCausalLM',
      sizeBytes: dirSize(TINY_CHAT),
      runnable: true,
      reason: null,
      recipes: [{ name: 'default', flags: {} }],
    },
    {
      id: REFUSED_MODEL,
      path: '/models/mamba-130m',
      source: 'hub',
      architecture: 'MambaForCausalLM',
      sizeBytes: 270_000_000,
      runnable: false,
      reason: REFUSED_REASON,
      recipes: [{ name: 'default', flags: {} }],
    },
  ];
  const recent: { time: string; route: string; status: number; ms: number; tokens: number | null }[] = [];
  let requestsTotal = 0;

  // The request log the stats report (the admin routes' own polling left out).
  app.addHook('onResponse', async (request, reply) => {
    if (request.url.startsWith('/admin/') || !request.url.startsWith('/v1/')) return;
    requestsTotal++;
    recent.unshift({ time: new Date().toISOString(), route: request.url, status: reply.statusCode, ms: reply.elapsedTime, tokens: null });
    recent.length = Math.min(recent.length, 20);
  });

  await app.register(async (admin) => {
    admin.get('/admin/state', async () => ({
      state: lifecycle.state,
      model,
      uptimeSec: (Date.now() - startedAt) / 1000,
      loading,
      lastError: null,
    }));
    admin.get('/admin/library', async () => ({ models: library }));
    admin.get('/admin/stats', async () => {
      const s = lifecycle.state === 'ready' ? engine.stats() : null;
      return {
        running: s?.running ?? 0,
        waiting: s?.waiting ?? 0,
        kvUtilization: s && s.kvBlocksTotal > 0 ? s.kvBlocksUsed / s.kvBlocksTotal : 0,
        tokensPerSec: 0,
        requestsTotal,
        recent,
      };
    });
    admin.post<{ Body: { path?: unknown } }>('/admin/library', async (request) => {
      const path = request.body?.path;
      if (typeof path !== 'string' || path === '') throw new ApiError(400, '`path` must be a non-empty string.', { param: 'path' });
      let size: number;
      try {
        const st = statSync(path);
        size = st.isDirectory() ? dirSize(path) : st.size;
      } catch {
        throw new ApiError(400, `No model at ${path}.`, { param: 'path' });
      }
      const entry: LibraryEntry = {
        id: basename(path),
        path,
        source: 'path',
        architecture: 'unknown',
        sizeBytes: size,
        runnable: false,
        reason: 'not inspected (fake admin API)',
        recipes: [{ name: 'default', flags: {} }],
      };
      library.push(entry);
      return entry;
    });
    admin.post<{ Body: { model?: unknown; recipe?: unknown } }>('/admin/load', async (request, reply) => {
      const entry = library.find((e) => e.id === request.body?.model);
      if (entry === undefined)
        throw new ApiError(404, `No model '${String(request.body?.model)}' in the library.`, { code: 'model_not_found' });
      if (!entry.runnable) throw new ApiError(409, `Refused to load ${entry.id}: ${entry.reason}.`, { code: 'model_refused' });
      if (loading !== null) throw new ApiError(409, 'A model swap is already running.', { code: 'swap_in_progress' });
      const recipe = typeof request.body?.recipe === 'string' ? request.body.recipe : 'default';
      lifecycle.setLoading();
      model = null;
      loading = { id: entry.id, tensors: 0, totalTensors: TOTAL_TENSORS };
      timer = setInterval(() => {
        if (loading === null) return;
        loading.tensors++;
        if (loading.tensors < loading.totalTensors) return;
        clearInterval(timer!);
        loading = null;
        model = { id: entry.id, path: entry.path, recipe };
        lifecycle.setReady(runtime);
      }, 50);
      return reply.code(202).send({ state: 'loading' });
    });
  });

  await app.listen({ port: 0, host: '127.0.0.1' });
  const base = `http://127.0.0.1:${(app.server.address() as AddressInfo).port}`;
  return {
    base,
    app,
    lifecycle,
    async close() {
      if (timer !== null) clearInterval(timer);
      await app.close();
      await closeModelRuntime(runtime);
      await engine.shutdown();
    },
  };
}
