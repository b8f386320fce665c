// The swap path (src/server/model-swap.ts) with a scripted loader in place of the engine worker:
// the order of drain, release and load; restore after a failed load; one swap at a time; the
// progress and failure GET /admin/state reports. The real engine runs it in
// test/e2e/model-library.test.ts.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import type { ModelRuntime } from '../../src/chat/model-runtime.js';
import type { RunningEngine } from '../../src/engine/engine-client.js';
import { ApiError } from '../../src/common/api-error.js';
import { DEMO_MODEL_ID, Library } from '../../src/model/library.js';
import type { LoadProgress } from '../../src/model/types.js';
import { Lifecycle } from '../../src/server/lifecycle.js';
import type { LoadedModel, LoadRequest } from '../../src/server/model-load.js';
import { ModelSwitcher, type RecipeSettings } from '../../src/server/model-swap.js';
import { TINY_CHAT } from '../helpers/paths.js';

const ok: RecipeSettings = { engine: {} as LoadRequest['engine'], runtime: {} as LoadRequest['runtime'], warnings: [] };

/** A loader that records what happens and can be held, failed, or made to report progress per model. */
function scripted() {
  const events: string[] = [];
  const fail = new Set<string>();
  const gates = new Map<string, Promise<void>>();
  const progress = new Map<string, LoadProgress>();
  const load = async (request: LoadRequest, _log: unknown, onProgress?: (p: LoadProgress) => void): Promise<LoadedModel> => {
    const id = request.fallbackName;
    events.push(`load ${id}`);
    const p = progress.get(id);
    if (p) onProgress?.(p);
    await gates.get(id);
    if (fail.has(id)) throw new Error(`${id} does not fit`);
    const runtime = { modelName: id } as unknown as ModelRuntime;
    return { engine: {} as RunningEngine, runtime, modelName: id, source: request.source };
  };
  const unload = async (model: LoadedModel): Promise<void> => {
    events.push(`release ${model.modelName}`);
  };
  return { events, fail, gates, progress, load, unload };
}

function setup(settings: RecipeSettings = ok) {
  const library = new Library('/nonexistent-hub-cache');
  const tiny = library.add(TINY_CHAT).id;
  const lifecycle = new Lifecycle('no_model');
  const loader = scripted();
  const served: string[] = [];
  const switcher = new ModelSwitcher({
    lifecycle,
    library,
    log: pino({ level: 'silent' }),
    recipeSettings: () => settings,
    onServed: (name) => served.push(name),
    load: loader.load,
    unload: loader.unload,
  });
  return { switcher, lifecycle, loader, served, tiny };
}

function held(): { gate: Promise<void>; open: () => void } {
  let open = () => undefined as void;
  const gate = new Promise<void>((resolve) => (open = resolve));
  return { gate, open };
}

test('NoModelLoaded → Ready: the model loads and is served, the state says which', async () => {
  const { switcher, lifecycle, loader, served } = setup();
  assert.equal(switcher.state().state, 'no_model');
  await switcher.start(switcher.plan(DEMO_MODEL_ID));
  assert.equal(lifecycle.state, 'ready');
  assert.deepEqual(loader.events, [`load ${DEMO_MODEL_ID}`]);
  assert.deepEqual(served, [DEMO_MODEL_ID]);
  const state = switcher.state();
  assert.equal(state.model?.id, DEMO_MODEL_ID);
  assert.equal(state.model?.recipe, 'default');
  assert.equal(state.loading, null);
  assert.equal(state.lastError, null);
});

test('Ready → Loading → Ready: new requests get 503 at once, the running one finishes first, then release, then load', async () => {
  const { switcher, lifecycle, loader, tiny } = setup();
  await switcher.start(switcher.plan(DEMO_MODEL_ID));
  const inFlight = lifecycle.require();
  assert.equal((inFlight as unknown as { modelName: string }).modelName, DEMO_MODEL_ID);
  const swap = switcher.start(switcher.plan(tiny));
  assert.equal(lifecycle.state, 'loading');
  assert.throws(
    () => lifecycle.require(),
    (err: ApiError) => err.status === 503 && err.code === 'model_not_loaded',
  );
  await new Promise((r) => setTimeout(r, 20));
  assert.deepEqual(loader.events, [`load ${DEMO_MODEL_ID}`], 'nothing released while a request holds the old model');
  lifecycle.release();
  await swap;
  assert.deepEqual(loader.events, [`load ${DEMO_MODEL_ID}`, `release ${DEMO_MODEL_ID}`, `load ${tiny}`]);
  assert.equal(switcher.state().model?.id, tiny);
  assert.equal(lifecycle.state, 'ready');
});

test('one swap at a time: a second load while one runs is 409 swap_in_progress', async () => {
  const { switcher, loader, tiny } = setup();
  const { gate, open } = held();
  loader.gates.set(DEMO_MODEL_ID, gate);
  const first = switcher.start(switcher.plan(DEMO_MODEL_ID));
  assert.throws(
    () => switcher.start(switcher.plan(tiny)),
    (err: ApiError) => err.status === 409 && err.code === 'swap_in_progress',
  );
  assert.equal(switcher.pending, first);
  open();
  await first;
  assert.equal(switcher.pending, null);
  await switcher.start(switcher.plan(tiny));
  assert.equal(switcher.currentId, tiny);
});

