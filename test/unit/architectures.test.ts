// Architectures on the reference ops against Hugging Face logits (tiny fixtures, svc-tiny-chat) and on real text
// (TinyStories-656K, stories260K): whole-sequence prefill and token-by-token decode through the paged cache.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { Tokenizer } from '@huggingface/tokenizers';
import { FIXTURES, MODELS, REFERENCE, TINY_CHAT } from '../helpers/paths.js';
import { PagedRun } from '../helpers/paged-run.js';
import { referenceOps } from '../../src/kernels/reference.js';
import { nativeOps } from '../../src/kernels/native.js';
import type { KvDType } from '../../src/kernels/ops.js';
import { createModel, type Model } from '../../src/model/architectures/index.js';
import { loadCheckpoint, loadSafetensorsCheckpoint } from '../../src/model/loaders/index.js';
import type { Checkpoint } from '../../src/model/types.js';
import { DecoderTransformer, type DecoderOptions } from '../../src/model/architectures/decoder.js';

const ops = referenceOps;

// ---- a small paged-cache driver: block tables, slots, batches ---------------------------------

function argmax(a: Float32Array, offset: number, len: number): number {
  let best = 0;
  for (let i = 1; i < len; i++) if (a[offset + i] > a[offset + best]) best = i;
  return best;
}

// ---- tiny HF fixtures ----------------------------------------------------------------------

interface FixtureLogits {
  sequences: number[][];
  logits: number[][][];
}

function loadFixture(name: string, files: string[]): Checkpoint {
  if (files.length === 1 && files[0].endsWith('.gguf')) return loadCheckpoint(resolve(FIXTURES, files[0]), { fastLoad: true });
  return loadSafetensorsCheckpoint({
    files: files.map((f) => resolve(FIXTURES, f)),
    configPath: resolve(FIXTURES, `tiny_${name}_config.json`),
    fastLoad: true,
  });
}

/** Max |ours − HF| over every position of every sequence, for the prefill path and the decode path. */
function fixtureErrors(model: Model, name: string): { prefill: number; decode: number } {
  const ref = JSON.parse(readFileSync(resolve(FIXTURES, `tiny_${name}_logits.json`), 'utf8')) as FixtureLogits;
  const vocab = model.config.vocabSize;
  const lens = ref.sequences.map((s) => s.length);
  const maxErr = (logits: Float32Array, row: number, s: number, pos: number, prev: number): number => {
    let err = prev;
    for (let v = 0; v < vocab; v++) err = Math.max(err, Math.abs(logits[row * vocab + v] - ref.logits[s][pos][v]));
    return err;
  };

  // Prefill: every sequence whole, all in one batch, logits for every row.
  let prefill = 0;
  const whole = new PagedRun(model, lens, 4).step(
    ref.sequences.map((tokens, seq) => ({ seq, tokens })),
    true,
  );
  let row = 0;
  ref.sequences.forEach((seq, s) => seq.forEach((_, pos) => (prefill = maxErr(whole, row++, s, pos, prefill))));

  // Decode: one token per sequence per step, all sequences batched, blocks of 4 crossed every 4 steps.
  let decode = 0;
  const run = new PagedRun(model, lens, 4);
  for (let pos = 0; pos < Math.max(...lens); pos++) {
    const live = ref.sequences.map((tokens, seq) => ({ seq, tokens: [tokens[pos]] })).filter((c) => c.tokens[0] !== undefined);
    const logits = run.step(live, false);
    live.forEach((c, i) => (decode = maxErr(logits, i, c.seq, pos, decode)));
  }
  return { prefill, decode };
}

