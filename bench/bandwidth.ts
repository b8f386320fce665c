// Memory read bandwidth of this machine, measured from Node without native code: `threads`
// workers each stream-sum their slice of one shared Float64Array far larger than any cache, all
// released at once by an Atomics gate. Bytes read / wall time, best of a few trials. A JIT'd
// scalar loop may fall short of what SIMD kernels reach, so this is a lower bound on the roofline
// bandwidth (and the roofline an upper bound that is a little generous to both engines).
import { Worker } from 'node:worker_threads';

export interface Bandwidth {
  gbPerS: number;
  method: string;
}

export async function measureReadBandwidth(threads: number, bytes = 1 << 30, passes = 3, trials = 3): Promise<Bandwidth> {
  const elements = Math.floor(bytes / 8 / threads) * threads;
  const buffer = new SharedArrayBuffer(elements * 8);
  new Float64Array(buffer).fill(1); // touch every page before timing
  const per = elements / threads;
  let best = 0;
  for (let t = 0; t < trials; t++) {
    const gate = new SharedArrayBuffer(4);
    const workers = Array.from({ length: threads }, (_, i) => new Worker(new URL('./bandwidth-worker.js', import.meta.url), {
      workerData: { buffer, gate, start: i * per, length: per, passes },
    }));
    try {
      const ready = workers.map((w) => new Promise<void>((ok, fail) => { w.once('message', () => ok()); w.once('error', fail); }));
      await Promise.all(ready);
      const done = workers.map((w) => new Promise<void>((ok, fail) => { w.once('message', () => ok()); w.once('error', fail); }));
      const t0 = performance.now();
      const g = new Int32Array(gate);
      Atomics.store(g, 0, 1);
      Atomics.notify(g, 0);
      await Promise.all(done);
      const seconds = (performance.now() - t0) / 1000;
      best = Math.max(best, (elements * 8 * passes) / seconds / 1e9);
    } finally {
      await Promise.all(workers.map((w) => w.terminate()));
    }
  }
  return {
    gbPerS: best,
    method: `node: ${threads} worker_threads summing a shared ${(elements * 8) / 2 ** 30} GiB Float64Array (${passes} passes, best of ${trials})`,
  };
}
