// Writes a tiny random Qwen3-shaped safetensors checkpoint (config.json + model.safetensors) with a
// DeepSeek-V3-style multi-token-prediction layer at model.layers.{num_hidden_layers}, into a temp
// directory. No public checkpoint of the Llama/Qwen family svc runs carries MTP weights, so the MTP
// tests build against this one.
//
// mtp 'random': independent random MTP weights (exercises every input of the layer: hnorm, both
// halves of eh_proj, shared_head.head). mtp 'copy': an MTP layer built to approximate the main
// model's next-next token, so drafts are often accepted: with one main layer and unit-RMS
// embeddings, eh_proj = [I | 0] feeds the layer embed(t_{i+1}) itself, the layer is a copy of the
// main layer 0, and the head is the main norm + lm_head. RoPE attention depends on relative
// positions only, so the MTP layer at position i over its own KV (tokens t_2..t_{i+1}, position 0
// masked) computes nearly what the main model computes at position i+1 over t_0..t_{i+1}: the
// main model's prediction of t_{i+2}. `noise` perturbs the copied weights to lower acceptance.
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { rng, writeSafetensors, type SafetensorsEntry as Entry, type StoredDType } from './safetensors-file.js';

export type { StoredDType } from './safetensors-file.js';

export interface MtpCheckpointOptions {
  /** Main weights' dtype (default bf16). */
  dtype?: StoredDType;
  /** The MTP layer's weight matrices' dtype (default: dtype). */
  mtpDtype?: StoredDType;
  /** 'none' writes no MTP tensors (default 'random'). */
  mtp?: 'none' | 'random' | 'copy';
  /** Writes num_nextn_predict_layers: 1 (default: mtp !== 'none'). */
  nextnConfig?: boolean;
  /** Relative noise added to the copied MTP weights (mtp 'copy'; default 0). */
  noise?: number;
  /** Main layers (default 2; mtp 'copy' wants 1). */
  numLayers?: number;
  vocabSize?: number;
  hiddenSize?: number;
  /** PRNG seed (default 1). */
  seed?: number;
  /** eos_token_id in config.json (default 1). */
  eosTokenId?: number;
}

export interface MtpCheckpoint {
  dir: string;
  config: Record<string, unknown>;
}