/** name: the fixture; arch: the architecture that runs it (its name unless given). */
const FIXTURE_CASES: { name: string; arch?: string; label: string; files: string[]; tol: number }[] = [
  { name: 'llama', label: 'llama', files: ['tiny_llama.safetensors'], tol: 1e-5 },
  { name: 'llama', label: 'llama (2 shards + index)', files: ['tiny_llama.safetensors.index.json'], tol: 1e-5 },
  // GGUF conversions of tiny_llama (q/k rows un-permuted by the loader); f16 weights cost accuracy against HF's f32.
  // (tiny_llama_q8.gguf is a different model with no reference logits.)
  { name: 'llama', label: 'llama (GGUF f32)', files: ['tiny_llama_f32.gguf'], tol: 1e-5 },
  { name: 'llama', label: 'llama (GGUF f16)', files: ['tiny_llama_f16.gguf'], tol: 1e-2 },
  { name: 'mistral', label: 'mistral (sliding window 4)', files: ['tiny_mistral.safetensors'], tol: 1e-5 },
  { name: 'qwen2', label: 'qwen2 (qkv bias)', files: ['tiny_qwen2.safetensors'], tol: 1e-5 },
  { name: 'qwen3', label: 'qwen3 (qk norm, head_dim 6, tied)', files: ['tiny_qwen3.safetensors'], tol: 1e-5 },
  // BF16 weights: HF computed in f64 from the same bf16 values, so only our f32 activation rounding differs.
  // SmolLM2 is a Llama checkpoint, run by the Llama architecture.
  { name: 'smollm2', arch: 'llama', label: 'smollm2 (bf16, tied)', files: ['tiny_smollm2.safetensors'], tol: 1e-5 },
];

// The native kernels run the same fixtures: f32 sums in another order (FMA, SIMD lanes) allow 1e-4.
for (const kernels of [referenceOps, nativeOps]) {
  for (const c of FIXTURE_CASES) {
    const tol = kernels === referenceOps ? c.tol : Math.max(c.tol, 1e-4);
    test(`${c.label} on ${kernels.name} ops: prefill and paged decode match HF logits within ${tol}`, () => {
      const model = createModel(loadFixture(c.name, c.files), kernels);
      assert.equal(model.config.architecture, c.arch ?? c.name);
      const { prefill, decode } = fixtureErrors(model, c.name);
      console.log(
        `# ${c.label} (${kernels.name}): max abs logit error prefill ${prefill.toExponential(2)}, decode ${decode.toExponential(2)}`,
      );
      assert.ok(prefill < tol, `prefill error ${prefill}`);
      assert.ok(decode < tol, `decode error ${decode}`);
    });
  }
}

test('tiny llama GGUF Q8_0 (no HF logits): native int8 kernels match the reference ops on the same weights', () => {
  const checkpoint = loadCheckpoint(resolve(FIXTURES, 'tiny_llama_q8.gguf'), { fastLoad: true });
  assert.equal(checkpoint.tensors.get('model.layers.0.self_attn.q_proj.weight')?.dtype, 'q8_0');
  const seqs = [
    [1, 2, 3, 4, 5, 6, 7],
    [7, 0, 3, 3, 1],
  ];
  const lens = seqs.map((q) => q.length);
  const run = (kernels: typeof referenceOps) =>
    new PagedRun(createModel(checkpoint, kernels), lens, 4).step(
      seqs.map((tokens, seq) => ({ seq, tokens })),
      true,
    );
  const ref = run(referenceOps);
  const nat = run(nativeOps);
  let err = 0;
  let scale = 0;
  for (let i = 0; i < ref.length; i++) {
    err = Math.max(err, Math.abs(ref[i] - nat[i]));
    scale = Math.max(scale, Math.abs(ref[i]));
  }
  const vocab = checkpoint.config.vocabSize;
  let sameTop = 0;
  for (let r = 0; r < ref.length / vocab; r++) if (argmax(ref, r * vocab, vocab) === argmax(nat, r * vocab, vocab)) sameTop++;
  console.log(
    `# tiny llama Q8_0: max abs logit difference native vs reference ${err.toExponential(2)} (max |logit| ${scale.toFixed(3)}), same top-1 in ${sameTop}/${ref.length / vocab} rows`,
  );
  // The native path quantizes activations to int8 per 32-element block (as llama.cpp does), which
  // the f32 reference does not: a few percent of the logit scale on this 32-wide model.
  assert.ok(err < 0.05 * scale, `difference ${err}`);
  assert.ok(sameTop >= ref.length / vocab - 1, `top-1 agrees in ${sameTop} rows`);
});

