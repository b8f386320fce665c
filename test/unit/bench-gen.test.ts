// The benchmark's checkpoint generator (bench/gen-checkpoints.ts) in --small mode: its GGUF and
// safetensors output load in svc with the expected config, shapes and dtypes, carry the real
// Qwen2.5 tokenizer, hold the same weights in every format (llama Q/K interleave undone), mix
// the K-quant types per tensor as llama.cpp's Q4_K_M / Q5_K_M do, are byte-for-byte
// deterministic, and are reused from the cache.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ensureCheckpoint, useMoreBits, weightBytesOf, type Artifact } from '../../bench/gen-checkpoints.js';
import { shapeOf } from '../../bench/shapes.js';
import { dequantize } from '../../src/kernels/dtypes.js';
import { readGgufHeader, GGML_TYPE } from '../../src/model/loaders/gguf-header.js';
import { loadCheckpoint } from '../../src/model/loaders/index.js';
import { loadTokenizer } from '../../src/model/tokenizer.js';
import type { Checkpoint } from '../../src/model/types.js';

const cacheA = mkdtempSync(join(tmpdir(), 'svc-bench-gen-a-'));
const cacheB = mkdtempSync(join(tmpdir(), 'svc-bench-gen-b-'));
process.on('exit', () => {
  rmSync(cacheA, { recursive: true, force: true });
  rmSync(cacheB, { recursive: true, force: true });
});

const artifacts = new Map<string, Artifact>();
function small(id: string, cacheDir = cacheA): Artifact {
  if (cacheDir === cacheA && artifacts.has(id)) return artifacts.get(id)!;
  const a = ensureCheckpoint(id, { small: true, cacheDir });
  if (cacheDir === cacheA) artifacts.set(id, a);
  return a;
}

const load = (a: Artifact): Checkpoint => loadCheckpoint(a.path, { fastLoad: true });

function sha256(path: string): string {
  return createHash('sha256').update(readFileSync(path)).digest('hex');
}

test('qwen3 Q8_0 GGUF: header, config, tensor shapes and dtypes', () => {
  const a = small('qwen3-q8_0');
  const shape = shapeOf('qwen3', true);
  const header = readGgufHeader(a.path);
  assert.equal(header.metadata['general.architecture'], 'qwen3');
  assert.equal(header.metadata['tokenizer.ggml.model'], 'gpt2');
  assert.equal(header.metadata['tokenizer.ggml.pre'], 'qwen2');
  assert.equal((header.metadata['tokenizer.ggml.tokens'] as string[]).length, 151936);
  assert.equal((header.metadata['tokenizer.ggml.token_type'] as Int32Array).length, 151936);
  assert.ok((header.metadata['tokenizer.ggml.merges'] as string[]).length > 150000);
  assert.equal(header.metadata['tokenizer.ggml.eos_token_id'], 151645);
  assert.match(String(header.metadata['tokenizer.chat_template']), /im_start/);
  assert.equal(header.tensors.length, 2 + shape.numLayers * 11);
  const embd = header.tensors.find((t) => t.name === 'token_embd.weight')!;
  assert.deepEqual(embd.dims, [shape.hiddenSize, shape.vocabSize]);
  assert.equal(embd.ggmlType, GGML_TYPE.Q8_0);
  assert.equal(header.tensors.find((t) => t.name === 'blk.0.attn_q_norm.weight')!.ggmlType, GGML_TYPE.F32);
  assert.ok(!header.tensors.some((t) => t.name === 'output.weight'), 'embeddings are tied');

  const ck = load(a);
  const c = ck.config;
  assert.equal(c.architecture, 'qwen3');
  assert.deepEqual(
    [c.hiddenSize, c.numLayers, c.numHeads, c.numKvHeads, c.headDim, c.intermediateSize, c.vocabSize, c.ropeTheta, c.tieWordEmbeddings],
    [shape.hiddenSize, shape.numLayers, shape.numHeads, shape.numKvHeads, shape.headDim, shape.intermediateSize, 151936, 1e6, true],
  );
  const q = ck.tensors.get('model.layers.1.self_attn.q_proj.weight')!;
  assert.equal(q.dtype, 'q8_0');
  assert.deepEqual(q.shape, [shape.numHeads * shape.headDim, shape.hiddenSize]);
  assert.deepEqual(ck.tensors.get('model.layers.1.self_attn.k_norm.weight')!.shape, [shape.headDim]);
  assert.equal(ck.tensors.get('model.norm.weight')!.dtype, 'f32');
  assert.equal(ck.tensors.get('lm_head.weight')!.data, ck.tensors.get('model.embed_tokens.weight')!.data);
});

