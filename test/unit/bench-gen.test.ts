// The benchmark's checkpoint generator (bench/gen-checkpoints.ts) in --small mode: its GGUF and
// safetensors output load in svc with the expected config, shapes and dtypes, carry the real
// Qwen2.5 tokenizer, hold the same weights in every format (llama Q/K interleave undone), mix
// the K-quant types per tensor as llama.cpp's Q4_K_M / Q5_K_M do, are byte-for-byte
// deterministic, and are reused from the cache. The qwen3moe shape: llama.cpp's qwen3moe GGUF
// (stacked *_exps, F32 router, expert metadata), HF's per-expert safetensors with the same
// weights, and the per-token active bytes of the roofline. The qwen35 shape: a Qwen3.5 text
// checkpoint (hybrid Gated DeltaNet + gated attention) that svc loads and runs with its recurrent state.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  activeBytesOf,
  activeBytesOfArtifact,
  ensureCheckpoint,
  ggmlTypeOf,
  useMoreBits,
  weightBytesOf,
  type Artifact,
} from '../../bench/gen-checkpoints.js';
import { openLlamaEngine } from '../../bench/harness.js';
import { shapeOf, tensorSpecs, type ModelShape } from '../../bench/shapes.js';
import { dequantize } from '../../src/kernels/dtypes.js';
import { readGgufHeader, GGML_TYPE } from '../../src/model/loaders/gguf-header.js';
import { loadCheckpoint } from '../../src/model/loaders/index.js';
import { createModel } from '../../src/model/architectures/index.js';
import type { ForwardBatch } from '../../src/model/architectures/model.js';
import { allocateKvCache } from '../../src/engine/kv-cache.js';
import { nativeOps } from '../../src/kernels/native.js';
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

// ---- qwen3moe ----

/** The safetensors header of an HF directory's model.safetensors: name → dtype, shape, byte range (file offsets). */
function safetensorsIndex(dir: string): {
  tensors: Map<string, { dtype: string; shape: number[]; begin: number; end: number }>;
  bytes: Buffer;
} {
  const bytes = readFileSync(join(dir, 'model.safetensors'));
  const headerLen = Number(bytes.readBigUInt64LE(0));
  const header = JSON.parse(bytes.subarray(8, 8 + headerLen).toString('utf8')) as Record<string, unknown>;
  const tensors = new Map<string, { dtype: string; shape: number[]; begin: number; end: number }>();
  for (const [name, v] of Object.entries(header)) {
    if (name === '__metadata__') continue;
    const t = v as { dtype: string; shape: number[]; data_offsets: [number, number] };
    tensors.set(name, { dtype: t.dtype, shape: t.shape, begin: 8 + headerLen + t.data_offsets[0], end: 8 + headerLen + t.data_offsets[1] });
  }
  return { tensors, bytes };
}

