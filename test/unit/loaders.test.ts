// Checkpoint loading: safetensors (single, sharded, tied), GGUF (names, shapes, Q/K un-interleave),
// config normalization, both byte loaders, and the errors for broken files.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadCheckpoint, loadSafetensorsCheckpoint, parseSafetensors } from '../../src/model/loaders/index.js';
import { unpermuteRows } from '../../src/model/loaders/gguf.js';
import { GGML_TYPE, readGgufHeader } from '../../src/model/loaders/gguf-header.js';
import { configFromGguf, configFromHf } from '../../src/model/model-config.js';
import { ALL_DTYPES, WEIGHT_DTYPES, dequantize } from '../../src/kernels/dtypes.js';
import type { Checkpoint, Tensor } from '../../src/model/types.js';
import { FIXTURES, MODELS, TINY_CHAT } from '../helpers/paths.js';

const fixture = (name: string) => join(FIXTURES, name);

function loadFixture(model: string, fastLoad = true): Checkpoint {
  return loadSafetensorsCheckpoint({
    files: [fixture(`${model}.safetensors`)],
    configPath: fixture(`${model}_config.json`),
    fastLoad,
  });
}

function toF32(t: Tensor): Float32Array {
  const cols = t.shape[t.shape.length - 1];
  const rows = t.shape.slice(0, -1).reduce((a, b) => a * b, 1);
  return dequantize(t.dtype, t.data, rows, cols);
}

function tempDir(): string {
  return mkdtempSync(join(tmpdir(), 'svc-loaders-'));
}

/** A safetensors file from a JSON header object and a data section. */
function safetensorsBytes(header: unknown, data: Uint8Array): Uint8Array {
  const json = Buffer.from(JSON.stringify(header));
  const out = new Uint8Array(8 + json.length + data.length);
  new DataView(out.buffer).setBigUint64(0, BigInt(json.length), true);
  out.set(json, 8);
  out.set(data, 8 + json.length);
  return out;
}

test('tiny llama safetensors: names, shapes, raw f32 bytes, config', () => {
  const ck = loadFixture('tiny_llama');
  assert.equal(ck.format, 'safetensors');
  assert.equal(ck.ggufMetadata, null);
  const q = ck.tensors.get('model.layers.0.self_attn.q_proj.weight')!;
  assert.equal(q.dtype, 'f32');
  assert.deepEqual(q.shape, [8, 8]);
  assert.equal(q.data.length, 256);
  assert.deepEqual(ck.tensors.get('model.layers.1.self_attn.k_proj.weight')!.shape, [4, 8]);
  assert.deepEqual(ck.tensors.get('model.layers.0.mlp.down_proj.weight')!.shape, [8, 12]);
  // Untied: lm_head is its own matrix.
  const embed = ck.tensors.get('model.embed_tokens.weight')!;
  const head = ck.tensors.get('lm_head.weight')!;
  assert.notDeepEqual(Array.from(head.data), Array.from(embed.data));
  assert.equal(ck.config.tieWordEmbeddings, false);
  assert.deepEqual(
    {
      arch: ck.config.architecture,
      h: ck.config.hiddenSize,
      l: ck.config.numLayers,
      kv: ck.config.numKvHeads,
      hd: ck.config.headDim,
      v: ck.config.vocabSize,
    },
    { arch: 'llama', h: 8, l: 2, kv: 1, hd: 4, v: 11 },
  );
  // Bytes are the file's own (no conversion at load).
  const file = readFileSync(fixture('tiny_llama.safetensors'));
  const headerLen = Number(file.readBigUInt64LE(0));
  assert.deepEqual(Buffer.from(q.data), file.subarray(8 + headerLen + 384, 8 + headerLen + 640));
});

