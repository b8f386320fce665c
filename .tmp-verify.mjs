import { getLlama } from 'node-llama-cpp';
import { loadCheckpoint } from './dist/src/model/loaders/index.js';
import { loadTokenizer } from './dist/src/model/tokenizer.js';
const dir = '/tmp/svc-bench-cache/';
for (const f of ['small-qwen3-q8_0.gguf', 'small-llama-q4_0.gguf', 'small-qwen3-bf16', 'small-llama-bf16-gguf.gguf']) {
  const ck = loadCheckpoint(dir + f, { fastLoad: true });
  const tok = loadTokenizer(dir + f);
  console.log(f, ck.config.architecture, ck.config.headDim, ck.tensors.size, [...ck.tensors.values()].slice(0,4).map(t=>t.name+':'+t.dtype+':'+t.shape), JSON.stringify(tok.encode('Hello world, <|im_start|>user')), tok.eosToken);
}
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'warn' });
for (const f of ['small-qwen3-q8_0.gguf', 'small-llama-q4_0.gguf', 'small-llama-bf16-gguf.gguf']) {
  const model = await llama.loadModel({ modelPath: dir + f, gpuLayers: 0 });
  console.log(f, JSON.stringify(model.tokenize('Hello world, <|im_start|>user', true)));
  const ctx = await model.createContext({ contextSize: 256, sequences: 1 });
  const seq = ctx.getSequence();
  const out = [];
  for await (const t of seq.evaluate(model.tokenize('Hello world'), { temperature: 0, yieldEogToken: true })) { out.push(t); if (out.length >= 8) break; }
  console.log(' gen', out);
  await ctx.dispose(); await model.dispose();
}
await llama.dispose();