test('the fixtures exercise each option: without qkv bias, qk norm or the sliding window the logits no longer match', () => {
  const plain = { qkvBias: 'none', oBiasIfPresent: false, qkNorm: false, slidingWindow: null } as const;
  const without = (name: string, options: DecoderOptions) =>
    fixtureErrors(new DecoderTransformer(loadFixture(name, [`tiny_${name}.safetensors`]), ops, options), name).prefill;
  assert.ok(without('qwen2', plain) > 1e-2, 'qwen2 without q/k/v biases');
  assert.ok(without('qwen3', plain) > 1e-2, 'qwen3 without q/k norm');
  assert.ok(without('mistral', plain) > 1e-3, 'mistral without its window');
  assert.ok(without('mistral', { ...plain, slidingWindow: 5 }) > 1e-3, 'mistral with the window one too wide');
  assert.ok(without('mistral', { ...plain, slidingWindow: 3 }) > 1e-3, 'mistral with the window one too narrow');
});

// ---- svc-tiny-chat against its reference top-5 logits ------------------------------------------

interface ChatCase {
  case_id: number;
  prompt_ids: number[];
  generated_ids: number[];
  top5_logits_first3: { id: number; logit: number }[][];
}

const chatRef = JSON.parse(readFileSync(resolve(REFERENCE, 'svc-tiny-chat-logits.json'), 'utf8')) as { cases: ChatCase[] };
const chatModels = new Map<string, Model>();
function tinyChat(kernels = ops): Model {
  let model = chatModels.get(kernels.name);
  if (!model) chatModels.set(kernels.name, (model = createModel(loadCheckpoint(TINY_CHAT, { fastLoad: true }), kernels)));
  return model;
}

/** Logits at the first 3 generated positions: the prompt as one prefill, then the 2 generated tokens decoded. */
function chatLogits(c: ChatCase, dtype: KvDType, kernels = ops): Float32Array[] {
  const model = tinyChat(kernels);
  const run = new PagedRun(model, [c.prompt_ids.length + 2], 16, dtype);
  return [
    run.step([{ seq: 0, tokens: c.prompt_ids }], false),
    run.step([{ seq: 0, tokens: [c.generated_ids[0]] }], false),
    run.step([{ seq: 0, tokens: [c.generated_ids[1]] }], false),
  ];
}

const chatF32 = new Map<number, Float32Array[]>();

test('svc-tiny-chat: top-5 logits at the first 3 generated positions match the reference (5 prompts)', () => {
  let maxErr = 0;
  for (const c of chatRef.cases) {
    const logits = chatLogits(c, 'f32');
    chatF32.set(c.case_id, logits);
    c.top5_logits_first3.forEach((top5, step) => {
      const row = logits[step];
      assert.equal(argmax(row, 0, row.length), top5[0].id, `case ${c.case_id} step ${step}: top-1`);
      assert.equal(top5[0].id, c.generated_ids[step]);
      for (const { id, logit } of top5) maxErr = Math.max(maxErr, Math.abs(row[id] - logit));
      const ours = [...row.keys()].sort((a, b) => row[b] - row[a]).slice(0, 5);
      assert.deepEqual(
        ours,
        top5.map((t) => t.id),
        `case ${c.case_id} step ${step}: top-5 order`,
      );
    });
  }
  console.log(`# svc-tiny-chat f32 KV: max abs error on reference top-5 logits ${maxErr.toExponential(2)}`);
  assert.ok(maxErr < 2e-3, `max error ${maxErr}`);
});