test('sharded tiny llama (index.json) has the same tensors and bytes as the single file', () => {
  const single = loadFixture('tiny_llama');
  const sharded = loadSafetensorsCheckpoint({
    files: [fixture('tiny_llama.safetensors.index.json')],
    configPath: fixture('tiny_llama_config.json'),
    fastLoad: true,
  });
  assert.deepEqual([...sharded.tensors.keys()].sort(), [...single.tensors.keys()].sort());
  for (const [name, t] of single.tensors) {
    const s = sharded.tensors.get(name)!;
    assert.equal(s.dtype, t.dtype, name);
    assert.deepEqual(s.shape, t.shape, name);
    assert.deepEqual(Buffer.from(s.data), Buffer.from(t.data), name);
  }
});

test('memory-mapped loading gives the same bytes as the fast loader', () => {
  const fast = loadCheckpoint(join(MODELS, 'tinystories-656k'), { fastLoad: true });
  const mapped = loadCheckpoint(join(MODELS, 'tinystories-656k'), { fastLoad: false });
  assert.equal(mapped.tensors.size, fast.tensors.size);
  for (const [name, t] of fast.tensors) assert.ok(Buffer.from(mapped.tensors.get(name)!.data).equals(Buffer.from(t.data)), name);
});

test('tied embeddings named in __metadata__ (tinystories-656k stores only lm_head)', () => {
  const ck = loadCheckpoint(join(MODELS, 'tinystories-656k'), { fastLoad: true });
  const embed = ck.tensors.get('model.embed_tokens.weight')!;
  const head = ck.tensors.get('lm_head.weight')!;
  assert.deepEqual(embed.shape, [2048, 128]);
  assert.equal(embed.name, 'model.embed_tokens.weight');
  assert.equal(embed.data, head.data, 'one matrix under two names');
  assert.equal(ck.config.tieWordEmbeddings, true);
  assert.deepEqual(ck.config.eosTokenIds, [2]);
  assert.equal(ck.config.bosTokenId, 1);
  assert.equal(ck.source, join(MODELS, 'tinystories-656k'));
});

test('tie_word_embeddings: lm_head is the embedding (qwen3) or added when absent (smollm2, bf16)', () => {
  const qwen3 = loadFixture('tiny_qwen3');
  assert.equal(qwen3.tensors.get('lm_head.weight')!.data, qwen3.tensors.get('model.embed_tokens.weight')!.data);
  assert.equal(qwen3.config.architecture, 'qwen3');
  assert.equal(qwen3.config.headDim, 6);
  assert.deepEqual(qwen3.tensors.get('model.layers.0.self_attn.q_norm.weight')!.shape, [6]);

  const smol = loadFixture('tiny_smollm2');
  const head = smol.tensors.get('lm_head.weight')!;
  assert.equal(head.dtype, 'bf16');
  assert.deepEqual(head.shape, [12, 8]);
  assert.equal(head.data, smol.tensors.get('model.embed_tokens.weight')!.data);
  assert.equal(smol.config.tieWordEmbeddings, true);
  // SmolLM2 is a Llama checkpoint: the Llama architecture runs it (its MODEL.toml entry matches by name).
  assert.equal(smol.config.architecture, 'llama');
  assert.equal(smol.config.ropeTheta, 100000);
});

