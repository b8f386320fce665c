// `svc serve` as a user runs it: a child process of bin/svc.js, ready at the "Listening on" line,
// answering HTTP, shutting down on SIGTERM; and its start-up failures, each one clear line.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { freePort } from '../helpers/svc-cli.js';
import { MODELS, REPO_ROOT, TINY_CHAT } from '../helpers/paths.js';

const BIN = join(REPO_ROOT, 'bin', 'svc.js');

/** Runs svc with args; resolves when `until` matches stderr (or on exit) with what it printed so far. */
function runSvc(args: string[], until?: RegExp, env?: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let stderr = '';
  let stdout = '';
  child.stdout.on('data', (d) => (stdout += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const ready = new Promise<void>((resolve) => {
    child.stderr.on('data', (d) => {
      stderr += d;
      if (until && until.test(stderr)) resolve();
    });
    void exited.then(() => resolve());
  });
  return { child, ready, exited, output: () => ({ stderr, stdout }) };
}

test('svc serve --model-from-path: ready line, loopback note, health, models, a chat, SIGTERM exits 0', async () => {
  const port = await freePort();
  const svc = runSvc(['serve', '--model-from-path', TINY_CHAT, '--port', String(port), '--served-model-name', 'tiny'], /^Listening on /m);
  try {
    await svc.ready;
    const { stderr } = svc.output();
    assert.match(stderr, new RegExp(`^Listening on 127\\.0\\.0\\.1:${port}$`, 'm'));
    assert.match(stderr, /loopback only/);
    assert.match(stderr, /^KV pool: \d+ tokens/m);
    // No --max-seq-len: the model's own context (config.json max_position_embeddings 4096).
    assert.match(stderr, /^Context length: 4096 tokens \(the model's max_position_embeddings/m);
    const base = `http://127.0.0.1:${port}`;
    assert.equal((await fetch(`${base}/health`)).status, 200);
    const models = (await (await fetch(`${base}/v1/models`)).json()) as { data: { id: string; max_model_len: number }[] };
    assert.deepEqual(
      models.data.map((m) => [m.id, m.max_model_len]),
      [['tiny', 4096]],
    );
    const res = await fetch(`${base}/v1/completions`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'whatever', prompt: 'Hello', max_tokens: 4, temperature: 0 }),
    });
    assert.equal(res.status, 200);
    const body = (await res.json()) as { model: string; usage: { completion_tokens: number } };
    assert.equal(body.model, 'tiny');
    assert.ok(body.usage.completion_tokens >= 1);
  } finally {
    svc.child.kill('SIGTERM');
  }
  assert.equal(await svc.exited, 0);
});

test('a SentencePiece GGUF model: a completion keeps the leading space of its first word, streamed or not', async () => {
  const port = await freePort();
  const svc = runSvc(
    ['serve', '--model-from-path', join(MODELS, 'stories260k-gguf', 'stories260K.gguf'), '--port', String(port)],
    /^Listening on /m,
  );
  try {
    await svc.ready;
    const request = (stream: boolean) =>
      fetch(`http://127.0.0.1:${port}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: 'Lily went to the park', max_tokens: 8, temperature: 0, stream }),
      });
    const text = ((await (await request(false)).json()) as { choices: { text: string }[] }).choices[0]!.text;
    // The story goes on with a new word: " with her mom…" as llama.cpp and vLLM return it, not "with her mom…".
    assert.match(text, /^ \S/);
    const sse = await (await request(true)).text();
    const streamed = sse
      .split('\n')
      .filter((line) => line.startsWith('data: {'))
      .map((line) => (JSON.parse(line.slice(6)) as { choices: { text: string }[] }).choices[0]!.text)
      .join('');
    assert.equal(streamed, text);
  } finally {
    svc.child.kill('SIGTERM');
  }
  assert.equal(await svc.exited, 0);
});

test('loading a GGUF shows its progress (piped: a few lines) and both load modes complete alike', async () => {
  const texts: string[] = [];
  for (const flags of [[], ['--no-fast-load']]) {
    const port = await freePort();
    const model = join(MODELS, 'quant-zoo', 'stories260k-wide-q8_0.gguf');
    const svc = runSvc(['serve', '--model-from-path', model, '--port', String(port), ...flags], /^Listening on /m);
    try {
      await svc.ready;
      const { stderr } = svc.output();
      const lines = stderr.split('\n').filter((l) => l.startsWith('Loading weights: '));
      // Not a terminal: whole lines, at most one per tenth of the bytes (and the first), ending at 100%.
      assert.ok(lines.length >= 1 && lines.length <= 11, stderr);
      assert.match(lines[lines.length - 1]!, /^Loading weights: (\d+)\/\1 tensors, [\d.]+\/[\d.]+ MiB \(100%\)$/);
      assert.doesNotMatch(stderr, /\r/);
      const res = await fetch(`http://127.0.0.1:${port}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt: 'Lily went to the park', max_tokens: 12, temperature: 0 }),
      });
      texts.push(((await res.json()) as { choices: { text: string }[] }).choices[0]!.text);
    } finally {
      svc.child.kill('SIGTERM');
    }
    assert.equal(await svc.exited, 0);
  }
  assert.ok(texts[0]!.length > 0);
  assert.equal(texts[1], texts[0]);
});

