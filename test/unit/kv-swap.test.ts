// KV swap space (src/engine/kv-swap.ts): blocks out to a file and back into other blocks, byte for
// byte; capacity accounting; errors that leave the space consistent; files and directory cleanup.
// And copyKvBlock (src/engine/kv-blocks.ts).
import { test, type TestContext } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import { existsSync, mkdtempSync, readdirSync, rmSync, rmdirSync, statSync, writeFileSync } from 'node:fs';
import { syncBuiltinESMExports } from 'node:module';
import { randomFillSync } from 'node:crypto';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { allocateKvCache } from '../../src/engine/kv-cache.js';
import { copyKvBlock, kvBytesPerBlock } from '../../src/engine/kv-blocks.js';
import { DEFAULT_SWAP_ROOT, KvSwapSpace } from '../../src/engine/kv-swap.js';
import type { KvLayer } from '../../src/kernels/ops.js';
import { llamaConfig } from '../helpers/model-config.js';

const config = llamaConfig();

const NUM_BLOCKS = 16;
const BLOCK_SIZE = 4;

/** A pool whose sides differ in block size (per-layer K and V dtypes), filled with random bytes. */
function randomPool(): KvLayer[] {
  const layers = allocateKvCache(config, NUM_BLOCKS, BLOCK_SIZE, [
    { k: 'bf16', v: 'fp8' },
    { k: 'f32', v: 'f32' },
    { k: 'fp8', v: 'bf16' },
  ]);
  for (const layer of layers) {
    randomFillSync(layer.k);
    randomFillSync(layer.v);
  }
  return layers;
}

function blockBytes(layer: KvLayer, side: 'k' | 'v', block: number): Uint8Array {
  const bytes = layer[side].byteLength / layer.numBlocks;
  return layer[side].subarray(block * bytes, (block + 1) * bytes);
}

/** A fresh root under the OS temp directory, removed when the test ends. */
function tempRoot(t: TestContext): string {
  const root = mkdtempSync(join(tmpdir(), 'svc-swap-test-'));
  t.after(() => rmSync(root, { recursive: true, force: true }));
  return root;
}

function filesIn(space: KvSwapSpace): string[] {
  return readdirSync(space.directory!);
}

test('bytesPerBlock: every layer, K and V, whatever the element size', () => {
  const layers = randomPool();
  // 4 tokens × 2 KV heads × 16 dims per side, element sizes (2 + 1) + (4 + 4) + (1 + 2).
  assert.equal(kvBytesPerBlock(layers), BLOCK_SIZE * 2 * 16 * 14);
  const space = KvSwapSpace.create({ capacityBytes: 0, layers });
  assert.equal(space.bytesPerBlock, kvBytesPerBlock(layers));
});

test('swap out non-contiguous blocks, clobber them, swap into other blocks: every byte comes back', (t) => {
  const layers = randomPool();
  const space = KvSwapSpace.create({ root: tempRoot(t), capacityBytes: 1 << 20, layers });
  t.after(() => space.close());
  const from = [3, 7, 8, 9, 0, 14]; // a run (7..9), out of order
  const to = [15, 1, 2, 12, 5, 6];
  const saved = layers.map((layer) => ({
    k: from.map((b) => blockBytes(layer, 'k', b).slice()),
    v: from.map((b) => blockBytes(layer, 'v', b).slice()),
  }));
  const untouched = layers.map((layer) => blockBytes(layer, 'k', 10).slice());

  const handle = space.swapOut(from);
  assert.equal(handle.numBlocks, from.length);
  assert.equal(handle.bytes, from.length * space.bytesPerBlock);
  assert.equal(space.usedBytes(), handle.bytes);
  assert.deepEqual(filesIn(space).length, 1);
  assert.equal(statSync(join(space.directory!, filesIn(space)[0])).size, handle.bytes);
  for (const layer of layers) {
    for (const b of [...from, ...to]) {
      blockBytes(layer, 'k', b).fill(0xee);
      blockBytes(layer, 'v', b).fill(0xee);
    }
  }

  space.swapIn(handle, to);
  layers.forEach((layer, l) => {
    to.forEach((b, i) => {
      assert.deepEqual(blockBytes(layer, 'k', b), saved[l].k[i], `layer ${l} k, block ${from[i]} → ${b}`);
      assert.deepEqual(blockBytes(layer, 'v', b), saved[l].v[i], `layer ${l} v, block ${from[i]} → ${b}`);
    });
    assert.deepEqual(blockBytes(layer, 'k', 10), untouched[l], `layer ${l}: a block outside both sets`);
  });
  assert.equal(space.usedBytes(), 0);
  assert.deepEqual(filesIn(space), [], 'the file is removed after swap-in');
  assert.throws(() => space.swapIn(handle, to), /unknown KV swap handle/);
});