test('svc-tiny-chat on the native kernels (bf16 weights, bf16 KV, as served): reference top-5 and order', () => {
  let maxErr = 0;
  for (const c of chatRef.cases) {
    const logits = chatLogits(c, 'bf16', nativeOps);
    c.top5_logits_first3.forEach((top5, step) => {
      const row = logits[step];
      assert.equal(argmax(row, 0, row.length), top5[0].id, `case ${c.case_id} step ${step}: top-1`);
      for (const { id, logit } of top5) maxErr = Math.max(maxErr, Math.abs(row[id] - logit));
    });
  }
  console.log(`# svc-tiny-chat native, bf16 KV: max abs error on reference top-5 logits ${maxErr.toExponential(2)}`);
  assert.ok(maxErr < 0.1, `max error ${maxErr}`);
});

// The three shortest prompts (16, 164, 171 tokens) keep these two runs of the reference ops short.
const KV_DTYPE_CASES = new Set([28, 24, 0]);

for (const [dtype, tol] of [
  ['bf16', 0.1],
  ['fp8', 1.0],
] as const) {
  test(`svc-tiny-chat with ${dtype} KV: same top-1 at the reference positions, logits within ${tol} of f32 KV`, () => {
    let maxErr = 0;
    for (const c of chatRef.cases.filter((c) => KV_DTYPE_CASES.has(c.case_id))) {
      const base = chatF32.get(c.case_id) ?? chatLogits(c, 'f32');
      const logits = chatLogits(c, dtype);
      logits.forEach((row, step) => {
        assert.equal(argmax(row, 0, row.length), c.top5_logits_first3[step][0].id, `case ${c.case_id} step ${step}`);
        for (let v = 0; v < row.length; v++) maxErr = Math.max(maxErr, Math.abs(row[v] - base[step][v]));
      });
    }
    console.log(`# svc-tiny-chat ${dtype} KV: max abs logit difference from f32 KV ${maxErr.toExponential(2)}`);
    assert.ok(maxErr < tol, `max difference ${maxErr}`);
    assert.ok(maxErr > 0, `${dtype} KV should differ from f32 somewhere`);
  });
}

// The per-head-vector KV formats on the native kernels (reference attention would be slow here),
// against f32 KV on the same kernels. Measured max differences: nvfp4 1.1, turbo2 2.7, turbo3 1.6,
// turbo4 0.58, turbo8 0.04 (fp8: 0.36).
for (const [dtype, tol] of [
  ['nvfp4', 2],
  ['turbo2', 4],
  ['turbo3', 2.5],
  ['turbo4', 1],
  ['turbo8', 0.1],
] as const) {
  test(`svc-tiny-chat with ${dtype} KV (native): same top-1 at the reference positions, logits within ${tol} of f32 KV`, () => {
    let maxErr = 0;
    for (const c of chatRef.cases) {
      const base = chatLogits(c, 'f32', nativeOps);
      const logits = chatLogits(c, dtype, nativeOps);
      logits.forEach((row, step) => {
        assert.equal(argmax(row, 0, row.length), c.top5_logits_first3[step][0].id, `case ${c.case_id} step ${step}`);
        for (let v = 0; v < row.length; v++) maxErr = Math.max(maxErr, Math.abs(row[v] - base[step][v]));
      });
    }
    console.log(`# svc-tiny-chat ${dtype} KV (native): max abs logit difference from f32 KV ${maxErr.toExponential(2)}`);
    assert.ok(maxErr < tol, `max difference ${maxErr}`);
    assert.ok(maxErr > 0, `${dtype} KV should differ from f32 somewhere`);
  });
}

// ---- real text -----------------------------------------------------------------------------

function greedy(model: Model, prompt: number[], steps: number): number[] {
  const run = new PagedRun(model, [prompt.length + steps], 8);
  const out: number[] = [];
  let logits = run.step([{ seq: 0, tokens: prompt }], false);
  for (let i = 0; i < steps; i++) {
    const next = argmax(logits, 0, model.config.vocabSize);
    out.push(next);
    if (i + 1 < steps) logits = run.step([{ seq: 0, tokens: [next] }], false);
  }
  return out;
}

