// Files and buffers past 4 GiB (an 8B model's Q4_K_M file, its packed-weights cache, a large KV
// pool): on Node 20 a Buffer or typed array stops at 4 GiB, so the addon's mappings are ArrayBuffers
// made through V8 (native/mmap.cc) and the loaders view them a range at a time (FileView). Sparse
// files: nothing is written but a few marker bytes, so the test costs no disk and little time.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { closeSync, ftruncateSync, mkdtempSync, openSync, rmSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { loadAddon } from '../../src/kernels/native.js';
import { bytesView, loadFileBytes, mapFile } from '../../src/model/loaders/file-bytes.js';

const FOUR_GIB = 2 ** 32;

function withSparseFile(size: number, marks: [number, Uint8Array][], fn: (path: string) => void): void {
  const dir = mkdtempSync(join(tmpdir(), 'svc-large-'));
  const path = join(dir, 'sparse.bin');
  const fd = openSync(path, 'w');
  try {
    ftruncateSync(fd, size);
    for (const [at, bytes] of marks) writeSync(fd, bytes, 0, bytes.length, at);
  } finally {
    closeSync(fd);
  }
  try {
    fn(path);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

test('a file past 4 GiB maps whole, and views past 4 GiB read its bytes', () => {
  const size = FOUR_GIB + 3 * 4096 + 7;
  const head = Uint8Array.of(1, 2, 3, 4);
  const tail = Uint8Array.of(9, 8, 7, 6, 5);
  withSparseFile(
    size,
    [
      [0, head],
      [size - tail.length, tail],
    ],
    (path) => {
      for (const sequential of [false, true]) {
        const file = mapFile(path, sequential);
        assert.equal(file.size, size);
        assert.deepEqual([...file.view(0, 4)], [...head]);
        assert.deepEqual([...file.view(size - tail.length, tail.length)], [...tail]);
        // A range across the 4 GiB line, and one that starts past it.
        const across = file.view(FOUR_GIB - 8, 16);
        assert.equal(across.length, 16);
        assert.ok(across.every((b) => b === 0));
        assert.equal(file.view(FOUR_GIB + 100, 3).length, 3);
        assert.throws(() => file.view(size - 2, 3), RangeError);
        assert.throws(() => file.view(-1, 1), RangeError);
        // Page advice on ranges past 4 GiB: released pages read back the file's bytes.
        assert.ok(file.advise(FOUR_GIB, 8192, 'populate') > 0);
        assert.ok(file.advise(FOUR_GIB, 8192, 'release') > 0);
        assert.deepEqual([...file.view(size - tail.length, tail.length)], [...tail]);
      }
    },
  );
});

test('a file under 4 GiB maps as before, and bytesView gives the same ranges as the mapping', () => {
  const marks: [number, Uint8Array][] = [[5, Uint8Array.of(42, 43)]];
  withSparseFile(1 << 20, marks, (path) => {
    const mapped = mapFile(path, false);
    const read = loadFileBytes(path, true);
    const inMemory = bytesView(read.view(0, read.size));
    for (const f of [mapped, read, inMemory]) {
      assert.equal(f.size, 1 << 20);
      assert.deepEqual([...f.view(4, 4)], [0, 42, 43, 0]);
      assert.throws(() => f.view((1 << 20) - 1, 2), RangeError);
    }
    // A view of a sub-range is offset within its own buffer, as tensors' views are.
    const sub = bytesView(read.view(4, 8));
    assert.deepEqual([...sub.view(1, 2)], [42, 43]);
    assert.throws(() => sub.view(7, 2), RangeError);
  });
});

test('huge-page buffers past 4 GiB (a large KV pool) are whole and writable to their end', () => {
  const bytes = FOUR_GIB + (2 << 20);
  const buffer = loadAddon().allocHugePages(bytes);
  assert.equal(buffer.byteLength, bytes);
  const end = new Uint8Array(buffer, bytes - 16, 16);
  assert.ok(end.every((b) => b === 0));
  end.fill(0xcd);
  assert.equal(new Uint8Array(buffer, bytes - 1, 1)[0], 0xcd);
});
