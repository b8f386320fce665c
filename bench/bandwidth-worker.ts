// One reader of the bandwidth probe (see bandwidth.ts): waits at the gate, then sums its slice of
// the shared array `passes` times and reports back.
import { parentPort, workerData } from 'node:worker_threads';

interface Job { buffer: SharedArrayBuffer; gate: SharedArrayBuffer; start: number; length: number; passes: number }

const job = workerData as Job;
const data = new Float64Array(job.buffer, job.start * 8, job.length);
const gate = new Int32Array(job.gate);

/** Four independent accumulators so the loop is bound by loads, not by one add chain. */
function sum(a: Float64Array): number {
  let s0 = 0, s1 = 0, s2 = 0, s3 = 0;
  const n = a.length - (a.length % 4);
  for (let i = 0; i < n; i += 4) {
    s0 += a[i];
    s1 += a[i + 1];
    s2 += a[i + 2];
    s3 += a[i + 3];
  }
  for (let i = n; i < a.length; i++) s0 += a[i];
  return s0 + s1 + s2 + s3;
}

sum(data.subarray(0, 1 << 16)); // JIT warm-up before the clock starts
parentPort!.postMessage('ready');
Atomics.wait(gate, 0, 0);
let total = 0;
for (let p = 0; p < job.passes; p++) total += sum(data);
parentPort!.postMessage(total);