test('config normalization: mistral window, qwen2 bias, qwen3 head_dim, eos union, unknown arch', () => {
  const read = (p: string) => JSON.parse(readFileSync(p, 'utf8'));
  const mistral = loadFixture('tiny_mistral').config;
  assert.equal(mistral.architecture, 'mistral');
  assert.equal(mistral.slidingWindow, 4);
  const qwen2 = loadFixture('tiny_qwen2');
  assert.equal(qwen2.config.attentionBias, true);
  assert.equal(qwen2.config.slidingWindow, null);
  assert.deepEqual(qwen2.tensors.get('model.layers.0.self_attn.q_proj.bias')!.shape, [8]);
  assert.equal(loadFixture('tiny_llama').config.architecture, 'llama');

  const chat = configFromHf(read(join(TINY_CHAT, 'config.json')), {
    generationConfig: read(join(TINY_CHAT, 'generation_config.json')),
  });
  assert.deepEqual(
    [chat.architecture, chat.headDim, chat.numHeads, chat.numKvHeads, chat.hiddenSize, chat.ropeTheta, chat.rmsNormEps],
    ['qwen3', 64, 4, 2, 256, 1000000, 1e-6],
  );
  assert.deepEqual(chat.eosTokenIds, [151645, 151643]);
  assert.equal(chat.bosTokenId, 151643);
  assert.equal(chat.slidingWindow, null);
  assert.equal(chat.tieWordEmbeddings, true);

  // The architecture comes from the config's `architectures` class (else model_type), never from a name.
  const base = read(fixture('tiny_llama_config.json'));
  const byClass = configFromHf({ ...base, model_type: undefined, architectures: ['Qwen3ForCausalLM'] });
  assert.equal(byClass.architecture, 'qwen3');
  const byType = configFromHf({ ...base, model_type: 'qwen2', architectures: ['SomeUnknownForCausalLM'] });
  assert.equal(byType.architecture, 'qwen2');
  assert.throws(
    () => configFromHf({ ...base, model_type: undefined, architectures: undefined }),
    /neither "architectures" nor "model_type"/,
  );
  const smol = configFromHf({ ...read(fixture('tiny_llama_config.json')), _name_or_path: 'HuggingFaceTB/SmolLM2-135M' });
  assert.deepEqual([smol.architecture, smol.nameOrPath], ['llama', 'HuggingFaceTB/SmolLM2-135M']);
  assert.throws(() => configFromHf({ ...base, model_type: 'rwkv', architectures: ['RwkvForCausalLM'] }), /"rwkv".*supported: llama/);
  assert.throws(() => configFromHf({ model_type: 'llama', hidden_size: 8 }), /num_attention_heads/);
});

test('GGUF stories260K: metadata, HF names, row-major shapes, tokenizer metadata kept', () => {
  const path = join(MODELS, 'stories260k-gguf', 'stories260K.gguf');
  const ck = loadCheckpoint(path, { fastLoad: true });
  assert.equal(ck.format, 'gguf');
  assert.deepEqual(
    [
      ck.config.architecture,
      ck.config.hiddenSize,
      ck.config.numLayers,
      ck.config.numHeads,
      ck.config.numKvHeads,
      ck.config.headDim,
      ck.config.intermediateSize,
      ck.config.vocabSize,
    ],
    ['llama', 64, 5, 8, 4, 8, 172, 512],
  );
  assert.equal(ck.config.bosTokenId, 1);
  assert.deepEqual(ck.config.eosTokenIds, [2]);
  assert.equal(ck.config.tieWordEmbeddings, false);
  assert.equal((ck.ggufMetadata!['tokenizer.ggml.tokens'] as string[]).length, 512);
  assert.deepEqual(ck.tensors.get('model.embed_tokens.weight')!.shape, [512, 64]);
  assert.deepEqual(ck.tensors.get('model.layers.4.mlp.down_proj.weight')!.shape, [64, 172]);
  assert.deepEqual(ck.tensors.get('model.layers.4.mlp.gate_proj.weight')!.shape, [172, 64]);
  assert.deepEqual(ck.tensors.get('model.layers.0.self_attn.k_proj.weight')!.shape, [32, 64]);
  assert.deepEqual(ck.tensors.get('model.norm.weight')!.shape, [64]);
  assert.equal(ck.tensors.size, 2 + 1 + 5 * 9);
  const mapped = loadCheckpoint(path, { fastLoad: false });
  for (const [name, t] of ck.tensors) assert.ok(Buffer.from(mapped.tensors.get(name)!.data).equals(Buffer.from(t.data)), name);
});