test('qwen3moe Q8_0 GGUF: llama.cpp qwen3moe metadata, stacked expert tensors, F32 router', () => {
  const shape = shapeOf('qwen3moe', true);
  const moe = shape.moe!;
  const a = small('qwen3moe-q8_0');
  const header = readGgufHeader(a.path);
  const m = header.metadata;
  assert.equal(m['general.architecture'], 'qwen3moe');
  assert.equal(m['general.file_type'], 7);
  assert.equal(m['qwen3moe.expert_count'], moe.numExperts);
  assert.equal(m['qwen3moe.expert_used_count'], moe.numExpertsPerTok);
  assert.equal(m['qwen3moe.expert_feed_forward_length'], moe.moeIntermediateSize);
  assert.equal(m['qwen3moe.block_count'], shape.numLayers);
  assert.equal(m['qwen3moe.embedding_length'], shape.hiddenSize);
  assert.equal(m['qwen3moe.attention.head_count'], shape.numHeads);
  assert.equal(m['qwen3moe.attention.head_count_kv'], shape.numKvHeads);
  assert.equal(m['qwen3moe.attention.key_length'], shape.headDim);
  assert.equal(m['qwen3moe.rope.freq_base'], 1e6);
  assert.equal(m['tokenizer.ggml.pre'], 'qwen2');
  // Per layer: attn_norm, q, k, v, o, q_norm, k_norm, ffn_norm, router, three expert stacks.
  assert.equal(header.tensors.length, 2 + shape.numLayers * 12);
  assert.ok(!header.tensors.some((t) => t.name === 'output.weight'), 'embeddings are tied');
  assert.ok(!header.tensors.some((t) => /ffn_(gate|up|down)\.weight$/.test(t.name)), 'no dense FFN');
  const h = shape.hiddenSize;
  const f = moe.moeIntermediateSize;
  const e = moe.numExperts;
  const t = (name: string) => header.tensors.find((x) => x.name === name)!;
  for (const l of [0, 1]) {
    // ggml order (innermost first), as llama.cpp's create_tensor asks for them.
    assert.deepEqual(t(`blk.${l}.ffn_gate_inp.weight`).dims, [h, e]);
    assert.equal(t(`blk.${l}.ffn_gate_inp.weight`).ggmlType, GGML_TYPE.F32);
    assert.deepEqual(t(`blk.${l}.ffn_gate_exps.weight`).dims, [h, f, e]);
    assert.deepEqual(t(`blk.${l}.ffn_up_exps.weight`).dims, [h, f, e]);
    assert.deepEqual(t(`blk.${l}.ffn_down_exps.weight`).dims, [f, h, e]);
    for (const p of ['gate', 'up', 'down']) assert.equal(t(`blk.${l}.ffn_${p}_exps.weight`).ggmlType, GGML_TYPE.Q8_0);
    assert.deepEqual(t(`blk.${l}.attn_q.weight`).dims, [h, shape.numHeads * shape.headDim]);
    assert.deepEqual(t(`blk.${l}.attn_k_norm.weight`).dims, [shape.headDim]);
    assert.equal(t(`blk.${l}.attn_q_norm.weight`).ggmlType, GGML_TYPE.F32);
  }
  assert.equal(t('token_embd.weight').ggmlType, GGML_TYPE.Q8_0);
  assert.equal(a.weightBytes, weightBytesOf(shape, 'q8_0'));
});

test("qwen3moe Q4_K_M: llama.cpp's mix, ffn_down_exps following ffn_down; the router stays F32", () => {
  const shape = shapeOf('qwen3moe', true);
  const header = readGgufHeader(small('qwen3moe-q4_k_m').path);
  const typeOf = (name: string) => header.tensors.find((x) => x.name === name)!.ggmlType;
  assert.equal(header.metadata['general.file_type'], 15);
  assert.equal(typeOf('token_embd.weight'), GGML_TYPE.Q6_K);
  // Two layers: use_more_bits picks layer 1 only (as for the dense shapes).
  for (const [l, more] of [
    [0, GGML_TYPE.Q4_K],
    [1, GGML_TYPE.Q6_K],
  ] as const) {
    assert.equal(typeOf(`blk.${l}.ffn_down_exps.weight`), more, `ffn_down_exps of layer ${l}`);
    assert.equal(typeOf(`blk.${l}.attn_v.weight`), more, `attn_v of layer ${l}`);
    for (const p of ['ffn_gate_exps', 'ffn_up_exps', 'attn_q', 'attn_k', 'attn_output'])
      assert.equal(typeOf(`blk.${l}.${p}.weight`), GGML_TYPE.Q4_K, `${p} of layer ${l}`);
    assert.equal(typeOf(`blk.${l}.ffn_gate_inp.weight`), GGML_TYPE.F32);
  }
  // Exactly 8 experts is llama-quantize's Mixtral case: attn_v and attn_k Q8_0, attn_output Q5_K.
  const mixtralish: ModelShape = { ...shape, moe: { ...shape.moe!, numExperts: 8, numExpertsPerTok: 2 } };
  const spec = (name: string) => tensorSpecs(mixtralish).find((x) => x.ggufName === name)!;
  assert.equal(ggmlTypeOf(spec('blk.0.attn_v.weight'), 'q4_k_m', mixtralish), GGML_TYPE.Q8_0);
  assert.equal(ggmlTypeOf(spec('blk.0.attn_k.weight'), 'q4_k_m', mixtralish), GGML_TYPE.Q8_0);
  assert.equal(ggmlTypeOf(spec('blk.0.attn_output.weight'), 'q4_k_m', mixtralish), GGML_TYPE.Q5_K);
  assert.equal(ggmlTypeOf(spec('blk.1.ffn_down_exps.weight'), 'q4_k_m', mixtralish), GGML_TYPE.Q6_K);
});

