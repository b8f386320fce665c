// The head's HTTP side of expert parallelism (--world-size 2), over a scripted engine whose peer
// state the test sets: /health reports `expertParallel` and turns 503 `degraded` while rank 1 is
// not connected; generations are refused with a retriable 503 `expert_rank_unavailable` then; the
// link's byte counters and peer state are in /metrics; a hot swap is refused. (The real engine and
// link: test/unit/expert-parallel.test.ts and test/e2e/expert-parallel.test.ts.)
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { pino } from 'pino';
import { EngineAdmissionError, type ExpertParallelStatus, type GenerationHandle, type GenerationRequest } from '../../src/engine/types.js';
import { DEMO_MODEL_ID, Library } from '../../src/model/library.js';
import { Lifecycle } from '../../src/server/lifecycle.js';
import { ModelSwitcher } from '../../src/server/model-swap.js';
import type { LoadRequest } from '../../src/server/model-load.js';
import { ScriptedEngine, scriptedApp, tinyTokenizer, IM_END } from '../helpers/scripted-app.js';
import { TINY_CHAT } from '../helpers/paths.js';

class TwoRankEngine extends ScriptedEngine {
  status: ExpertParallelStatus = {
    worldSize: 2,
    rank: 0,
    endpoint: '127.0.0.1:29500',
    peers: 'connected',
    bytesSent: 1234,
    bytesReceived: 5678,
    requests: 3,
    rowsSent: 9,
    connections: 1,
  };

  override submit(req: GenerationRequest): GenerationHandle {
    // As EngineClient does: no generation while the worker rank is away.
    if (this.status.peers !== 'connected')
      throw new EngineAdmissionError(
        'peer_unavailable',
        `expert-parallel rank 1 of 2 was lost; the head waits for it on ${this.status.endpoint}`,
      );
    return super.submit(req);
  }

  expertParallel(): ExpertParallelStatus {
    return { ...this.status };
  }
}

const chat = { messages: [{ role: 'user', content: 'Capital of France?' }], max_tokens: 8 };

test('/health and generations follow the worker rank: ok while connected, 503 degraded and 503 expert_rank_unavailable while lost', async () => {
  const engine = new TwoRankEngine({ ids: [...tinyTokenizer.encode('Paris.'), IM_END] });
  const { app } = scriptedApp({ engine, worldSize: 2 });
  const health = await app.inject({ method: 'GET', url: '/health' });
  assert.equal(health.statusCode, 200);
  assert.deepEqual(health.json(), { status: 'ok', state: 'ready', expertParallel: { worldSize: 2, rank: 0, peers: 'connected' } });
  assert.equal((await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: chat })).statusCode, 200);

  engine.status.peers = 'lost';
  const lost = await app.inject({ method: 'GET', url: '/health' });
  assert.equal(lost.statusCode, 503);
  assert.equal(lost.headers['retry-after'], '5');
  const body = lost.json() as { status: string; state: string; expertParallel: unknown; error: { code: string; message: string } };
  assert.equal(body.status, 'degraded');
  assert.equal(body.state, 'ready');
  assert.deepEqual(body.expertParallel, { worldSize: 2, rank: 0, peers: 'lost' });
  assert.equal(body.error.code, 'expert_rank_unavailable');
  assert.match(body.error.message, /rank 1 of 2 was lost/);

  const refused = await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: chat });
  assert.equal(refused.statusCode, 503);
  assert.equal(refused.headers['retry-after'], '5');
  const err = (refused.json() as { error: { code: string; message: string } }).error;
  assert.equal(err.code, 'expert_rank_unavailable');
  assert.match(
    err.message,
    /^The model cannot run right now: expert-parallel rank 1 of 2 was lost; the head waits for it on 127\.0\.0\.1:29500\. Retry/,
  );
  // The other protocols too.
  const messages = await app.inject({
    method: 'POST',
    url: '/v1/messages',
    payload: { model: 'm', max_tokens: 8, messages: [{ role: 'user', content: 'Hi' }] },
  });
  assert.equal(messages.statusCode, 503);

  engine.status.peers = 'connected';
  assert.equal((await app.inject({ method: 'GET', url: '/health' })).statusCode, 200);
  assert.equal((await app.inject({ method: 'POST', url: '/v1/chat/completions', payload: chat })).statusCode, 200);
});

test('/health while the head is still loading (and waiting for rank 1): 503 model_not_loaded, peers waiting', async () => {
  const { app } = scriptedApp({ worldSize: 2, ready: false });
  const res = await app.inject({ method: 'GET', url: '/health' });
  assert.equal(res.statusCode, 503);
  const body = res.json() as { state: string; expertParallel: unknown; error: { code: string } };
  assert.equal(body.error.code, 'model_not_loaded');
  assert.equal(body.state, 'starting');
  assert.deepEqual(body.expertParallel, { worldSize: 2, rank: 0, peers: 'waiting' });
});

test('one rank: /health and /metrics have no expert-parallel parts', async () => {
  const { app } = scriptedApp();
  assert.deepEqual((await app.inject({ method: 'GET', url: '/health' })).json(), { status: 'ok', state: 'ready' });
  assert.doesNotMatch((await app.inject({ method: 'GET', url: '/metrics' })).body, /svc_expert_parallel/);
});

test('/metrics: bytes each way, rows sent and the peer state of the link', async () => {
  const engine = new TwoRankEngine({ ids: [IM_END] });
  const { app } = scriptedApp({ engine, worldSize: 2 });
  let text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  assert.match(text, /^svc_expert_parallel_bytes_total\{direction="sent"\} 1234$/m);
  assert.match(text, /^svc_expert_parallel_bytes_total\{direction="received"\} 5678$/m);
  assert.match(text, /^svc_expert_parallel_rows_total 9$/m);
  assert.match(text, /^svc_expert_parallel_peer_connected 1$/m);
  engine.status.peers = 'lost';
  text = (await app.inject({ method: 'GET', url: '/metrics' })).body;
  assert.match(text, /^svc_expert_parallel_peer_connected 0$/m);
});

test('a hot swap is refused on a two-rank head, before anything is released', () => {
  const library = new Library('/nonexistent-hub-cache');
  library.add(TINY_CHAT);
  const switcher = new ModelSwitcher({
    lifecycle: new Lifecycle('starting', 2),
    library,
    log: pino({ level: 'silent' }),
    recipeSettings: () => ({ engine: {} as LoadRequest['engine'], runtime: {} as LoadRequest['runtime'], warnings: [] }),
  });
  assert.throws(
    () => switcher.plan(DEMO_MODEL_ID),
    (err: { status: number; code: string; message: string }) =>
      err.status === 409 &&
      err.code === 'model_refused' &&
      /runs with --world-size 2 \(expert parallelism\); a hot swap is single-node/.test(err.message),
  );
  // On one rank, a recipe that would need two is refused too.
  const single = new ModelSwitcher({
    lifecycle: new Lifecycle('starting', 1),
    library,
    log: pino({ level: 'silent' }),
    recipeSettings: () => ({
      engine: { expertParallel: { worldSize: 2, host: '127.0.0.1', port: 29500 } } as LoadRequest['engine'],
      runtime: {} as LoadRequest['runtime'],
      warnings: [],
    }),
  });
  assert.throws(() => single.plan(DEMO_MODEL_ID), /runs expert parallelism over several ranks; a hot swap is single-node/);
});