/** Writes the checkpoint into a fresh temp directory (the caller removes it). */
export function writeMtpCheckpoint(opts: MtpCheckpointOptions = {}): MtpCheckpoint {
  const dtype = opts.dtype ?? 'bf16';
  const mtpDtype = opts.mtpDtype ?? dtype;
  const mtp = opts.mtp ?? 'random';
  const numLayers = opts.numLayers ?? 2;
  const V = opts.vocabSize ?? 384;
  const H = opts.hiddenSize ?? 64;
  const numHeads = 4;
  const numKv = 2;
  const hd = 16;
  const I = 2 * H;
  const r = rng(opts.seed ?? 1);
  const noise = opts.noise ?? 0;

  const random = (rows: number, cols: number, gain = 1): Float32Array => {
    const v = new Float32Array(rows * cols);
    const std = gain / Math.sqrt(cols);
    for (let i = 0; i < v.length; i++) v[i] = r.normal() * std;
    return v;
  };
  const norm = (len: number): Float32Array => Float32Array.from({ length: len }, () => 1 + 0.1 * r.normal());
  const ones = (len: number): Float32Array => new Float32Array(len).fill(1);
  // Unit-RMS embedding rows: enorm of an embedding is the embedding itself (mtp 'copy').
  const embedding = random(V, H, Math.sqrt(H));
  for (let t = 0; t < V; t++) {
    const row = embedding.subarray(t * H, (t + 1) * H);
    let ss = 0;
    for (const x of row) ss += x * x;
    const inv = 1 / Math.sqrt(ss / H);
    for (let d = 0; d < H; d++) row[d] *= inv;
  }

  const entries: Entry[] = [];
  const put = (name: string, shape: number[], values: Float32Array, d = dtype) => entries.push({ name, shape, values, dtype: d });
  put('model.embed_tokens.weight', [V, H], embedding);
  const lmHead = random(V, H, 3);
  put('lm_head.weight', [V, H], lmHead);
  const finalNorm = norm(H);
  put('model.norm.weight', [H], finalNorm);

  const layerTensors = (): [string, number[], Float32Array][] => [
    ['input_layernorm.weight', [H], norm(H)],
    ['self_attn.q_proj.weight', [numHeads * hd, H], random(numHeads * hd, H)],
    ['self_attn.k_proj.weight', [numKv * hd, H], random(numKv * hd, H)],
    ['self_attn.v_proj.weight', [numKv * hd, H], random(numKv * hd, H)],
    ['self_attn.o_proj.weight', [H, numHeads * hd], random(H, numHeads * hd)],
    ['self_attn.q_norm.weight', [hd], norm(hd)],
    ['self_attn.k_norm.weight', [hd], norm(hd)],
    ['post_attention_layernorm.weight', [H], norm(H)],
    ['mlp.gate_proj.weight', [I, H], random(I, H)],
    ['mlp.up_proj.weight', [I, H], random(I, H)],
    ['mlp.down_proj.weight', [H, I], random(H, I)],
  ];
  const mainLayers: [string, number[], Float32Array][][] = [];
  for (let l = 0; l < numLayers; l++) {
    const tensors = layerTensors();
    mainLayers.push(tensors);
    for (const [name, shape, values] of tensors) put(`model.layers.${l}.${name}`, shape, values);
  }

  if (mtp !== 'none') {
    const p = `model.layers.${numLayers}.`;
    // Matrices in mtpDtype (what --mtp-quantization is checked against); norms in the main dtype,
    // as quantized checkpoints keep them unquantized (and so a copied norm rounds the same).
    const matrix = (name: string, shape: number[], values: Float32Array) => put(p + name, shape, values, mtpDtype);
    const vector = (name: string, shape: number[], values: Float32Array) => put(p + name, shape, values);
    const perturbed = (v: Float32Array): Float32Array => {
      if (noise === 0) return v;
      let ss = 0;
      for (const x of v) ss += x * x;
      const std = noise * Math.sqrt(ss / v.length);
      return v.map((x) => x + std * r.normal());
    };
    if (mtp === 'random') {
      vector('enorm.weight', [H], norm(H));
      vector('hnorm.weight', [H], norm(H));
      matrix('eh_proj.weight', [H, 2 * H], random(H, 2 * H, 1.5));
      for (const [name, shape, values] of layerTensors()) (shape.length === 2 ? matrix : vector)(name, shape, values);
      vector('shared_head.norm.weight', [H], norm(H));
      matrix('shared_head.head.weight', [V, H], random(V, H, 3));
      // DeepSeek-V3 also stores a copy of the embedding per MTP layer; svc reads the main one.
      put(`${p}embed_tokens.weight`, [V, H], embedding);
    } else {
      vector('enorm.weight', [H], ones(H));
      vector('hnorm.weight', [H], ones(H));
      const eh = new Float32Array(H * 2 * H);
      for (let d = 0; d < H; d++) eh[d * 2 * H + d] = 1;
      matrix('eh_proj.weight', [H, 2 * H], perturbed(eh));
      for (const [name, shape, values] of mainLayers[numLayers - 1]) (shape.length === 2 ? matrix : vector)(name, shape, perturbed(values));
      vector('shared_head.norm.weight', [H], finalNorm);
    }
  }

  const config: Record<string, unknown> = {
    architectures: ['Qwen3ForCausalLM'],
    model_type: 'qwen3',
    hidden_size: H,
    intermediate_size: I,
    num_hidden_layers: numLayers,
    num_attention_heads: numHeads,
    num_key_value_heads: numKv,
    head_dim: hd,
    vocab_size: V,
    rope_theta: 10000,
    rms_norm_eps: 1e-6,
    tie_word_embeddings: false,
    max_position_embeddings: 1024,
    bos_token_id: 0,
    eos_token_id: opts.eosTokenId ?? 1,
    torch_dtype: dtype === 'f32' ? 'float32' : dtype === 'f16' ? 'float16' : 'bfloat16',
  };
  if (opts.nextnConfig ?? mtp !== 'none') config.num_nextn_predict_layers = 1;
  const dir = mkdtempSync(join(tmpdir(), 'svc-mtp-'));
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config, null, 2));
  writeSafetensors(join(dir, 'model.safetensors'), entries);
  return { dir, config };
}