test("qwen3moe BF16: HF config and per-expert safetensors holding the GGUF stacks' weights", () => {
  const shape = shapeOf('qwen3moe', true);
  const moe = shape.moe!;
  const dir = small('qwen3moe-bf16').path;
  const config = JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')) as Record<string, unknown>;
  assert.deepEqual(config.architectures, ['Qwen3MoeForCausalLM']);
  assert.equal(config.model_type, 'qwen3_moe');
  assert.equal(config.num_experts, moe.numExperts);
  assert.equal(config.num_experts_per_tok, moe.numExpertsPerTok);
  assert.equal(config.moe_intermediate_size, moe.moeIntermediateSize);
  assert.equal(config.norm_topk_prob, true);
  assert.equal(config.decoder_sparse_step, 1);
  assert.deepEqual(config.mlp_only_layers, []);
  assert.equal(config.tie_word_embeddings, true);
  assert.equal(config.head_dim, shape.headDim);

  const { tensors, bytes } = safetensorsIndex(dir);
  const h = shape.hiddenSize;
  const f = moe.moeIntermediateSize;
  assert.deepEqual(tensors.get('model.layers.0.mlp.gate.weight')?.shape, [moe.numExperts, h]);
  for (let x = 0; x < moe.numExperts; x++) {
    assert.deepEqual(tensors.get(`model.layers.1.mlp.experts.${x}.gate_proj.weight`)?.shape, [f, h]);
    assert.deepEqual(tensors.get(`model.layers.1.mlp.experts.${x}.up_proj.weight`)?.shape, [f, h]);
    assert.deepEqual(tensors.get(`model.layers.1.mlp.experts.${x}.down_proj.weight`)?.shape, [h, f]);
  }
  assert.ok(![...tensors.keys()].some((n) => n.includes('{') || /mlp\.(gate|up|down)_proj/.test(n)), 'no stacked or dense FFN names');
  assert.equal(tensors.size, 2 + shape.numLayers * (9 + 3 * moe.numExperts));
  assert.ok([...tensors.values()].every((t) => t.dtype === 'BF16'));

  // Expert 5 of layer 1's down stack in the Q8_0 GGUF against its own HF tensor; the router too.
  const gguf = small('qwen3moe-q8_0').path;
  const file = readFileSync(gguf);
  const header = readGgufHeader(gguf);
  const compare = (ggufName: string, hfName: string, rows: number, cols: number, firstRow: number, dtype: 'q8_0' | 'f32') => {
    const g = header.tensors.find((x) => x.name === ggufName)!;
    const rowBytes = dtype === 'q8_0' ? (cols / 32) * 34 : cols * 4;
    const x = dequantize(dtype, file.subarray(g.offset + firstRow * rowBytes, g.offset + (firstRow + rows) * rowBytes), rows, cols);
    const hf = tensors.get(hfName)!;
    const y = dequantize('bf16', bytes.subarray(hf.begin, hf.end), rows, cols);
    let maxErr = 0;
    for (let i = 0; i < x.length; i++) maxErr = Math.max(maxErr, Math.abs(x[i] - y[i]));
    // Q8_0 / BF16 rounding is ~1e-3 here; another expert's rows would differ by ~0.03.
    assert.ok(maxErr < 2e-3, `${hfName}: max |gguf − bf16| = ${maxErr}`);
  };
  compare('blk.1.ffn_down_exps.weight', 'model.layers.1.mlp.experts.5.down_proj.weight', h, f, 5 * h, 'q8_0');
  compare('blk.0.ffn_gate_exps.weight', 'model.layers.0.mlp.experts.15.gate_proj.weight', f, h, 15 * f, 'q8_0');
  compare('blk.0.ffn_gate_inp.weight', 'model.layers.0.mlp.gate.weight', moe.numExperts, h, 0, 'f32');
});