test('capacity: canSwapOut and swapOut refuse what does not fit; discard frees', (t) => {
  const layers = randomPool();
  const space = KvSwapSpace.create({ root: tempRoot(t), capacityBytes: 5 * kvBytesPerBlock(layers), layers });
  t.after(() => space.close());
  const bpb = space.bytesPerBlock;
  assert.equal(space.capacityBytes, 5 * bpb);
  assert.ok(space.canSwapOut(5));
  assert.ok(!space.canSwapOut(6));

  const a = space.swapOut([1, 2, 3]);
  assert.equal(space.usedBytes(), 3 * bpb);
  assert.ok(space.canSwapOut(2));
  assert.ok(!space.canSwapOut(3));
  assert.throws(() => space.swapOut([4, 5, 6]), /KV swap space full: 3 blocks need \d+ bytes, \d+ of \d+ free/);
  assert.equal(space.usedBytes(), 3 * bpb, 'a refused swap-out counts nothing');
  assert.equal(filesIn(space).length, 1, 'a refused swap-out leaves no file');

  const b = space.swapOut([4, 5]);
  assert.equal(space.usedBytes(), 5 * bpb);
  assert.ok(!space.canSwapOut(1));
  assert.ok(space.canSwapOut(0));
  assert.equal(filesIn(space).length, 2);

  space.discard(a);
  assert.equal(space.usedBytes(), 2 * bpb);
  assert.equal(filesIn(space).length, 1, 'discard removes the file');
  space.discard(a); // already gone: ignored
  assert.equal(space.usedBytes(), 2 * bpb);
  assert.throws(() => space.swapIn(a, [1, 2, 3]), /unknown KV swap handle/);
  space.discard(b);
  assert.equal(space.usedBytes(), 0);
  assert.deepEqual(filesIn(space), []);
});

test('bad arguments throw and change nothing', (t) => {
  const layers = randomPool();
  const space = KvSwapSpace.create({ root: tempRoot(t), capacityBytes: 1 << 20, layers });
  t.after(() => space.close());
  assert.throws(() => space.swapOut([0, NUM_BLOCKS]), /KV block 16 is outside the pool/);
  assert.throws(() => space.swapOut([-1]), RangeError);
  assert.equal(space.usedBytes(), 0);
  assert.deepEqual(filesIn(space), []);

  const saved = blockBytes(layers[1], 'v', 4).slice();
  const handle = space.swapOut([4, 5]);
  assert.throws(() => space.swapIn(handle, [1]), /holds 2 blocks, 1 given/);
  assert.throws(() => space.swapIn(handle, [1, 1]), /same block twice/);
  assert.throws(() => space.swapIn(handle, [1, 99]), /outside the pool/);
  // The handle survived the mistakes.
  space.swapIn(handle, [9, 8]);
  assert.deepEqual(blockBytes(layers[1], 'v', 9), saved);
  assert.equal(space.usedBytes(), 0);

  const other = KvSwapSpace.create({ root: tempRoot(t), capacityBytes: 1 << 20, layers });
  t.after(() => other.close());
  const foreign = other.swapOut([0]);
  assert.throws(() => space.swapIn(foreign, [0]), /unknown KV swap handle/);
  space.discard(foreign); // not this space's: ignored
  assert.equal(other.usedBytes(), foreign.bytes);
});

/** Replaces an fs function for the length of a test (syncBuiltinESMExports reaches the module's named import). */
function patchFs<K extends 'writevSync' | 'readvSync'>(t: TestContext, name: K, make: (real: (typeof fs)[K]) => (typeof fs)[K]): void {
  const real = fs[name];
  fs[name] = make(real);
  syncBuiltinESMExports();
  t.after(() => {
    fs[name] = real;
    syncBuiltinESMExports();
  });
}

