// The flat-memory GGUF load (mapped-residency.ts): weights taken from the mapping tensor by tensor,
// each source range released once the model has its own copy, must be exactly the weights the
// owned-buffer path makes (packed bytes, decoded vectors), in both load modes; released ranges
// still read back the file's bytes; progress ends at every tensor and byte.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { nativeOps } from '../../src/kernels/native.js';
import { loadCheckpoint } from '../../src/model/loaders/index.js';
import { CheckpointWeights } from '../../src/model/architectures/weights.js';
import type { Checkpoint, LoadProgress } from '../../src/model/types.js';
import { describeProgress, loadProgressReporter } from '../../src/ops/load-progress.js';
import { createLogger } from '../../src/ops/logger.js';
import { MODELS } from '../helpers/paths.js';

const ZOO = join(MODELS, 'quant-zoo');
// Packed (q8_0, q4_0), used in place (f32, bf16), and a mix with K-quants (q4_k_m).
const FILES = ['q8_0', 'q4_0', 'f32', 'bf16', 'q4_k_m'].map((t) => join(ZOO, `stories260k-wide-${t}.gguf`));

/** The checkpoint as the owned-buffer loader had it: every tensor a copy in memory of its own, no residency. */
function ownedCopy(path: string): Checkpoint {
  const ck = loadCheckpoint(path, { fastLoad: false });
  const tensors = new Map([...ck.tensors].map(([name, t]) => [name, { ...t, data: t.data.slice() }]));
  return { ...ck, tensors, residency: undefined };
}

for (const path of FILES) {
  for (const fastLoad of [true, false]) {
    test(`${path.split('/').pop()} (${fastLoad ? 'fast' : 'mmap'}): weights equal the owned-buffer path's, byte for byte`, () => {
      const old = ownedCopy(path);
      const progress: LoadProgress[] = [];
      const ck = loadCheckpoint(path, { fastLoad, onProgress: (p) => progress.push(p) });
      assert.ok(ck.residency, 'GGUF checkpoints carry a residency');
      const weights = new CheckpointWeights(ck, nativeOps);
      let packed = 0;
      for (const [name, t] of ck.tensors) {
        const ref = old.tensors.get(name)!;
        if (t.shape.length === 2) {
          const [rows, cols] = t.shape;
          const w = weights.matrix(name, rows, cols);
          const want = nativeOps.prepareWeight({ dtype: ref.dtype, rows, cols, data: ref.data });
          if (want.data !== ref.data) packed++;
          assert.equal(w.dtype, want.dtype, name);
          assert.ok(Buffer.from(w.data).equals(Buffer.from(want.data)), `${name}: prepared bytes differ`);
        } else {
          assert.deepEqual(weights.vector(name, t.shape[0]), new CheckpointWeights(old, nativeOps).vector(name, t.shape[0]), name);
        }
      }
      if (/q[48]_0/.test(path)) assert.ok(packed > 0, 'some matrices were repacked');
      // Released ranges fault back in from the file: the tensors still read the file's bytes.
      for (const [name, t] of ck.tensors) assert.ok(Buffer.from(t.data).equals(Buffer.from(old.tensors.get(name)!.data)), name);
      const last = progress[progress.length - 1];
      assert.equal(last.tensors, last.totalTensors);
      assert.equal(last.bytes, last.totalBytes);
      assert.equal(last.totalBytes, ck.residency.totalBytes);
      assert.ok(
        progress.every((p, i) => i === 0 || p.bytes > progress[i - 1].bytes),
        'progress only grows',
      );
    });
  }
}

test('load progress: one rewritten line on a terminal, a record per tenth otherwise', () => {
  const p = (bytes: number): LoadProgress => ({ tensors: bytes, totalTensors: 100, bytes: bytes * 2 ** 20, totalBytes: 100 * 2 ** 20 });
  assert.equal(describeProgress(p(45)), 'Loading weights: 45/100 tensors, 45/100 MiB (45%)');

  let tty = '';
  const onTty = loadProgressReporter(
    createLogger('info', () => undefined),
    { isTTY: true, write: (s) => (tty += s) },
  );
  for (const b of [1, 50, 100]) onTty.update(p(b));
  onTty.done();
  assert.equal(tty.split('\r').length, 4);
  assert.ok(tty.endsWith('\rLoading weights: 100/100 tensors, 100/100 MiB (100%)\x1b[K\n'), JSON.stringify(tty));

  const lines: string[] = [];
  const piped = loadProgressReporter(
    createLogger('info', (s) => lines.push(s)),
    { isTTY: false, write: () => assert.fail('nothing goes to a pipe directly') },
  );
  for (let b = 1; b <= 100; b++) piped.update(p(b));
  piped.done();
  assert.equal(lines.length, 11, lines.join(''));
  assert.equal(lines[10], 'Loading weights: 100/100 tensors, 100/100 MiB (100%)\n');

  const quiet: string[] = [];
  const warnOnly = loadProgressReporter(
    createLogger('warn', (s) => quiet.push(s)),
    { isTTY: true, write: (s) => quiet.push(String(s)) },
  );
  warnOnly.update(p(50));
  warnOnly.done();
  assert.deepEqual(quiet, []);
});
