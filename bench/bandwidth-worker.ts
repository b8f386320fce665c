// One reader of the bandwidth probe (see bandwidth.ts): waits at the gate, then compares the two
// halves of its slice of the shared buffer `passes` times, and reports back.
import { parentPort, workerData } from 'node:worker_threads';

interface Job {
  buffer: SharedArrayBuffer;
  gate: SharedArrayBuffer;
  start: number;
  length: number;
  passes: number;
}

const job = workerData as Job;
const half = job.length / 2;
const a = Buffer.from(job.buffer, job.start, half);
const b = Buffer.from(job.buffer, job.start + half, half);
const gate = new Int32Array(job.gate);

parentPort!.postMessage('ready');
Atomics.wait(gate, 0, 0);
let equal = true;
// Buffer#equals is libc memcmp: vectorized, and the halves are identical, so it reads every byte.
for (let p = 0; p < job.passes; p++) equal = a.equals(b) && equal;
parentPort!.postMessage(equal);