test('short writes and reads are carried on until every byte has moved', (t) => {
  const layers = randomPool();
  const space = KvSwapSpace.create({ root: tempRoot(t), capacityBytes: 1 << 20, layers });
  t.after(() => space.close());
  let calls = 0;
  // Each call moves at most 100 bytes, ending mid-buffer.
  const trim = (buffers: readonly NodeJS.ArrayBufferView[]): Uint8Array[] => {
    const b = buffers[0] as Uint8Array;
    return [b.subarray(0, Math.min(b.byteLength, 100))];
  };
  patchFs(t, 'writevSync', (real) => (fd, buffers, position) => (calls++, real(fd, trim(buffers), position)));
  patchFs(t, 'readvSync', (real) => (fd, buffers, position) => (calls++, real(fd, trim(buffers), position)));
  const from = [2, 3, 11];
  const saved = layers.map((layer) => from.map((b) => blockBytes(layer, 'v', b).slice()));
  const handle = space.swapOut(from);
  for (const layer of layers) for (const b of from) blockBytes(layer, 'v', b).fill(0);
  space.swapIn(handle, [0, 1, 2]);
  layers.forEach((layer, l) => [0, 1, 2].forEach((b, i) => assert.deepEqual(blockBytes(layer, 'v', b), saved[l][i])));
  assert.ok(calls >= (2 * handle.bytes) / 100, `${calls} calls`);
});

test('an I/O error in swap-out removes the partial file, counts nothing, and names the file', (t) => {
  const layers = randomPool();
  const space = KvSwapSpace.create({ root: tempRoot(t), capacityBytes: 1 << 20, layers });
  t.after(() => space.close());
  let failing = true;
  let wrote = 0;
  patchFs(t, 'writevSync', (real) => (fd, buffers, position) => {
    if (!failing) return real(fd, buffers, position);
    if (wrote > 0) throw Object.assign(new Error('ENOSPC: no space left on device, write'), { code: 'ENOSPC' });
    wrote = real(fd, [buffers[0]], position); // part of the data reaches the file first
    return wrote;
  });
  assert.throws(
    () => space.swapOut([0, 5, 6]),
    (err: Error) =>
      /KV swap-out of 3 blocks \(\d+ bytes\) to .*\.kv failed: ENOSPC/.test(err.message) &&
      (err.cause as { code?: string }).code === 'ENOSPC',
  );
  assert.ok(wrote > 0);
  assert.equal(space.usedBytes(), 0);
  assert.deepEqual(filesIn(space), [], 'the partial file is gone');
  failing = false;
  const handle = space.swapOut([0, 5, 6]);
  assert.equal(space.usedBytes(), handle.bytes);
});

test('an I/O error in swap-in throws and the handle is gone', (t) => {
  const layers = randomPool();
  const space = KvSwapSpace.create({ root: tempRoot(t), capacityBytes: 1 << 20, layers });
  t.after(() => space.close());
  const handle = space.swapOut([1, 2]);
  // The file loses its tail behind the space's back.
  const [name] = filesIn(space);
  fs.truncateSync(join(space.directory!, name), handle.bytes - 1);
  assert.throws(() => space.swapIn(handle, [3, 4]), /KV swap-in of 2 blocks from .*\.kv failed: swap file ends at byte \d+/);
  assert.equal(space.usedBytes(), 0);
  assert.deepEqual(filesIn(space), []);
  space.discard(handle);
});

test('close deletes every file and the directory, is idempotent, and leaves one exit listener at most', (t) => {
  const layers = randomPool();
  const root = tempRoot(t);
  const before = process.listenerCount('exit');
  const spaces = [0, 1, 2].map(() => KvSwapSpace.create({ root, capacityBytes: 1 << 20, layers }));
  assert.equal(process.listenerCount('exit'), before + 1);
  const [space] = spaces;
  assert.ok(space.directory!.startsWith(join(root, `${process.pid}-`)));
  assert.equal(statSync(space.directory!).mode & 0o777, 0o700);
  const handle = space.swapOut([0, 1]);
  space.swapOut([2]);
  assert.equal(filesIn(space).length, 2);
  space.close();
  assert.ok(!existsSync(space.directory!));
  assert.equal(space.usedBytes(), 0);
  assert.ok(!space.canSwapOut(1));
  assert.throws(() => space.swapOut([3]), /closed/);
  assert.throws(() => space.swapIn(handle, [0, 1]), /closed/);
  space.discard(handle);
  space.close();
  assert.equal(process.listenerCount('exit'), before + 1, 'two spaces are still open');
  for (const s of spaces) s.close();
  assert.equal(process.listenerCount('exit'), before);
  assert.deepEqual(readdirSync(root), []);
});

