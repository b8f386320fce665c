// Two-rank expert parallelism with real processes on loopback: `svc serve MODEL --world-size 2` (the
// head) and `svc serve MODEL --rank 1 --world-size 2 --master-addr 127.0.0.1` (the expert worker).
// Greedy outputs equal one rank's; the worker dying fails in-flight requests clearly, the head keeps
// answering /health (degraded) and serves again once the worker is back; a worker with another
// checkpoint is refused on both sides; a dense model is refused at start-up on both ranks.
//
// The MoE tests need the mixture-of-experts architecture and the benchmark generator's `qwen3moe`
// shape (test/helpers/expert-parallel-pair.ts moeCheckpoint); they are skipped, saying so, until
// this build has both.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { setTimeout as delay } from 'node:timers/promises';
import { join } from 'node:path';
import { MODELS } from '../helpers/paths.js';
import { freePort, runSvc } from '../helpers/svc-cli.js';
import { greedy, metricValue, moeCheckpoint, startHead, startPair, startWorker, WORKER_READY } from '../helpers/expert-parallel-pair.js';

const DEMO = join(MODELS, 'stories260k-gguf', 'stories260K.gguf');
const moe = moeCheckpoint();
const skip = 'skip' in moe ? moe.skip : false;
const model = 'path' in moe ? moe.path : '';

const PROMPTS = ['The capital of France is', 'Once upon a time', 'def fibonacci(n):', '1, 2, 3, 4,'];
const MAX_TOKENS = 24;

test('a dense model is refused on both ranks with one clear line', async () => {
  const masterPort = await freePort();
  const head = runSvc([
    'serve',
    '--model-from-path',
    DEMO,
    '--port',
    String(await freePort()),
    '--world-size',
    '2',
    '--master-port',
    String(masterPort),
  ]);
  assert.equal(await head.exited, 1);
  assert.match(
    head.output().stderr,
    /^svc: --world-size 2: llama ".*" is not a mixture-of-experts model \(its config names no routed experts\)/m,
  );
  const worker = startWorker(DEMO, masterPort);
  assert.equal(await worker.exited, 1);
  const { stderr } = worker.output();
  assert.match(stderr, /^Rank 1 of 2: expert worker of the head at 127\.0\.0\.1:\d+; no HTTP listener/m);
  assert.match(stderr, /^svc: --rank 1: llama ".*" is not a mixture-of-experts model/m);
});

test('two ranks on loopback: greedy outputs identical to one rank; bytes exchanged per token', { skip }, async () => {
  const port = await freePort();
  const one = runSvc(['serve', '--model-from-path', model, '--port', String(port)], /^Listening on /m);
  const single: string[] = [];
  try {
    await one.ready;
    for (const p of PROMPTS) {
      const r = await greedy(`http://127.0.0.1:${port}`, p, MAX_TOKENS);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      single.push(r.text);
    }
  } finally {
    one.child.kill('SIGTERM');
    await one.exited;
  }

  const pair = await startPair(model);
  try {
    const { stderr } = pair.head.svc.output();
    assert.match(stderr, /Expert parallel: waiting for rank 1 of 2 on 127\.0\.0\.1:\d+/);
    assert.match(stderr, /Expert parallel: rank 1 connected from 127\.0\.0\.1/);
    assert.match(pair.worker.output().stderr, /no HTTP listener/);
    const health = await fetch(`${pair.head.base}/health`);
    assert.equal(health.status, 200);
    assert.deepEqual(await health.json(), { status: 'ok', state: 'ready', expertParallel: { worldSize: 2, rank: 0, peers: 'connected' } });
    let tokens = 0;
    for (const [i, p] of PROMPTS.entries()) {
      const r = await greedy(pair.head.base, p, MAX_TOKENS);
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.text, single[i], `prompt ${i}: two ranks = one rank`);
      tokens += r.tokens;
    }
    const metrics = await (await fetch(`${pair.head.base}/metrics`)).text();
    const sent = metricValue(metrics, 'svc_expert_parallel_bytes_total{direction="sent"}');
    const received = metricValue(metrics, 'svc_expert_parallel_bytes_total{direction="received"}');
    assert.ok(sent > 0 && received > 0, metrics);
    assert.equal(metricValue(metrics, 'svc_expert_parallel_peer_connected'), 1);
    // Prompt tokens travel too (prefill): this is the exchange per generated token, all in.
    process.stderr.write(
      `# expert parallel: ${((sent + received) / tokens).toFixed(0)} bytes per generated token (${sent} sent, ${received} received)\n`,
    );
  } finally {
    assert.deepEqual(await pair.stop(), [0, 0]);
  }
});