test('llama Q4_0 GGUF and BF16 safetensors load with the llama config', () => {
  const shape = shapeOf('llama', true);
  for (const [id, dtype] of [
    ['llama-q4_0', 'q4_0'],
    ['llama-bf16', 'bf16'],
  ] as const) {
    const ck = load(small(id));
    assert.equal(ck.config.architecture, 'llama', id);
    assert.equal(ck.config.numKvHeads, shape.numKvHeads, id);
    assert.equal(ck.config.ropeTheta, 5e5, id);
    assert.ok(!ck.tensors.has('model.layers.0.self_attn.q_norm.weight'), `${id}: no q/k norm`);
    assert.ok(ck.config.tieWordEmbeddings, id);
    const down = ck.tensors.get('model.layers.0.mlp.down_proj.weight')!;
    assert.equal(down.dtype, dtype, id);
    assert.deepEqual(down.shape, [shape.hiddenSize, shape.intermediateSize], id);
    assert.deepEqual(ck.tensors.get('model.embed_tokens.weight')!.shape, [151936, shape.hiddenSize], id);
  }
  assert.equal(load(small('llama-bf16')).format, 'safetensors');
});

test('every format holds the same weights (llama Q/K rows un-interleaved by the loader)', () => {
  const q8 = load(small('llama-q8_0'));
  const bf16 = load(small('llama-bf16'));
  for (const name of [
    'model.layers.0.self_attn.q_proj.weight',
    'model.layers.1.self_attn.k_proj.weight',
    'model.layers.0.mlp.up_proj.weight',
  ]) {
    const a = q8.tensors.get(name)!;
    const b = bf16.tensors.get(name)!;
    const rows = a.shape[0];
    const cols = a.shape[1];
    const x = dequantize(a.dtype, a.data, rows, cols);
    const y = dequantize(b.dtype, b.data, rows, cols);
    let maxErr = 0,
      sumSq = 0;
    for (let i = 0; i < x.length; i++) {
      maxErr = Math.max(maxErr, Math.abs(x[i] - y[i]));
      sumSq += y[i] * y[i];
    }
    // Q8_0 steps are ~amax/127 ≈ 6e-4 here; a row mix-up would differ by ~0.03 (the weights' spread).
    assert.ok(maxErr < 2e-3, `${name}: max |q8_0 − bf16| = ${maxErr}`);
    const std = Math.sqrt(sumSq / y.length);
    assert.ok(std > 0.015 && std < 0.025, `${name}: std ${std} (expected ≈ 0.02)`);
  }
  const norm = bf16.tensors.get('model.layers.0.input_layernorm.weight')!;
  assert.ok(dequantize(norm.dtype, norm.data, 1, norm.shape[0]).every((v) => v === 1));
});

test("use_more_bits picks llama.cpp's layers for the two shapes' depths", () => {
  const layers = (n: number) => Array.from({ length: n }, (_, i) => i).filter((i) => useMoreBits(i, n));
  // Qwen3-0.6B (28 layers): first 3, last 4, and every third from layer 5.
  assert.deepEqual(layers(28), [0, 1, 2, 5, 8, 11, 14, 17, 20, 23, 24, 25, 26, 27]);
  // Llama-3.2-1B (16 layers).
  assert.deepEqual(layers(16), [0, 1, 4, 7, 10, 13, 14, 15]);
  // The small shapes (2 layers): layer 1 only, so both K types of a mix are exercised.
  assert.deepEqual(layers(2), [1]);
});

