// MappedFile.moveToHugePages (native/mmap.cc relocateToHugePages): a mapping's bytes move into
// anonymous memory in the background at the same addresses. Views read the same bytes before,
// during and after the move; the process's anonymous memory grows by what moved; a mapping
// collected while its move runs stops it.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { tmpdir } from 'node:os';
import { setTimeout as sleep } from 'node:timers/promises';
import { mapFile } from '../../src/model/loaders/file-bytes.js';
import { releaseHeapMemory } from '../../src/kernels/release-heap.js';

const MiB = 1 << 20;

/** A file of `bytes` pseudo-random bytes, and its path. */
function patternFile(dir: string, bytes: number): string {
  const data = new Uint8Array(bytes);
  let x = 12345;
  for (let i = 0; i < bytes; i += 4) {
    x = (Math.imul(x, 1103515245) + 12345) >>> 0;
    data[i] = x & 0xff;
    data[i + 1] = (x >>> 8) & 0xff;
    data[i + 2] = (x >>> 16) & 0xff;
    data[i + 3] = x >>> 24;
  }
  const path = join(dir, 'weights.bin');
  writeFileSync(path, data);
  return path;
}

function checksum(bytes: Uint8Array): number {
  const words = new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  let h = 0;
  for (let i = 0; i < words.length; i++) h = (Math.imul(h, 31) + words[i]!) >>> 0;
  return h;
}

/** This process's anonymous RSS in bytes (smaps_rollup). */
function anonymousBytes(): number {
  const m = /^Anonymous:\s+(\d+) kB/m.exec(readFileSync('/proc/self/smaps_rollup', 'utf8'));
  return Number(m![1]) * 1024;
}

test('moveToHugePages: the same bytes at the same addresses, before, during and after the move', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-relocate-'));
  try {
    const size = 64 * MiB;
    const file = mapFile(patternFile(dir, size), false);
    const view = file.view(0, size);
    const head = file.view(0, 4096);
    const expected = checksum(view);
    const expectedHead = checksum(head);
    // The file's contents were made in a buffer that is garbage now: free it before the baseline.
    releaseHeapMemory();
    const before = anonymousBytes();
    // Whole 2 MiB chunks inside [1 MiB, size - 1 MiB): at least 30 of the 32 the file spans.
    const chunks = file.moveToHugePages([[MiB, size - 2 * MiB]]);
    assert.ok(chunks >= 29 && chunks <= 31, `chunks ${chunks}`);
    assert.equal(file.moveToHugePages([[MiB, size - 2 * MiB]]), 0, 'a mapping already moving is not moved twice');
    // The mover runs on idle CPU: wait between checks (a busy loop here would starve it).
    let moved = false;
    for (let i = 0; i < 500 && !moved; i++) {
      assert.equal(checksum(view), expected, 'bytes while moving');
      moved = anonymousBytes() - before >= (chunks - 2) * 2 * MiB;
      if (!moved) await sleep(20);
    }
    assert.ok(moved, `anonymous memory grew by ${((anonymousBytes() - before) / MiB).toFixed(0)} MiB for ${chunks} chunks`);
    assert.equal(checksum(view), expected, 'bytes after the move');
    assert.equal(checksum(head), expectedHead, 'a view made before the move');
    assert.equal(checksum(file.view(0, size)), expected, 'a view made after the move');
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('moveToHugePages: a mapping collected while it moves stops the move (no crash, later mappings intact)', async () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-relocate-'));
  try {
    const size = 64 * MiB;
    const path = patternFile(dir, size);
    const expected = checksum(mapFile(path, false).view(0, size));
    for (let round = 0; round < 4; round++) {
      (() => {
        const file = mapFile(path, false);
        assert.ok(file.moveToHugePages([[0, size]]) > 0);
      })();
      await sleep(round * 5);
      // The mapping's last reference is gone: collecting it runs its deleter, which stops the move.
      releaseHeapMemory();
    }
    await sleep(50);
    assert.equal(checksum(mapFile(path, false).view(0, size)), expected);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