test(
  'the worker dies mid-generation: in-flight fails clearly, /health is degraded, new requests get 503, and it recovers',
  { skip },
  async () => {
    const pair = await startPair(model, ['--max-seq-len', '4096']);
    let worker = pair.worker;
    try {
      const base = pair.head.base;
      const before = await greedy(base, PROMPTS[0], MAX_TOKENS);
      const long = fetch(`${base}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: PROMPTS[1], max_tokens: 4000, temperature: 0, ignore_eos: true }),
      });
      await delay(500);
      worker.child.kill('SIGKILL');
      const res = await long;
      assert.equal(res.status, 500);
      const body = (await res.json()) as { error: { code: string; message: string } };
      assert.equal(body.error.code, 'engine_error');
      assert.match(body.error.message, /expert-parallel rank 1 was lost/);

      const health = await fetch(`${base}/health`);
      assert.equal(health.status, 503);
      const h = (await health.json()) as Record<string, unknown>;
      assert.equal(h.status, 'degraded');
      assert.equal(h.state, 'ready');
      assert.deepEqual(h.expertParallel, { worldSize: 2, rank: 0, peers: 'lost' });
      const refused = await greedy(base, PROMPTS[0], MAX_TOKENS);
      assert.equal(refused.status, 503);
      const refusedError = (refused.body as { error: { code: string; message: string } }).error;
      assert.equal(refusedError.code, 'expert_rank_unavailable');
      assert.match(refusedError.message, /rank 1 of 2 was lost/);
      assert.match(pair.head.svc.output().stderr, /Expert parallel: lost rank 1 \(127\.0\.0\.1:\d+\)/);

      worker = startWorker(model, pair.head.masterPort);
      await worker.ready;
      for (let i = 0; i < 100 && (await fetch(`${base}/health`)).status !== 200; i++) await delay(50);
      const after = await greedy(base, PROMPTS[0], MAX_TOKENS);
      assert.equal(after.status, 200);
      assert.equal(after.text, before.text, 'the same output once the worker is back');
    } finally {
      pair.head.svc.child.kill('SIGTERM');
      worker.child.kill('SIGTERM');
      await Promise.all([pair.head.svc.exited, worker.exited]);
    }
  },
);

test(
  'start-up: the head waits for rank 1 with a clear line; another checkpoint is refused on both sides; the wait times out',
  { skip },
  async () => {
    const other = moeCheckpoint('bf16');
    assert.ok('path' in other);
    const head = await startHead(model, [], { SVC_EP_CONNECT_TIMEOUT_S: '30' });
    try {
      for (let i = 0; i < 200 && !/waiting for rank 1/.test(head.svc.output().stderr); i++) await delay(50);
      assert.match(head.svc.output().stderr, /Expert parallel: waiting for rank 1 of 2 on 127\.0\.0\.1:\d+ \(up to 30 s\)/);
      const health = (await (await fetch(`${head.base}/health`)).json()) as Record<string, unknown>;
      assert.deepEqual(health.expertParallel, { worldSize: 2, rank: 0, peers: 'waiting' });
      const wrong = startWorker(other.path, head.masterPort);
      assert.equal(await wrong.exited, 1);
      assert.match(wrong.output().stderr, /^svc: .*model mismatch: the head serves .*, rank 1 loaded /m);
      assert.doesNotMatch(wrong.output().stderr, WORKER_READY);
      for (let i = 0; i < 100 && !/refused the connection/.test(head.svc.output().stderr); i++) await delay(50);
      assert.match(head.svc.output().stderr, /Expert parallel: refused the connection from 127\.0\.0\.1:\d+: model mismatch/);
      assert.equal(await head.svc.exited, 1);
      assert.match(head.svc.output().stderr, /^svc: expert parallelism: rank 1 of 2 did not connect to 127\.0\.0\.1:\d+ within 30 s/m);
    } finally {
      head.svc.child.kill('SIGTERM');
    }
  },
);