test('Q4_K_M and Q5_K_M: per-tensor types by the recipe, loadable, the same weights as BF16', () => {
  for (const [model, format, base, fileType] of [
    ['qwen3', 'q4_k_m', GGML_TYPE.Q4_K, 15],
    ['llama', 'q5_k_m', GGML_TYPE.Q5_K, 17],
  ] as const) {
    const id = `${model}-${format}`;
    const a = small(id);
    const header = readGgufHeader(a.path);
    assert.equal(header.metadata['general.file_type'], fileType, id);
    const typeOf = (name: string) => header.tensors.find((t) => t.name === name)!.ggmlType;
    assert.ok(!header.tensors.some((t) => t.name === 'output.weight'), `${id}: embeddings are tied`);
    assert.equal(typeOf('token_embd.weight'), GGML_TYPE.Q6_K, `${id}: tied embedding takes the output's Q6_K`);
    assert.equal(typeOf('output_norm.weight'), GGML_TYPE.F32, id);
    for (const t of ['attn_v', 'ffn_down']) {
      assert.equal(typeOf(`blk.0.${t}.weight`), base, `${id}: ${t} of layer 0`);
      assert.equal(typeOf(`blk.1.${t}.weight`), GGML_TYPE.Q6_K, `${id}: ${t} of layer 1 (use_more_bits)`);
    }
    for (const t of ['attn_q', 'attn_k', 'attn_output', 'ffn_gate', 'ffn_up'])
      for (const l of [0, 1]) assert.equal(typeOf(`blk.${l}.${t}.weight`), base, `${id}: ${t} of layer ${l}`);

    const ck = load(a);
    const bf16 = load(small(`${model}-bf16`));
    assert.equal(ck.tensors.get('model.embed_tokens.weight')!.dtype, 'q6_k', id);
    assert.equal(ck.tensors.get('model.layers.0.mlp.up_proj.weight')!.dtype, format === 'q4_k_m' ? 'q4_k' : 'q5_k', id);
    for (const name of ['model.layers.0.self_attn.q_proj.weight', 'model.layers.1.mlp.down_proj.weight', 'model.embed_tokens.weight']) {
      const t = ck.tensors.get(name)!;
      const ref = bf16.tensors.get(name)!;
      const [rows, cols] = t.shape;
      const x = dequantize(t.dtype, t.data, rows, cols);
      const y = dequantize(ref.dtype, ref.data, rows, cols);
      let se = 0,
        ss = 0;
      for (let i = 0; i < x.length; i++) {
        se += (x[i] - y[i]) ** 2;
        ss += y[i] * y[i];
      }
      // 4-bit levels over a sub-block's range leave ~8% RMS error; a row or block mix-up ~140%.
      const rel = Math.sqrt(se / ss);
      assert.ok(rel < (t.dtype === 'q4_k' ? 0.12 : 0.06), `${id} ${name} (${t.dtype}): relative RMS error ${rel}`);
    }
    let total = 0;
    for (const [name, t] of ck.tensors) if (name !== 'lm_head.weight') total += t.data.length;
    assert.equal(a.weightBytes, total, `${id}: weightBytes`);
    assert.equal(a.quantizer, 'built-in quantizer', id);
  }
});

test('the embedded tokenizer is the real Qwen2.5 one, in the GGUF and the HF directory', () => {
  const fromGguf = loadTokenizer(small('qwen3-q8_0').path);
  const fromDir = loadTokenizer(small('llama-bf16').path);
  const text = 'Hello world, <|im_start|>user';
  assert.deepEqual(fromGguf.encode(text), [9707, 1879, 11, 220, 151644, 872]);
  assert.deepEqual(fromDir.encode(text), fromGguf.encode(text));
  assert.equal(fromGguf.eosToken, '<|im_end|>');
});

test('weightBytesOf matches the tensor data the loader sees', () => {
  const a = small('qwen3-q8_0');
  const ck = load(a);
  let total = 0;
  for (const [name, t] of ck.tensors) if (name !== 'lm_head.weight') total += t.data.length;
  assert.equal(a.weightBytes, total);
  assert.equal(weightBytesOf(shapeOf('qwen3', true), 'q8_0'), total);
});

test('deterministic: the same bytes in another cache; a second call reuses the cache', () => {
  const a = small('llama-q4_0');
  const again = ensureCheckpoint('llama-q4_0', { small: true, cacheDir: cacheA });
  assert.equal(again.generated, false);
  const b = small('llama-q4_0', cacheB);
  assert.equal(b.generated, true);
  assert.equal(sha256(b.path), sha256(a.path));
  const hfA = small('llama-bf16');
  const hfB = small('llama-bf16', cacheB);
  assert.equal(sha256(join(hfB.path, 'model.safetensors')), sha256(join(hfA.path, 'model.safetensors')));
});