test('progress while loading is reported by GET /admin/state, and cleared when the load ends', async () => {
  const { switcher, loader } = setup();
  const { gate, open } = held();
  loader.gates.set(DEMO_MODEL_ID, gate);
  loader.progress.set(DEMO_MODEL_ID, { tensors: 3, totalTensors: 10, bytes: 300, totalBytes: 1000 });
  const swap = switcher.start(switcher.plan(DEMO_MODEL_ID));
  await new Promise((r) => setTimeout(r, 10));
  assert.deepEqual(switcher.state().loading, { id: DEMO_MODEL_ID, tensors: 3, totalTensors: 10 });
  assert.equal(switcher.state().state, 'loading');
  open();
  await swap;
  assert.equal(switcher.state().loading, null);
});

test('a failed load restores the previous model and keeps the reason', async () => {
  const { switcher, lifecycle, loader, served, tiny } = setup();
  await switcher.start(switcher.plan(DEMO_MODEL_ID));
  loader.fail.add(tiny);
  await switcher.start(switcher.plan(tiny));
  assert.deepEqual(loader.events, [`load ${DEMO_MODEL_ID}`, `release ${DEMO_MODEL_ID}`, `load ${tiny}`, `load ${DEMO_MODEL_ID}`]);
  assert.equal(lifecycle.state, 'ready');
  assert.equal(switcher.state().model?.id, DEMO_MODEL_ID);
  assert.match(switcher.state().lastError ?? '', new RegExp(`loading ${tiny} failed: ${tiny} does not fit`));
  assert.deepEqual(served, [DEMO_MODEL_ID, DEMO_MODEL_ID]);
  // The next swap starts with a clean slate.
  loader.fail.clear();
  await switcher.start(switcher.plan(tiny));
  assert.equal(switcher.state().lastError, null);
});

test('a failed load with nothing to restore, or whose restore fails too, leaves NoModelLoaded with both reasons', async () => {
  const { switcher, lifecycle, loader, tiny } = setup();
  loader.fail.add(tiny);
  await switcher.start(switcher.plan(tiny));
  assert.equal(lifecycle.state, 'no_model');
  assert.deepEqual(loader.events, [`load ${tiny}`]);

  loader.fail.clear();
  await switcher.start(switcher.plan(DEMO_MODEL_ID));
  loader.fail.add(tiny);
  loader.fail.add(DEMO_MODEL_ID);
  await switcher.start(switcher.plan(tiny));
  assert.equal(lifecycle.state, 'no_model');
  assert.equal(switcher.state().model, null);
  assert.match(switcher.state().lastError ?? '', /failed: .*; restoring demo\/stories260K failed too: /);
});

test('refused before anything is released: unknown model or recipe (404), a recipe the CLI rejects (409)', async () => {
  const { switcher } = setup();
  assert.throws(
    () => switcher.plan('nobody/nothing'),
    (err: ApiError) => err.status === 404 && err.code === 'model_not_found',
  );
  assert.throws(
    () => switcher.plan(DEMO_MODEL_ID, 'fast'),
    (err: ApiError) => err.status === 404 && err.code === 'recipe_not_found',
  );
  const refusing = setup({ error: '--kv-cache-dtype: unknown value' });
  assert.throws(
    () => refusing.switcher.plan(DEMO_MODEL_ID),
    (err: ApiError) => err.status === 409 && err.code === 'model_refused' && /unknown value/.test(err.message),
  );
  assert.deepEqual(refusing.loader.events, []);
});

test('close() waits for a running swap, then releases the model', async () => {
  const { switcher, loader } = setup();
  const { gate, open } = held();
  loader.gates.set(DEMO_MODEL_ID, gate);
  void switcher.start(switcher.plan(DEMO_MODEL_ID));
  const closing = switcher.close();
  open();
  await closing;
  assert.deepEqual(loader.events, [`load ${DEMO_MODEL_ID}`, `release ${DEMO_MODEL_ID}`]);
  assert.equal(switcher.currentId, null);
});

test("a registry recipe's max-seq-len past the model's own context is cut to it, with a warning", () => {
  const library = new Library('/nonexistent-hub-cache');
  const seen: unknown[] = [];
  const switcher = new ModelSwitcher({
    lifecycle: new Lifecycle('no_model'),
    library,
    log: pino({ level: 'silent' }),
    recipeSettings: (flags) => (seen.push(flags), ok),
  });
  // The demo's registry recipe (llama family) says 8192; stories260K was trained for 2048.
  const entry = library.find(DEMO_MODEL_ID)!;
  assert.equal(entry.contextLength, 2048);
  assert.ok(Number(entry.recipes.find((r) => r.name === 'default')!.flags['max-seq-len']) > 2048);
  const plan = switcher.plan(DEMO_MODEL_ID);
  assert.equal((seen[0] as Record<string, unknown>)['max-seq-len'], 2048);
  assert.match(plan.warnings.join('\n'), /max-seq-len 8192 is past the model's own context; using 2048/);
  // svc-tiny-chat: config.json's max_position_embeddings.
  assert.equal(library.add(TINY_CHAT).contextLength, 4096);
});
