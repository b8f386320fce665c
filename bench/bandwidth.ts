// Memory read bandwidth of this machine, measured from Node without an addon: `threads` workers
// each memcmp the two identical halves of their slice of one shared buffer far larger than any
// cache (Buffer#equals → libc memcmp, vectorized, two read streams per thread), all released at
// once by an Atomics gate. Bytes read / wall time, best of a few trials. Slower probes were tried
// and rejected because they understate bandwidth (and so overstate how close the engines get to
// the roofline): a JIT'd Float64Array sum reads ~30% as fast on one core, memchr (one stream) ~70%.
import { Worker } from 'node:worker_threads';

export interface Bandwidth {
  gbPerS: number;
  method: string;
}

export async function measureReadBandwidth(threads: number, bytes = 1 << 30, passes = 3, trials = 3): Promise<Bandwidth> {
  const per = Math.floor(bytes / threads / 8192) * 8192;
  const total = per * threads;
  const buffer = new SharedArrayBuffer(total);
  // Writing every page matters: untouched pages all map the one zero page and read from cache.
  new Uint8Array(buffer).fill(0x5a);
  let best = 0;
  for (let t = 0; t < trials; t++) {
    const gate = new SharedArrayBuffer(4);
    const workers = Array.from(
      { length: threads },
      (_, i) =>
        new Worker(new URL('./bandwidth-worker.js', import.meta.url), {
          workerData: { buffer, gate, start: i * per, length: per, passes },
        }),
    );
    try {
      const ready = workers.map(
        (w) =>
          new Promise<void>((ok, fail) => {
            w.once('message', () => ok());
            w.once('error', fail);
          }),
      );
      await Promise.all(ready);
      const done = workers.map(
        (w) =>
          new Promise<void>((ok, fail) => {
            w.once('message', (equal: boolean) => (equal ? ok() : fail(new Error('bandwidth probe: identical halves compared unequal'))));
            w.once('error', fail);
          }),
      );
      const t0 = performance.now();
      const g = new Int32Array(gate);
      Atomics.store(g, 0, 1);
      Atomics.notify(g, 0);
      await Promise.all(done);
      const seconds = (performance.now() - t0) / 1000;
      best = Math.max(best, (total * passes) / seconds / 1e9);
    } finally {
      await Promise.all(workers.map((w) => w.terminate()));
    }
  }
  return {
    gbPerS: best,
    method: `node: ${threads} worker_threads memcmp-ing the halves of a shared ${(total / 2 ** 30).toFixed(2)} GiB buffer (Buffer#equals; ${passes} passes, best of ${trials})`,
  };
}
