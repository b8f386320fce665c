// Prefix caching on the real engine (svc-tiny-chat): greedy multi-turn chats give the same tokens
// with and without the cache, every turn after the first finds its history cached, and n copies of
// one prompt share it.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { startEngine, type EngineOptions, type RunningEngine } from '../../src/engine/engine-client.js';
import type { GenerationHandle, GenerationRequest, SamplingParams } from '../../src/engine/types.js';
import type { KvCacheDtypeName } from '../../src/engine/kv-plan.js';
import { TINY_CHAT } from '../helpers/paths.js';

const IM_END = 151645;
const tokenizer = new Tokenizer(
  JSON.parse(readFileSync(join(TINY_CHAT, 'tokenizer.json'), 'utf8')),
  JSON.parse(readFileSync(join(TINY_CHAT, 'tokenizer_config.json'), 'utf8')),
);
const encode = (text: string) => tokenizer.encode(text).ids;
const userTurn = (q: string) => encode(`<|im_start|>user\n${q}<|im_end|>\n<|im_start|>assistant\n`);
const SYSTEM = encode(
  '<|im_start|>system\nYou are a careful assistant. Answer briefly, in one sentence, and never use lists. ' +
    'If a question is about numbers, give the number first.<|im_end|>\n',
);
const QUESTIONS = [
  ['What is the capital of France?', 'And of Italy?', 'Which of the two is larger?', 'Spell the larger one backwards.'],
  ['What is 7 plus 5?', 'Times two?', 'Minus three?', 'Is that a prime number?'],
  ['Name a colour.', 'Name another one.', 'Mix them: what do you get?', 'Is that a warm colour?'],
  ['What sound does a cow make?', 'And a cat?', 'Which is louder?', 'Why?'],
  ['Count from one to five.', 'Now backwards.', 'Now only the even ones.', 'How many was that?'],
];

const GREEDY: SamplingParams = { temperature: 0, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: null };
const job = (promptTokens: number[], maxTokens = 10): GenerationRequest => ({
  promptTokens,
  maxTokens,
  sampling: GREEDY,
  stopTokenIds: [IM_END],
  timeoutMs: 0,
  logprobs: 0,
});

async function collect(handle: GenerationHandle): Promise<{ ids: number[]; cached: number }> {
  const ids: number[] = [];
  let cached = -1;
  for await (const ev of handle.events) {
    if (ev.type !== 'tokens') continue;
    if (ev.cachedTokens !== undefined) cached = ev.cachedTokens;
    ids.push(...ev.ids);
  }
  return { ids, cached };
}

const engines: RunningEngine[] = [];
after(async () => {
  for (const e of engines) await e.shutdown();
});
async function start(kvCacheDtype: KvCacheDtypeName, enablePrefixCaching: boolean): Promise<RunningEngine> {
  const options: EngineOptions = {
    modelPath: TINY_CHAT,
    fastLoad: true,
    kvCacheDtype,
    maxSeqLen: 512,
    maxBatchSize: 8,
    // Small chunks: cached prefixes meet chunked prefill.
    maxPrefillTokens: 48,
    maxNumSeqs: 16,
    gpuMemoryUtilization: 0.9,
    oomGuardMb: 256,
    blockSize: 16,
    enablePrefixCaching,
    swapSpaceBytes: 0,
  };
  const engine = await startEngine(options);
  engines.push(engine);
  return engine;
}

/** Every chat, turn by turn (the chats of a turn concurrently): per turn and chat, the tokens and the cache hit. */
async function runChats(engine: RunningEngine): Promise<{ ids: number[]; cached: number; prompt: number }[][]> {
  const histories = QUESTIONS.map(() => [...SYSTEM]);
  const turns: { ids: number[]; cached: number; prompt: number }[][] = [];
  for (let t = 0; t < QUESTIONS[0].length; t++) {
    const prompts = QUESTIONS.map((qs, c) => [...histories[c], ...userTurn(qs[t])]);
    const results = await Promise.all(prompts.map((p) => collect(engine.submit(job(p)))));
    turns.push(results.map((r, c) => ({ ...r, prompt: prompts[c].length })));
    // The next turn resends the whole conversation, the answer included.
    results.forEach((r, c) => (histories[c] = [...prompts[c], ...r.ids, ...encode('<|im_end|>\n')]));
  }
  return turns;
}

for (const dtype of ['fp8', 'bf16', 'nvfp4', 'turbo4k_turbo3v'] as KvCacheDtypeName[]) {
  test(`greedy multi-turn chats are token-for-token the same with and without the prefix cache (${dtype} KV)`, async () => {
    const plain = await start(dtype, false);
    const cached = await start(dtype, true);
    const a = await runChats(plain);
    const b = await runChats(cached);
    for (let t = 0; t < a.length; t++)
      for (let c = 0; c < a[t].length; c++) assert.deepEqual(b[t][c].ids, a[t][c].ids, `turn ${t + 1}, chat ${c + 1}`);
    // Without the cache nothing is cached; with it, the shared system prompt from the first turn
    // on (the chats run together: all but one wait for its blocks), the whole history after.
    assert.ok(a.flat().every((r) => r.cached === 0));
    assert.ok(b[0].filter((r) => r.cached >= 16).length >= QUESTIONS.length - 1, JSON.stringify(b[0].map((r) => r.cached)));
    // Uncached: the new user turn, the previous answer's closing tokens, a partial block.
    for (let t = 1; t < b.length; t++)
      for (const r of b[t]) assert.ok(r.cached >= r.prompt - 40, `turn ${t + 1}: ${r.cached} of ${r.prompt} prompt tokens cached`);
    const stats = cached.stats();
    assert.ok(stats.prefixHitTokens > 0 && stats.prefixHitTokens < stats.prefixQueriedTokens);
    assert.ok(stats.kvBlocksCached > 0);
    assert.equal(stats.kvBlocksUsed, 0);
  });
}

test('n copies of a prompt share its blocks and give the same greedy tokens', async () => {
  const engine = await start('fp8', true);
  const prompt = [...SYSTEM, ...userTurn('Tell me about the sea in two sentences.')];
  const outs = await Promise.all([0, 1, 2].map(() => collect(engine.submit(job(prompt, 8)))));
  assert.deepEqual(outs[1].ids, outs[0].ids);
  assert.deepEqual(outs[2].ids, outs[0].ids);
  const whole = Math.floor(prompt.length / 16) * 16;
  assert.deepEqual(
    outs.map((o) => o.cached),
    [0, Math.min(whole, prompt.length - 1), Math.min(whole, prompt.length - 1)],
  );
});
