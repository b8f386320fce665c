// `svc serve --profile --adaptive-sampling` as a user runs it: after a few completions,
// GET /debug/profile has the engine's per-op timings (JSON, and ?format=text as a table), and
// SIGTERM prints the table to stderr before the process exits.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import type { ProfileSnapshot } from '../../src/engine/profile.js';
import { TINY_CHAT } from '../helpers/paths.js';
import { freePort, runSvc } from '../helpers/svc-cli.js';

test('svc serve --profile: per-op timings at /debug/profile and printed at shutdown', async () => {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const svc = runSvc(
    ['serve', '--model-from-path', TINY_CHAT, '--port', String(port), '--max-seq-len', '512', '--profile', '--adaptive-sampling'],
    /^Listening on /m,
  );
  try {
    await svc.ready;
    assert.match(svc.output().stderr, /^Profile: per-op timings at GET \/debug\/profile/m);
    assert.match(svc.output().stderr, /^Adaptive sampling: /m);
    const client = new OpenAI({ baseURL: `${base}/v1`, apiKey: 'x', maxRetries: 0 });
    for (const temperature of [0, 0.8]) {
      const chat = await client.chat.completions.create({
        model: 'x',
        messages: [{ role: 'user', content: 'Count from one to five.' }],
        max_tokens: 6,
        temperature,
        seed: 3,
      });
      assert.ok(chat.usage!.completion_tokens >= 1);
    }

    const res = await fetch(`${base}/debug/profile`);
    assert.equal(res.status, 200);
    const profile = (await res.json()) as ProfileSnapshot;
    const op = (name: string) => profile.ops.find((r) => r.name === name);
    for (const name of ['prepareWeight', 'matmul', 'embed', 'rmsnorm', 'rope', 'attention', 'storeKv', 'siluMul', 'add'])
      assert.ok((op(name)?.calls ?? 0) > 0, `${name} was timed`);
    const step = Object.fromEntries(profile.step.map((r) => [r.name, r]));
    for (const name of ['schedule', 'forward', 'sample', 'postprocess']) assert.ok(step[name]!.calls > 0, `${name} was timed`);
    // At least 2 requests × 6 tokens sampled; as many forward passes as schedules that ran one.
    assert.ok(step.sample!.calls >= 2);
    assert.ok(step.forward!.totalMs >= op('matmul')!.totalMs, 'ops are inside the forward passes');
    // The matmul breakdown: decode steps have one activation row.
    assert.ok(profile.matmul.some((r) => / n=1$/.test(r.name)));
    // The same group has the shared-input matmuls (q/k/v, gate/up) and splits attention into
    // decode-only calls and calls with prefill rows.
    const isAttention = (r: { name: string }) => r.name.startsWith('attention');
    const isShared = (r: { name: string }) => r.name.startsWith('shared ');
    assert.equal(
      profile.matmul.filter((r) => !isAttention(r) && !isShared(r)).reduce((n, r) => n + r.calls, 0),
      op('matmul')!.calls,
    );
    assert.ok((op('matmulShared')?.calls ?? 0) > 0, 'matmulShared was timed');
    assert.equal(
      profile.matmul.filter(isShared).reduce((n, r) => n + r.calls, 0),
      op('matmulShared')!.calls,
    );
    assert.equal(
      profile.matmul.filter(isAttention).reduce((n, r) => n + r.calls, 0),
      op('attention')!.calls,
    );
    assert.ok(profile.matmul.some((r) => r.name === 'attention, decode rows only' && r.calls > 0));

    const table = await fetch(`${base}/debug/profile?format=text`);
    assert.equal(table.status, 200);
    assert.match(table.headers.get('content-type') ?? '', /^text\/plain/);
    assert.match(
      await table.text(),
      /^Profile \(--profile\): [\d.]+ s since the engine started; ops [\d.]+ ms of [\d.]+ ms in forward passes/,
    );
    assert.equal((await fetch(`${base}/debug/profile?format=xml`)).status, 400);
  } finally {
    svc.child.kill('SIGTERM');
  }
  assert.equal(await svc.exited, 0);
  const stderr = svc.output().stderr;
  assert.match(stderr, /SIGTERM: shutting down\n(.*\n)*Profile \(--profile\): /);
  assert.match(stderr, /^matmul +\d+ +[\d.]+ +[\d.]+% /m);
  assert.match(stderr, /^forward +\d+ /m);
});
