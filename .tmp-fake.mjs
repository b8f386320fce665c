import { openSvc } from './dist/bench/svc.js';
import { measureEngine } from './dist/bench/measure.js';
const e = await openSvc('/nonexistent.gguf', { repoRoot: '/tmp/fakesvc', threads: 2, maxSeqLen: 100, maxBatchSize: 8, extraArgs: [], startupTimeoutMs: 10000, log: console.error });
console.log(await e.generate([[1,2,3],[4,5]], 6));
console.log(await measureEngine(e, { promptTokens: 64, decodeTokens: 16, shortPromptTokens: 8, concurrency: [1, 4, 8], reps: 2 }, console.error));
await e.close();
console.log('closed');
