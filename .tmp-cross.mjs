import { getLlama } from 'node-llama-cpp';
import { loadCheckpoint } from './dist/src/model/loaders/index.js';
import { referenceOps } from './dist/src/kernels/reference.js';
import { allocateKvCache } from './dist/src/engine/kv-cache.js';
import { createModel } from './dist/src/model/architectures/index.js';
const dir = '/tmp/svc-bench-cache/';
function svcGreedy(path, prompt, n) {
  const model = createModel(loadCheckpoint(path, { fastLoad: true }), referenceOps);
  const kv = allocateKvCache(model.config, 8, 16, 'f32');
  const table = Int32Array.from({ length: 8 }, (_, i) => i);
  const out = []; let ids = prompt; let len = 0; let firstLogits;
  for (let step = 0; step < n; step++) {
    const tokens = Int32Array.from(ids), positions = Int32Array.from(ids.map((_, i) => len + i));
    const slots = positions.slice();
    len += ids.length;
    const logits = model.forward({ tokens, positions, slots, seqs: [{ qStart: 0, qLen: ids.length, kvLen: len, blockTable: table }], logitRows: Int32Array.of(ids.length - 1) }, kv);
    if (!firstLogits) firstLogits = logits.slice(0, 5);
    let best = 0; for (let v = 1; v < logits.length; v++) if (logits[v] > logits[best]) best = v;
    out.push(best); ids = [best];
  }
  return { out, firstLogits };
}
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
const prompt = [9707, 1879, 11, 1207, 525, 498, 30];
for (const [g, s] of [['small-qwen3-q8_0.gguf', 'small-qwen3-q8_0.gguf'], ['small-llama-q4_0.gguf', 'small-llama-q4_0.gguf'], ['small-llama-bf16-gguf.gguf', 'small-llama-bf16-gguf.gguf']]) {
  const model = await llama.loadModel({ modelPath: dir + g, gpuLayers: 0 });
  const ctx = await model.createContext({ contextSize: 256, sequences: 1 });
  const seq = ctx.getSequence();
  const out = [];
  for await (const t of seq.evaluate(prompt, { temperature: 0, yieldEogToken: true })) { out.push(t); if (out.length >= 10) break; }
  await ctx.dispose(); await model.dispose();
  console.log(g, 'llama.cpp', out.join(','));
  console.log(g, 'svc ref  ', svcGreedy(dir + s, prompt, 10).out.join(','));
}
await llama.dispose();