test('qwen3moe: generated deterministically, GGUF and HF directory', () => {
  const a = small('qwen3moe-q8_0');
  const b = small('qwen3moe-q8_0', cacheB);
  assert.equal(b.generated, true);
  assert.equal(sha256(b.path), sha256(a.path));
  const hfA = small('qwen3moe-bf16');
  const hfB = small('qwen3moe-bf16', cacheB);
  assert.equal(sha256(join(hfB.path, 'model.safetensors')), sha256(join(hfA.path, 'model.safetensors')));
  assert.equal(ensureCheckpoint('qwen3moe-q8_0', { small: true, cacheDir: cacheA }).generated, false);
});

test('active bytes per token: top-k of each expert stack, the LM head and one embedding row', () => {
  const q8 = (elements: number) => (elements / 32) * 34;
  for (const small of [true, false]) {
    const s = shapeOf('qwen3moe', small);
    const moe = s.moe!;
    const h = s.hiddenSize;
    const attention = q8(2 * h * s.numHeads * s.headDim + 2 * h * s.numKvHeads * s.headDim);
    const experts = q8(3 * h * moe.moeIntermediateSize) * moe.numExpertsPerTok;
    const router = moe.numExperts * h * 4;
    const norms = (2 * h + 2 * s.headDim) * 4;
    const embedding = q8(s.vocabSize * h);
    const b = activeBytesOf(s, 'q8_0');
    assert.equal(b.attention, s.numLayers * attention);
    assert.equal(b.experts, s.numLayers * experts);
    assert.equal(b.router, s.numLayers * router);
    assert.equal(b.lmHead, embedding);
    assert.equal(b.embeddingRow, q8(h));
    assert.equal(b.denseFfn, 0);
    assert.equal(b.norms, s.numLayers * norms + h * 4);
    assert.equal(b.active, b.attention + b.experts + b.router + b.lmHead + b.embeddingRow + b.norms);
    assert.equal(b.total, weightBytesOf(s, 'q8_0'));
    // Everything but the experts is read whole, the experts' top-k share of theirs.
    const allExperts = s.numLayers * q8(3 * h * moe.moeIntermediateSize) * moe.numExperts;
    assert.equal(b.total - allExperts + b.experts + b.embeddingRow, b.active);
  }
  // The full shape: 2.7 GiB of Q8_0, 0.58 GiB read per token.
  const full = activeBytesOf(shapeOf('qwen3moe', false), 'q8_0');
  assert.ok(Math.abs(full.total / 2 ** 30 - 2.675) < 0.005, `total ${full.total / 2 ** 30} GiB`);
  assert.ok(Math.abs(full.active / 2 ** 30 - 0.583) < 0.005, `active ${full.active / 2 ** 30} GiB`);
  // From the file's header, the same figure; a dense shape reads everything plus one embedding row.
  assert.deepEqual(activeBytesOfArtifact(small('qwen3moe-q4_k_m')), activeBytesOf(shapeOf('qwen3moe', true), 'q4_k_m'));
  const dense = activeBytesOf(shapeOf('qwen3', true), 'q8_0');
  assert.equal(dense.active, weightBytesOf(shapeOf('qwen3', true), 'q8_0') + q8(256));
  assert.equal(dense.experts + dense.router, 0);
});

