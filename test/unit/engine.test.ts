// The whole engine (worker, scheduler, KV pool, sampler) on the real svc-tiny-chat checkpoint.
// Generations are short: the forward pass may be plain TypeScript.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { startEngine, type EngineOptions, type RunningEngine } from '../../src/engine/engine-client.js';
import {
  EngineAdmissionError,
  type EngineEvent,
  type GenerationHandle,
  type GenerationRequest,
  type SamplingParams,
  type TokenLogprob,
} from '../../src/engine/types.js';
import { toolGrammarConstraint } from '../../src/chat/tool-formats/constraint.js';
import { loadTokenizer } from '../../src/model/tokenizer.js';
import { TINY_CHAT } from '../helpers/paths.js';
import { engineOptions } from '../helpers/tiny-engine.js';

const IM_END = 151645;
const tokenizer = new Tokenizer(
  JSON.parse(readFileSync(join(TINY_CHAT, 'tokenizer.json'), 'utf8')),
  JSON.parse(readFileSync(join(TINY_CHAT, 'tokenizer_config.json'), 'utf8')),
);
/** A one-turn chat prompt as the Qwen3 template renders it. */
const chat = (question: string) => tokenizer.encode(`<|im_start|>user\n${question}<|im_end|>\n<|im_start|>assistant\n`).ids;

const QUESTIONS = [
  'What is the capital of France?',
  'What colour is the sky on a clear day?',
  'What sound does a cow make?',
  'What is 7 plus 5?',
  'What is the opposite of hot?',
  'Repeat this sentence exactly: the quick brown fox jumps over the lazy dog.',
  'What is the plural of mouse?',
  'Count from one to five.',
];

const GREEDY: SamplingParams = { temperature: 0, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: null };

function request(promptTokens: number[], over: Partial<GenerationRequest> = {}): GenerationRequest {
  return { promptTokens, maxTokens: 6, sampling: GREEDY, stopTokenIds: [IM_END], timeoutMs: 0, logprobs: 0, ...over };
}

interface Outcome {
  ids: number[];
  logprobs: TokenLogprob[];
  done: Extract<EngineEvent, { type: 'done' }>;
}

async function collect(handle: GenerationHandle): Promise<Outcome> {
  const ids: number[] = [];
  const logprobs: TokenLogprob[] = [];
  let done: Outcome['done'] | null = null;
  for await (const ev of handle.events) {
    if (ev.type === 'tokens') {
      ids.push(...ev.ids);
      logprobs.push(...(ev.logprobs ?? []));
    } else done = ev;
  }
  assert.ok(done, 'the stream ended without a done event');
  return { ids, logprobs, done };
}

const BASE = engineOptions({ kvCacheDtype: 'fp8', maxSeqLen: 256, maxPrefillTokens: 32 });