test('GGUF tiny llama f32 equals the safetensors tiny llama once Q/K rows are un-interleaved; f16 within f16 error', () => {
  const st = loadFixture('tiny_llama');
  const g32 = loadCheckpoint(fixture('tiny_llama_f32.gguf'), { fastLoad: true });
  const g16 = loadCheckpoint(fixture('tiny_llama_f16.gguf'), { fastLoad: false });
  for (const [name, t] of g32.tensors) {
    assert.equal(t.dtype, 'f32');
    const ref = st.tensors.get(name)!;
    assert.deepEqual(t.shape, ref.shape, name);
    assert.ok(Buffer.from(t.data).equals(Buffer.from(ref.data)), `${name} bytes equal`);
    const half = g16.tensors.get(name)!;
    const a = toF32(ref),
      b = toF32(half);
    for (let i = 0; i < a.length; i++) assert.ok(Math.abs(a[i] - b[i]) <= Math.abs(a[i]) * 2 ** -11 + 1e-7, `${name}[${i}]`);
  }
  assert.equal(g16.tensors.get('model.layers.0.self_attn.q_proj.weight')!.dtype, 'f16');
  // The file really was interleaved: its raw q_proj rows differ from Hugging Face order.
  const header = readGgufHeader(fixture('tiny_llama_f32.gguf'));
  const info = header.tensors.find((t) => t.name === 'blk.0.attn_q.weight')!;
  const raw = readFileSync(fixture('tiny_llama_f32.gguf')).subarray(info.offset, info.offset + 256);
  assert.ok(!raw.equals(Buffer.from(st.tensors.get('model.layers.0.self_attn.q_proj.weight')!.data)));
});

test('GGUF tiny llama q8_0: quantized tensors keep their blocks, tied output', () => {
  const ck = loadCheckpoint(fixture('tiny_llama_q8.gguf'), { fastLoad: true });
  const q = ck.tensors.get('model.layers.0.self_attn.q_proj.weight')!;
  assert.equal(q.dtype, 'q8_0');
  assert.deepEqual(q.shape, [32, 32]);
  assert.equal(q.data.length, 32 * 34);
  assert.equal(ck.tensors.get('model.layers.0.input_layernorm.weight')!.dtype, 'f32');
  assert.equal(ck.config.tieWordEmbeddings, true);
  assert.equal(ck.tensors.get('lm_head.weight')!.data, ck.tensors.get('model.embed_tokens.weight')!.data);
  // Un-interleaving moved whole 34-byte rows: each loaded row is some raw row, scales intact.
  const header = readGgufHeader(fixture('tiny_llama_q8.gguf'));
  const info = header.tensors.find((t) => t.name === 'blk.0.attn_q.weight')!;
  const raw = readFileSync(fixture('tiny_llama_q8.gguf')).subarray(info.offset, info.offset + 32 * 34);
  // headDim 16: HF row 1 (first half, index 1) was stored at row 2; row 8 (second half, index 0) at row 1.
  assert.ok(Buffer.from(q.data.subarray(34, 68)).equals(raw.subarray(2 * 34, 3 * 34)));
  assert.ok(Buffer.from(q.data.subarray(8 * 34, 9 * 34)).equals(raw.subarray(34, 68)));
});

test('unpermuteRows inverts the converter permutation for each head', () => {
  // 2 heads × headDim 4, one byte per row: stored order within a head is [0, 2, 1, 3].
  const stored = Uint8Array.from([10, 12, 11, 13, 20, 22, 21, 23]);
  assert.deepEqual(Array.from(unpermuteRows(stored, 8, 2, 1)), [10, 11, 12, 13, 20, 21, 22, 23]);
  assert.throws(() => unpermuteRows(stored, 8, 3, 1), /heads/);
});