// The llama.cpp side of bench/moe.ts on the tiny checkpoint, when a native llama-server is named.
const llamaServer = process.env.SVC_BENCH_LLAMA_SERVER;
test(
  'qwen3moe GGUF loads and decodes in llama.cpp (llama-server)',
  { skip: llamaServer ? false : 'set SVC_BENCH_LLAMA_SERVER to a llama-server binary' },
  async () => {
    for (const id of ['qwen3moe-q8_0', 'qwen3moe-q4_k_m']) {
      const engine = await openLlamaEngine(small(id).path, {
        llamaServer: llamaServer!,
        threads: 2,
        contextTokens: 64,
        parallel: 1,
        batchTokens: 16,
      });
      try {
        const [timing] = await engine.generate([[9707, 1879, 11, 220, 872, 3555, 374, 264]], 6);
        assert.equal(timing.tokens, 6, id);
      } finally {
        await engine.close();
      }
    }
  },
);

// ---- qwen35 (hybrid) ----

test('qwen35 BF16: a Qwen3.5 text config.json and tensor names; svc reads them as its qwen3_5 architecture', () => {
  const shape = shapeOf('qwen35', true);
  const hy = shape.hybrid!;
  const a = small('qwen35-bf16');
  const config = JSON.parse(readFileSync(join(a.path, 'config.json'), 'utf8')) as Record<string, unknown>;
  assert.deepEqual(config.architectures, ['Qwen3_5ForCausalLM']);
  assert.equal(config.model_type, 'qwen3_5_text');
  assert.deepEqual(config.layer_types, ['linear_attention', 'linear_attention', 'linear_attention', 'full_attention']);
  assert.equal(config.linear_num_value_heads, hy.linearNumValueHeads);
  assert.equal(config.partial_rotary_factor, 0.25);
  assert.throws(() => ensureCheckpoint('qwen35-q8_0', { small: true, cacheDir: cacheA }), /Hugging Face directory only/);

  const { tensors } = safetensorsIndex(a.path);
  const key = hy.linearNumKeyHeads * hy.linearKeyHeadDim;
  const value = hy.linearNumValueHeads * hy.linearValueHeadDim;
  assert.deepEqual(tensors.get('model.layers.0.linear_attn.in_proj_qkv.weight')?.shape, [2 * key + value, shape.hiddenSize]);
  assert.deepEqual(tensors.get('model.layers.0.linear_attn.conv1d.weight')?.shape, [2 * key + value, 1, hy.linearConvKernelDim]);
  assert.deepEqual(tensors.get('model.layers.2.linear_attn.A_log')?.shape, [hy.linearNumValueHeads]);
  assert.deepEqual(tensors.get('model.layers.3.self_attn.q_proj.weight')?.shape, [2 * shape.numHeads * shape.headDim, shape.hiddenSize]);
  assert.ok(!tensors.has('model.layers.3.linear_attn.A_log') && !tensors.has('model.layers.0.self_attn.q_proj.weight'));
  // Per linear layer 9 tensors + 2 norms + 3 MLP; per full layer 6 + 2 + 3; embedding and final norm.
  assert.equal(tensors.size, 2 + 3 * 14 + 11);

  const ck = load(a);
  const c = ck.config;
  assert.equal(c.architecture, 'qwen3_5');
  assert.deepEqual(c.layerTypes, config.layer_types);
  assert.deepEqual(c.linearAttention, {
    convKernel: hy.linearConvKernelDim,
    numKeyHeads: hy.linearNumKeyHeads,
    numValueHeads: hy.linearNumValueHeads,
    keyHeadDim: hy.linearKeyHeadDim,
    valueHeadDim: hy.linearValueHeadDim,
  });
  assert.equal(c.rotaryDim, shape.headDim / 4);
  assert.equal(c.ropeTheta, 1e7);
  assert.ok(c.tieWordEmbeddings);
  const values = (name: string) => {
    const t = ck.tensors.get(name)!;
    return dequantize(t.dtype, t.data, 1, t.data.length / 2);
  };
  // A_log = log(uniform(1, 16)), dt_bias 1, the (1 + w) norms stored as 0, the gated norm 1.
  const aLog = values('model.layers.1.linear_attn.A_log');
  assert.ok(aLog.every((v) => v >= 0 && v < Math.log(16.1)) && new Set(aLog).size > 1, `A_log ${aLog.join(', ')}`);
  assert.ok(values('model.layers.1.linear_attn.dt_bias').every((v) => v === 1));
  assert.ok(values('model.layers.0.input_layernorm.weight').every((v) => v === 0));
  assert.ok(values('model.layers.3.self_attn.k_norm.weight').every((v) => v === 0));
  assert.ok(values('model.layers.0.linear_attn.norm.weight').every((v) => v === 1));
  let total = 0;
  for (const [name, t] of ck.tensors) if (name !== 'lm_head.weight') total += t.data.length;
  assert.equal(a.weightBytes, total);
});