const engines: RunningEngine[] = [];
async function start(over: Partial<EngineOptions> = {}): Promise<RunningEngine> {
  const engine = await startEngine({ ...BASE, ...over });
  engines.push(engine);
  return engine;
}
after(async () => {
  for (const e of engines) await e.shutdown();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Waits until the worker's view (which arrives with each step's message) satisfies `pred`. */
async function until(engine: RunningEngine, pred: () => boolean): Promise<void> {
  for (let i = 0; i < 500 && !pred(); i++) await sleep(10);
  assert.ok(pred(), `condition not reached: ${JSON.stringify(engine.stats())}`);
}

test('start-up reports the model and the KV pool size', async () => {
  const engine = await start();
  assert.equal(engine.info.config.architecture, 'qwen3');
  assert.equal(engine.info.kvPoolTokens, engine.info.kvBlocks * 16);
  // Capped at max-seq-len × max-num-seqs = 256 × 16 tokens.
  assert.equal(engine.info.kvPoolTokens, 256 * 16);
  assert.equal(engine.info.kvPoolLimitedBy, 'max-seqs');
  // Tied embeddings count once: the file is ~87 MB of bf16.
  assert.ok(engine.info.weightBytes > 80e6 && engine.info.weightBytes < 90e6, `${engine.info.weightBytes}`);
});

test('greedy tokens are identical alone and among 7 concurrent requests', async () => {
  const engine = await start();
  const target = chat(QUESTIONS[0]);
  const alone = await collect(engine.submit(request(target)));
  assert.ok(alone.ids.length > 0);

  // Seven others of different lengths, some sampled, submitted first so the target's prefill
  // (32-token chunks) is mixed with their decodes.
  const others = QUESTIONS.slice(1).map((q, i) =>
    engine.submit(request(chat(q), { sampling: i % 2 ? { ...GREEDY, temperature: 1, seed: i } : GREEDY, maxTokens: 4 + i })),
  );
  const batched = await collect(engine.submit(request(target)));
  await Promise.all(others.map(collect));
  assert.deepEqual(batched.ids, alone.ids);
  assert.deepEqual(batched.done, alone.done);
  assert.equal(engine.stats().kvBlocksUsed, 0);
});

test('a prompt prefilled in 16-token chunks gives the same greedy tokens as in one piece', async () => {
  const prompt = chat(
    'Repeat this list in reverse order: apple, banana, cherry, date, elderberry, fig, grape, honeydew, kiwi, lemon, mango, nectarine, orange, papaya.',
  );
  assert.ok(prompt.length > 40);
  const whole = await start({ maxPrefillTokens: 2048 });
  const chunked = await start({ maxPrefillTokens: 16 });
  const a = await collect(whole.submit(request(prompt)));
  const b = await collect(chunked.submit(request(prompt)));
  assert.deepEqual(b.ids, a.ids);
});

test('seeded sampling is reproducible, alone or batched, and reports logprobs', async () => {
  const engine = await start();
  const sampled = request(chat(QUESTIONS[2]), {
    sampling: { temperature: 1, topK: 0, topP: 1, minP: 0, topNSigma: 0, seed: 1234 },
    logprobs: 3,
  });
  const first = await collect(engine.submit(sampled));
  const [second] = await Promise.all([collect(engine.submit(sampled)), collect(engine.submit(request(chat(QUESTIONS[3]))))]);
  assert.deepEqual(second.ids, first.ids);
  assert.equal(first.logprobs.length, first.ids.length);
  for (let i = 0; i < first.ids.length; i++) {
    const lp = first.logprobs[i];
    assert.equal(lp.id, first.ids[i]);
    assert.ok(lp.logprob <= 0);
    assert.equal(lp.top.length, 3);
    assert.ok(lp.top[0].logprob >= lp.top[1].logprob && lp.top[1].logprob >= lp.top[2].logprob);
    assert.ok(lp.top[0].logprob >= lp.logprob);
    assert.ok(Math.abs(second.logprobs[i].logprob - lp.logprob) < 1e-4);
  }
});

test('admission: queue_full beyond max-num-seqs, too_long beyond max-seq-len', async () => {
  const prompt = chat(QUESTIONS[4]);
  const limit = prompt.length + 3;
  const engine = await start({ maxNumSeqs: 2, maxSeqLen: limit });
  const a = engine.submit(request(prompt, { maxTokens: 3 }));
  const b = engine.submit(request(prompt, { maxTokens: 3 }));
  assert.throws(
    () => engine.submit(request(prompt, { maxTokens: 1 })),
    (e: unknown) => e instanceof EngineAdmissionError && e.kind === 'queue_full' && /--max-num-seqs 2/.test(e.message),
  );
  a.cancel();
  b.cancel();
  assert.equal((await collect(a)).done.reason, 'cancelled');
  assert.equal((await collect(b)).done.reason, 'cancelled');
  // Room again once the cancellations are through.
  assert.equal((await collect(engine.submit(request(prompt, { maxTokens: 1 })))).ids.length, 1);

  assert.throws(
    () => engine.submit(request(prompt, { maxTokens: 4 })),
    (e: unknown) =>
      e instanceof EngineAdmissionError && e.kind === 'too_long' && new RegExp(`exceeds the context length ${limit}$`).test(e.message),
  );
  // Exactly at the limit is fine.
  const exact = await collect(engine.submit(request(prompt, { maxTokens: 3, stopTokenIds: [] })));
  assert.equal(exact.done.reason, 'length');
  assert.equal(exact.ids.length, 3);
});

test('a request over its timeout ends with reason timeout and frees its blocks', async () => {
  // 1000 tokens take far longer than 100 ms even with native kernels.
  const engine = await start({ maxSeqLen: 1100, maxNumSeqs: 2 });
  const out = await collect(engine.submit(request(chat(QUESTIONS[5]), { maxTokens: 1000, stopTokenIds: [], timeoutMs: 100 })));
  assert.equal(out.done.reason, 'timeout');
  assert.ok(out.ids.length < 1000);
  assert.equal(engine.stats().kvBlocksUsed, 0);
  assert.equal(engine.stats().running, 0);
});

test('no KV block leaks after requests cancelled at random moments under preemption', async () => {
  // A pool of exactly one max-length sequence (64 tokens = 4 blocks): concurrent prompts of
  // ~20 tokens must preempt each other.
  const probe = await start({ maxSeqLen: 64 });
  const weightBytes = probe.info.weightBytes;
  const kvPerBlock = probe.info.kvPoolBytes / probe.info.kvBlocks;
  const engine = await start({
    maxSeqLen: 64,
    maxBatchSize: 4,
    maxPrefillTokens: 24,
    oomGuardMb: 0,
    gpuMemoryUtilization: 1,
    memoryBytes: weightBytes + 4.5 * kvPerBlock,
  });
  assert.equal(engine.info.kvBlocks, 4);

  let seed = 99;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
  // ~20-token prompts + 16 tokens cross into a third block: two sequences running together need
  // 6 of the 4 blocks, so the two submitted first (never cancelled) force a preemption whatever
  // the timing.
  const TOKENS = 16;
  const jobs: Promise<Outcome>[] = [0, 1].map((i) =>
    collect(engine.submit(request(chat(QUESTIONS[i]), { maxTokens: TOKENS, stopTokenIds: [] }))),
  );
  for (let i = 0; i < 12; i++) {
    const handle = engine.submit(request(chat(QUESTIONS[i % QUESTIONS.length]), { maxTokens: TOKENS, stopTokenIds: [] }));
    const mode = rand();
    if (mode < 0.25)
      handle.cancel(); // before the worker even sees it
    else if (mode < 0.75) setTimeout(() => handle.cancel(), rand() * 200);
    jobs.push(collect(handle));
    if (i % 3 === 2) await sleep(rand() * 200);
  }
  // A consumer that walks away mid-stream cancels its job too.
  const walkAway = engine.submit(request(chat(QUESTIONS[0]), { maxTokens: 8, stopTokenIds: [] }));
  for await (const ev of walkAway.events) if (ev.type === 'tokens') break;

  const outcomes = await Promise.all(jobs);
  const reasons = new Set(outcomes.map((o) => o.done.reason));
  assert.ok(reasons.has('cancelled'), [...reasons].join());
  for (const o of outcomes) {
    if (o.done.reason === 'length') assert.equal(o.ids.length, TOKENS);
    else assert.equal(o.done.reason, 'cancelled');
  }
  await until(engine, () => engine.stats().running === 0 && engine.stats().waiting === 0);
  assert.equal(engine.stats().kvBlocksUsed, 0);
  assert.ok(engine.stats().preemptions > 0, 'the pool was never tight');
});

test('start-up fails with the loader error or the memory advice', async () => {
  await assert.rejects(startEngine({ ...BASE, modelPath: '/nonexistent/model' }), /no such file/);
  await assert.rejects(
    startEngine({ ...BASE, gpuMemoryUtilization: 0.5, memoryBytes: 2 ** 30, oomGuardMb: 4096 }),
    (e: Error) => /Out of memory/.test(e.message) && /--gpu-memory-utilization/.test(e.message) && /--max-seq-len 256/.test(e.message),
  );
});

test('an aborted start-up rejects at once, before or during the load', async () => {
  const stop = new AbortController();
  const loading = startEngine({ ...BASE }, undefined, stop.signal);
  stop.abort();
  await assert.rejects(loading, /model load aborted/);
  const already = new AbortController();
  already.abort();
  await assert.rejects(startEngine({ ...BASE }, undefined, already.signal), /model load aborted/);
});

test('a tool-constrained job waits for the vocabulary off the step loop: other sequences keep decoding', async () => {
  const engine = await start({ maxSeqLen: 1024 });
  // What a server does once its runtime is built: the vocabulary thread works from this tokenizer.
  engine.setTokenizer(loadTokenizer(TINY_CHAT));
  const free = engine.submit(request(chat(QUESTIONS[1]), { maxTokens: 600, stopTokenIds: [] }));
  const freeTokens: number[] = [];
  let freeAtConstrainedStart = -1;
  const iterator = free.events[Symbol.asyncIterator]();
  // Let the free sequence get going, then submit a job whose tool grammar needs the vocabulary.
  while (freeTokens.length < 5) {
    const { value } = await iterator.next();
    if ((value as EngineEvent).type === 'tokens') freeTokens.push(...(value as Extract<EngineEvent, { type: 'tokens' }>).ids);
  }
  const countAtSubmit = freeTokens.length;
  const constraint = toolGrammarConstraint({
    format: 'hermes',
    tools: [{ name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } }, required: ['city'] } }],
    endTokenIds: [IM_END],
    maxCalls: 1,
  });
  const constrained = engine.submit(request(chat('What is the weather in Prague?'), { maxTokens: 40, constraint }));
  const drainFree = (async () => {
    for (let r = await iterator.next(); !r.done; r = await iterator.next()) {
      const ev = r.value as EngineEvent;
      if (ev.type === 'tokens') freeTokens.push(...ev.ids);
    }
  })();
  for await (const ev of constrained.events) {
    if (ev.type === 'tokens' && freeAtConstrainedStart < 0) freeAtConstrainedStart = freeTokens.length;
  }
  free.cancel();
  await drainFree;
  console.log(`# free sequence tokens while the vocabulary loaded: ${freeAtConstrainedStart - countAtSubmit}`);
  // While the tokenizer was read and the token bytes worked out (seconds), the free sequence
  // went on decoding instead of stalling.
  assert.ok(freeAtConstrainedStart - countAtSubmit >= 10, `free sequence made ${freeAtConstrainedStart - countAtSubmit} tokens meanwhile`);
});

test('a tool-constrained job on an engine never given a tokenizer ends with an error; others are unaffected', async () => {
  const engine = await start();
  const constraint = toolGrammarConstraint({ format: 'hermes', tools: [{ name: 'get_weather' }], endTokenIds: [IM_END] });
  const [constrained, free] = await Promise.all([
    collect(engine.submit(request(chat(QUESTIONS[0]), { constraint }))),
    collect(engine.submit(request(chat(QUESTIONS[0])))),
  ]);
  assert.equal(constrained.done.reason, 'error');
  assert.match(constrained.done.message ?? '', /tool-call grammar failed: .*no tokenizer/);
  assert.deepEqual(constrained.ids, []);
  assert.ok(free.ids.length > 0);
  assert.notEqual(free.done.reason, 'error');
});