test('a model id missing from the hub cache: exit 1 naming the paths searched', async () => {
  const cache = mkdtempSync(join(tmpdir(), 'svc-empty-cache-'));
  const svc = runSvc(['serve', 'acme/no-such-model', '--cache-dir', cache, '--port', String(await freePort())]);
  assert.equal(await svc.exited, 1);
  const { stderr } = svc.output();
  assert.match(stderr, /^svc: .*acme\/no-such-model/m);
  assert.ok(stderr.includes(join(cache, 'models--acme--no-such-model')), stderr);
});

test('out of memory at start-up: exit 1 suggesting lower --gpu-memory-utilization or --max-seq-len', async () => {
  const svc = runSvc(['serve', '--model-from-path', TINY_CHAT, '--port', String(await freePort()), '--gpu-memory-utilization', '0.01']);
  assert.equal(await svc.exited, 1);
  const { stderr } = svc.output();
  assert.match(stderr, /--gpu-memory-utilization/);
  assert.match(stderr, /--max-seq-len/);
  assert.doesNotMatch(stderr, /^Listening on/m);
});

test('an invalid environment variable is a one-line start-up error naming it: exit 1', async () => {
  const args = ['serve', '--model-from-path', TINY_CHAT, '--port', String(await freePort())];
  const body = runSvc(args, undefined, { SVC_MAX_BODY_BYTES: 'abc' });
  assert.equal(await body.exited, 1);
  assert.equal(body.output().stderr, 'svc: SVC_MAX_BODY_BYTES: expected a positive integer, got "abc"\n');
  const level = runSvc(args, undefined, { SVC_LOG_LEVEL: 'loud' });
  assert.equal(await level.exited, 1);
  assert.match(level.output().stderr, /^svc: SVC_LOG_LEVEL: expected one of trace, .*, got "loud"\n$/);
});

test('svc serve ORG/NAME resolves the model in the hub cache (--cache-dir) and serves it under that name', async () => {
  // A hub cache as huggingface_hub lays it out: refs/main names the snapshot, whose files link to blobs.
  const cache = mkdtempSync(join(tmpdir(), 'svc-hub-'));
  const repo = join(cache, 'models--acme--tiny-chat');
  const snapshot = join(repo, 'snapshots', 'abc123');
  mkdirSync(snapshot, { recursive: true });
  mkdirSync(join(repo, 'refs'));
  writeFileSync(join(repo, 'refs', 'main'), 'abc123');
  for (const f of readdirSync(TINY_CHAT)) symlinkSync(join(TINY_CHAT, f), join(snapshot, f));
  const port = await freePort();
  // A --max-seq-len past the model's own 4096 is served, with a warning.
  const svc = runSvc(['serve', 'acme/tiny-chat', '--cache-dir', cache, '--port', String(port), '--max-seq-len', '8192'], /^Listening on /m);
  try {
    await svc.ready;
    assert.match(svc.output().stderr, /^Listening on /m);
    assert.match(
      svc.output().stderr,
      /^warning: --max-seq-len 8192 exceeds the model's own context length \(max_position_embeddings 4096\)/m,
    );
    const models = (await (await fetch(`http://127.0.0.1:${port}/v1/models`)).json()) as { data: { id: string; max_model_len: number }[] };
    assert.deepEqual(
      models.data.map((m) => [m.id, m.max_model_len]),
      [['acme/tiny-chat', 8192]],
    );
  } finally {
    svc.child.kill('SIGTERM');
  }
  assert.equal(await svc.exited, 0);
});