test('qwen35 BF16 runs in svc: prefill then a decode step through its recurrent state, finite logits', () => {
  const model = createModel(load(small('qwen35-bf16')), nativeOps);
  const c = model.config;
  const state = model.createRecurrentState?.(1);
  assert.ok(state, 'a hybrid model has recurrent state');
  const blockSize = 16;
  const kv = allocateKvCache(c, 2, blockSize, 'f32');
  const blockTable = Int32Array.of(0, 1);
  const prompt = [9707, 1879, 11, 220, 151644, 872, 198, 3555, 374, 264, 1273, 30, 151645, 198, 151644, 77091, 198, 40, 1079, 3351];
  // `len` tokens of the prompt from position `from`, continuing slot 0 (or starting it at 0).
  const step = (from: number, len: number): Float32Array => {
    const tokens = Int32Array.from(prompt.slice(from, from + len));
    const positions = Int32Array.from({ length: len }, (_, i) => from + i);
    const batch: ForwardBatch = {
      tokens,
      positions,
      slots: positions,
      seqs: [{ qStart: 0, qLen: len, kvLen: from + len, blockTable }],
      logitRows: Int32Array.of(len - 1),
      stateSlots: Int32Array.of(0),
    };
    return model.forward(batch, kv, undefined, state).slice();
  };
  const n = prompt.length;
  const whole = step(0, n);
  step(0, n - 1);
  const decoded = step(n - 1, 1);
  assert.equal(whole.length, c.vocabSize);
  let maxAbs = 0;
  let maxDiff = 0;
  let sumSq = 0;
  for (let i = 0; i < whole.length; i++) {
    assert.ok(Number.isFinite(whole[i]) && Number.isFinite(decoded[i]), `logit ${i}: ${whole[i]} / ${decoded[i]}`);
    maxAbs = Math.max(maxAbs, Math.abs(whole[i]));
    maxDiff = Math.max(maxDiff, Math.abs(whole[i] - decoded[i]));
    sumSq += whole[i] * whole[i];
  }
  const rms = Math.sqrt(sumSq / whole.length);
  // Random weights: logits spread, not blown up (the final norm times a 0.02-std embedding, ~0.3 RMS).
  assert.ok(rms > 0.05 && maxAbs < 20, `logit rms ${rms}, max |logit| ${maxAbs}`);
  // The decode step resumed from the state the 19-token prefill left in slot 0.
  assert.ok(maxDiff < 2e-2 * Math.max(1, maxAbs), `prefill vs prefill + decode: max diff ${maxDiff}`);
});