test('TinyStories-656K: greedy continuation of "Once upon a time" is deterministic English', () => {
  const dir = resolve(MODELS, 'tinystories-656k');
  const tokenizer = new Tokenizer(
    JSON.parse(readFileSync(resolve(dir, 'tokenizer.json'), 'utf8')),
    JSON.parse(readFileSync(resolve(dir, 'tokenizer_config.json'), 'utf8')),
  );
  const model = createModel(loadCheckpoint(dir, { fastLoad: true }), ops);
  const prompt = [1, ...tokenizer.encode('Once upon a time', { add_special_tokens: false }).ids];
  const first = greedy(model, prompt, 40);
  assert.deepEqual(greedy(model, prompt, 40), first, 'greedy decoding must be deterministic');
  const text = tokenizer.decode(first, { skip_special_tokens: true });
  console.log(`# TinyStories-656K: "Once upon a time${text}"`);
  const words: string[] = text.toLowerCase().match(/[a-z]+/g) ?? [];
  assert.ok(words.length >= 15, `too few words: ${text}`);
  const common = new Set(
    'a an the and was there little girl boy named she he her his they it to in on with of play played day one time upon who big very saw said loved liked happy went friend friends had is wanted lily tim ben sue mom dad sun park ball tree toy that so but not be see can'.split(
      ' ',
    ),
  );
  const known = words.filter((w) => common.has(w)).length;
  assert.ok(known / words.length > 0.5, `mostly unfamiliar words: ${text}`);
  assert.ok(!/(\b\w+\b)( \1\b){4,}/.test(text), `degenerate repetition: ${text}`);
});

/** SentencePiece pieces to text: ▁ is a space, <0xNN> a raw byte. */
function decodePieces(pieces: string[], ids: number[]): string {
  const bytes: number[] = [];
  for (const id of ids) {
    const p = pieces[id];
    const hex = /^<0x([0-9A-Fa-f]{2})>$/.exec(p);
    if (hex) bytes.push(parseInt(hex[1], 16));
    else bytes.push(...Buffer.from(p.replaceAll('\u2581', ' '), 'utf8'));
  }
  return Buffer.from(bytes).toString('utf8');
}

test('stories260K (GGUF): greedy from BOS tells the Lily story', () => {
  const checkpoint = loadCheckpoint(resolve(MODELS, 'stories260k-gguf', 'stories260K.gguf'), { fastLoad: true });
  const pieces = checkpoint.ggufMetadata?.['tokenizer.ggml.tokens'] as string[];
  assert.ok(Array.isArray(pieces), 'GGUF vocabulary');
  const ids = greedy(createModel(checkpoint, ops), [1], 30);
  const text = decodePieces(pieces, ids).trimStart();
  console.log(`# stories260K: "${text}"`);
  assert.ok(text.startsWith('Once upon a time, there was a little girl named Lily'), text);
});

test('quant-zoo GGUF: both load modes and an owned copy of the weights give the same greedy tokens', () => {
  for (const type of ['q8_0', 'q4_0', 'f32', 'bf16']) {
    const path = resolve(MODELS, 'quant-zoo', `stories260k-wide-${type}.gguf`);
    const fast = greedy(createModel(loadCheckpoint(path, { fastLoad: true }), nativeOps), [1], 24);
    const mapped = greedy(createModel(loadCheckpoint(path, { fastLoad: false }), nativeOps), [1], 24);
    // What the owned-buffer loader built: every tensor in memory of its own, nothing released.
    const ck = loadCheckpoint(path, { fastLoad: false });
    const owned: Checkpoint = {
      ...ck,
      residency: undefined,
      tensors: new Map([...ck.tensors].map(([n, t]) => [n, { ...t, data: t.data.slice() }])),
    };
    const copied = greedy(createModel(owned, nativeOps), [1], 24);
    assert.deepEqual(fast, copied, `${type}: fast load`);
    assert.deepEqual(mapped, copied, `${type}: --no-fast-load`);
  }
});