test('broken safetensors files give errors naming the file and the problem', () => {
  const dir = tempDir();
  try {
    const write = (name: string, bytes: Uint8Array) => {
      const p = join(dir, name);
      writeFileSync(p, bytes);
      return p;
    };
    const ok = { w: { dtype: 'F32', shape: [2, 2], data_offsets: [0, 16] } };
    const tooShort = write('short.safetensors', Uint8Array.from([1, 2, 3]));
    assert.throws(() => parseSafetensors(readFileSync(tooShort), tooShort), /short\.safetensors: truncated safetensors header/);
    const full = safetensorsBytes(ok, new Uint8Array(16));
    const cut = write('cut.safetensors', full.subarray(0, 20));
    assert.throws(() => parseSafetensors(readFileSync(cut), cut), /cut\.safetensors: truncated safetensors header \(header claims/);
    const dataCut = write('datacut.safetensors', full.subarray(0, full.length - 4));
    assert.throws(() => parseSafetensors(readFileSync(dataCut), dataCut), /datacut\.safetensors: tensor w data lies beyond end of file/);
    const garbage = safetensorsBytes({ padding: 'xxxxxxxxxxxx' }, new Uint8Array(0));
    garbage.set(Buffer.from('{not json'), 8);
    const bad = write('bad.safetensors', garbage);
    assert.throws(() => parseSafetensors(readFileSync(bad), bad), /bad\.safetensors: bad safetensors JSON header/);
    const int8 = write('int8.safetensors', safetensorsBytes({ w: { dtype: 'I8', shape: [4], data_offsets: [0, 4] } }, new Uint8Array(4)));
    assert.throws(() => parseSafetensors(readFileSync(int8), int8), /int8\.safetensors: tensor w has unsupported dtype I8/);
    const wrongLen = write(
      'len.safetensors',
      safetensorsBytes({ w: { dtype: 'F32', shape: [3], data_offsets: [0, 16] } }, new Uint8Array(16)),
    );
    assert.throws(() => parseSafetensors(readFileSync(wrongLen), wrongLen), /len\.safetensors: tensor w data_offsets/);

    // Through the directory loader, with the memory-mapped path too.
    writeFileSync(join(dir, 'config.json'), readFileSync(fixture('tiny_llama_config.json')));
    writeFileSync(join(dir, 'model.safetensors'), full.subarray(0, full.length - 4));
    assert.throws(() => loadCheckpoint(dir, { fastLoad: false }), /model\.safetensors: tensor w data lies beyond end of file/);
    writeFileSync(join(dir, 'config.json'), '{"model_type": ');
    assert.throws(() => loadCheckpoint(dir, { fastLoad: true }), /config\.json: bad JSON/);
    assert.throws(() => loadCheckpoint(join(dir, 'nope'), { fastLoad: true }), /nope: no such file or directory/);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('broken GGUF files give errors naming the file and the problem', () => {
  const dir = tempDir();
  try {
    const src = readFileSync(fixture('tiny_llama_f32.gguf'));
    const header = readGgufHeader(fixture('tiny_llama_f32.gguf'));
    const truncHeader = join(dir, 'head.gguf');
    writeFileSync(truncHeader, src.subarray(0, 200));
    assert.throws(() => loadCheckpoint(truncHeader, { fastLoad: true }), /head\.gguf: truncated GGUF header/);
    const truncData = join(dir, 'data.gguf');
    writeFileSync(truncData, src.subarray(0, header.dataOffset + 1000));
    assert.throws(() => loadCheckpoint(truncData, { fastLoad: false }), /data\.gguf: tensor \S+ data lies beyond end of file/);
    const notGguf = join(dir, 'text.gguf');
    writeFileSync(notGguf, 'this is not a gguf file at all, just text');
    assert.throws(() => loadCheckpoint(notGguf, { fastLoad: true }), /text\.gguf: not a GGUF file/);
    // Patch the first tensor's ggml type (after name, n_dims and its dims) to IQ2_XXS (16), a type svc cannot run.
    const patched = Buffer.from(src);
    const nameAt = patched.indexOf('token_embd.weight');
    const typeAt = nameAt + 'token_embd.weight'.length + 4 + 8 * 2;
    assert.equal(patched.readUInt32LE(typeAt), 0);
    patched.writeUInt32LE(GGML_TYPE.IQ2_XXS, typeAt);
    const iq2 = join(dir, 'iq2.gguf');
    writeFileSync(iq2, patched);
    // The message lists every supported type by its GGUF name.
    const names = new Map(Object.entries(GGML_TYPE).map(([k, v]) => [v as number, k]));
    const supported = ALL_DTYPES.map((d) => names.get(WEIGHT_DTYPES[d].ggmlType)).join(', ');
    assert.ok(supported.includes('Q5_0') && supported.includes('IQ4_NL') && !supported.includes('undefined'), supported);
    assert.throws(
      () => loadCheckpoint(iq2, { fastLoad: true }),
      (err: Error) => err.message.endsWith(`iq2.gguf: tensor token_embd.weight has unsupported dtype IQ2_XXS (supported: ${supported})`),
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('unaligned safetensors data is copied so f32 tensors can be viewed as Float32Array', () => {
  const values = Float32Array.from([1.5, -2, 3.25]);
  // A 2-byte JSON padding pushes the data section off 4-byte alignment.
  const bytes = safetensorsBytes(
    { w: { dtype: 'F32', shape: [3], data_offsets: [0, 12] }, p: { dtype: 'F16', shape: [1], data_offsets: [12, 14] } },
    new Uint8Array(14),
  );
  const headerLen = Number(new DataView(bytes.buffer).getBigUint64(0, true));
  const shift = (8 + headerLen) % 4 === 0 ? 1 : 0;
  const padded = new Uint8Array(bytes.length + shift);
  padded.set(bytes);
  new DataView(padded.buffer).setBigUint64(0, BigInt(headerLen + shift), true);
  padded.copyWithin(8 + headerLen + shift, 8 + headerLen);
  padded[8 + headerLen] = 0x20; // the extra byte is a space inside the JSON
  padded.set(new Uint8Array(values.buffer), 8 + headerLen + shift);
  assert.notEqual((8 + headerLen + shift) % 4, 0);
  const t = parseSafetensors(padded, 'mem').tensors.get('w')!;
  assert.equal(t.data.byteOffset % 4, 0);
  assert.deepEqual(Array.from(new Float32Array(t.data.buffer, t.data.byteOffset, 3)), [1.5, -2, 3.25]);
});

test('GGUF metadata normalization: qwen families, eos/eot union, unset ids, errors', () => {
  const base = (arch: string): Record<string, unknown> => ({
    'general.architecture': arch,
    [`${arch}.embedding_length`]: 64,
    [`${arch}.block_count`]: 2,
    [`${arch}.feed_forward_length`]: 128,
    [`${arch}.attention.head_count`]: 4,
    [`${arch}.attention.head_count_kv`]: 2,
    [`${arch}.context_length`]: 4096,
    [`${arch}.rope.freq_base`]: 1000000,
    [`${arch}.attention.layer_norm_rms_epsilon`]: 1e-6,
    'tokenizer.ggml.tokens': ['a', 'b', 'c'],
    'tokenizer.ggml.bos_token_id': 0xffffffff,
    'tokenizer.ggml.eos_token_id': 2,
    'tokenizer.ggml.eot_token_id': 1,
  });
  const q3 = configFromGguf({ ...base('qwen3'), 'qwen3.attention.key_length': 32 }, { hasOutputWeight: true });
  assert.deepEqual(
    [
      q3.architecture,
      q3.attentionBias,
      q3.headDim,
      q3.vocabSize,
      q3.bosTokenId,
      q3.eosTokenIds,
      q3.ropeTheta,
      q3.maxPositionEmbeddings,
      q3.tieWordEmbeddings,
    ],
    ['qwen3', false, 32, 3, null, [2, 1], 1000000, 4096, false],
  );
  const q2 = configFromGguf({ ...base('qwen2'), 'qwen2.vocab_size': 10 }, { hasOutputWeight: false });
  assert.deepEqual([q2.architecture, q2.attentionBias, q2.headDim, q2.vocabSize, q2.tieWordEmbeddings], ['qwen2', true, 16, 10, true]);
  const smol = configFromGguf({ ...base('llama'), 'general.name': 'SmolLM2 135M Instruct' }, { hasOutputWeight: false });
  assert.equal(smol.architecture, 'llama');
  assert.equal(smol.nameOrPath, 'SmolLM2 135M Instruct');
  assert.throws(() => configFromGguf(base('bloom'), { hasOutputWeight: true }), /"bloom".*general\.architecture/);
  assert.throws(() => configFromGguf({ ...base('llama'), 'llama.rope.dimension_count': 8 }, { hasOutputWeight: true }), /partial rotary/);
  const { ['llama.block_count']: _drop, ...noLayers } = base('llama');
  assert.throws(() => configFromGguf(noLayers, { hasOutputWeight: true, source: 'x.gguf' }), /x\.gguf: missing llama\.block_count/);
});