test('a process that exits normally deletes its swap directory', (t) => {
  const root = tempRoot(t);
  const kvSwap = new URL('../../src/engine/kv-swap.js', import.meta.url).href;
  const kvCache = new URL('../../src/engine/kv-cache.js', import.meta.url).href;
  const script = `
    const { KvSwapSpace } = await import(${JSON.stringify(kvSwap)});
    const { allocateKvCache } = await import(${JSON.stringify(kvCache)});
    const layers = allocateKvCache(${JSON.stringify(config)}, 4, 2, 'bf16');
    const space = KvSwapSpace.create({ root: ${JSON.stringify(root)}, capacityBytes: 1 << 20, layers });
    space.swapOut([1, 2]);
    console.log(space.directory);
  `;
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  assert.equal(r.status, 0, r.stderr);
  const directory = r.stdout.trim();
  assert.ok(directory.startsWith(root), directory);
  assert.ok(!existsSync(directory));
  assert.deepEqual(readdirSync(root), []);
});

test('a root that cannot be made is a clear error naming it', (t) => {
  const file = join(tempRoot(t), 'a-file');
  writeFileSync(file, 'x');
  const root = join(file, 'swap');
  assert.throws(
    () => KvSwapSpace.create({ root, capacityBytes: 1 << 20, layers: randomPool() }),
    (err: Error) => err.message.startsWith(`cannot create the KV swap directory under ${root}: ENOTDIR`),
  );
});

test('capacity 0: swap disabled, nothing created', (t) => {
  const root = join(tempRoot(t), 'never');
  const before = process.listenerCount('exit');
  const space = KvSwapSpace.create({ root, capacityBytes: 0, layers: randomPool() });
  assert.equal(space.directory, null);
  assert.ok(!existsSync(root));
  assert.equal(process.listenerCount('exit'), before);
  assert.ok(!space.canSwapOut(0));
  assert.ok(!space.canSwapOut(1));
  assert.throws(() => space.swapOut([0]), /disabled/);
  space.close();
  assert.throws(() => KvSwapSpace.create({ root, capacityBytes: -1, layers: randomPool() }), RangeError);
});

test('the default root is /tmp/svc-swap', (t) => {
  const existed = existsSync(DEFAULT_SWAP_ROOT);
  const space = KvSwapSpace.create({ capacityBytes: 1 << 20, layers: randomPool() });
  t.after(() => {
    space.close();
    if (!existed) rmdirSync(DEFAULT_SWAP_ROOT); // ours, and empty again
  });
  assert.equal(DEFAULT_SWAP_ROOT, '/tmp/svc-swap');
  assert.ok(space.directory!.startsWith(`${DEFAULT_SWAP_ROOT}/${process.pid}-`));
  space.swapIn(space.swapOut([3]), [4]);
  space.close();
  assert.ok(!existsSync(space.directory!));
});

test('copyKvBlock: one block over another in every layer, K and V; the rest untouched', () => {
  const layers = randomPool();
  const before = layers.map((layer) => ({ k: layer.k.slice(), v: layer.v.slice() }));
  copyKvBlock(layers, 5, 11);
  layers.forEach((layer, l) => {
    for (const side of ['k', 'v'] as const) {
      const bytes = layer[side].byteLength / NUM_BLOCKS;
      for (let b = 0; b < NUM_BLOCKS; b++) {
        const want = before[l][side].subarray((b === 11 ? 5 : b) * bytes, ((b === 11 ? 5 : b) + 1) * bytes);
        assert.deepEqual(blockBytes(layer, side, b), want, `layer ${l} ${side} block ${b}`);
      }
    }
  });
  const copied = layers.map((layer) => layer.k.slice());
  copyKvBlock(layers, 3, 3);
  layers.forEach((layer, l) => assert.deepEqual(layer.k, copied[l], 'a block over itself changes nothing'));
  assert.throws(() => copyKvBlock(layers, 0, NUM_BLOCKS), /outside the pool/);
});
