// Disk-backed swap space for KV blocks (`--swap-space-gb`): the scheduler preempts a sequence by
// writing its blocks here and freeing them in the pool, and restores it into fresh blocks when room
// returns. Everything is synchronous: it runs on the engine worker thread, where blocking only
// pauses the step loop.
//
// One file per handle (`<root>/<pid>-XXXXXX/<n>.kv`), not one preallocated file with free extents:
// a handle is written once and read back once, whole, so a file per handle needs no extent
// allocator and never fragments; the disk holds only what is swapped out right now; deleting the
// file returns its space at once; and a leftover file is plainly a leak. The cost is one open and
// one unlink per swap, microseconds against megabytes of I/O. A preallocated file would only buy
// finding a full disk at start-up; here a full disk fails that one swap-out, which the caller turns
// into a recompute.
//
// File layout: for each layer, the K bytes of the handle's blocks in the caller's order, then the V
// bytes. Runs of consecutive blocks are one contiguous range of a side, so they go out as one
// buffer; all of it goes through writev / readv straight from and into the pool's own memory.
import { closeSync, mkdirSync, mkdtempSync, openSync, readvSync, rmSync, unlinkSync, writevSync } from 'node:fs';
import { join } from 'node:path';
import type { KvLayer } from '../kernels/ops.js';
import { checkBlock, kvBytesPerBlock, sideBlockBytes } from './kv-blocks.js';

/** Where swap directories go unless told otherwise. */
export const DEFAULT_SWAP_ROOT = '/tmp/svc-swap';

/** One swapped-out set of blocks. Opaque: only the space that made it can read or drop it. */
export interface SwapHandle {
  readonly numBlocks: number;
  /** Bytes it holds in the swap space (numBlocks × bytesPerBlock). */
  readonly bytes: number;
}

export interface KvSwapOptions {
  /** Parent of the private directory; made if missing. Default DEFAULT_SWAP_ROOT. */
  root?: string;
  /** Most bytes held at once; 0 disables swap (no directory is made). */
  capacityBytes: number;
  /** The KV pool whose blocks are swapped. */
  layers: readonly KvLayer[];
}

interface SwapFile {
  path: string;
  bytes: number;
}

// Buffers per writev / readv call: Linux's IOV_MAX.
const MAX_IOVECS = 1024;

export class KvSwapSpace {
  readonly bytesPerBlock: number;
  private readonly files = new Map<SwapHandle, SwapFile>();
  private used = 0;
  private nextFile = 0;
  private closed = false;

  private constructor(
    /** The private directory; null when swap is disabled. */
    readonly directory: string | null,
    readonly capacityBytes: number,
    private readonly layers: readonly KvLayer[],
  ) {
    this.bytesPerBlock = kvBytesPerBlock(layers);
  }

  /**
   * Makes a private directory (mode 0700) under `root`, or throws an Error naming the path and the
   * OS error. Capacity 0 makes nothing. The directory is deleted by `close()` and, failing that,
   * when the thread that made the space exits normally (its process 'exit' event). `worker.terminate()`
   * and the main thread exiting do not run a worker's 'exit' listeners: whoever stops the engine
   * worker that way must have it call `close()` first, or delete `directory` itself.
   */
  static create(options: KvSwapOptions): KvSwapSpace {
    const { capacityBytes, layers } = options;
    if (!Number.isFinite(capacityBytes) || capacityBytes < 0)
      throw new RangeError(`KV swap capacity must be a non-negative byte count, got ${capacityBytes}`);
    if (layers.length === 0) throw new RangeError('KV swap space needs at least one KV layer');
    for (const layer of layers) {
      if (layer.numBlocks !== layers[0].numBlocks)
        throw new RangeError(`KV layers disagree on the pool size (${layer.numBlocks} vs ${layers[0].numBlocks} blocks)`);
    }
    const capacity = Math.floor(capacityBytes);
    if (capacity === 0) return new KvSwapSpace(null, 0, layers);
    const root = options.root ?? DEFAULT_SWAP_ROOT;
    let directory: string;
    try {
      mkdirSync(root, { recursive: true });
      directory = mkdtempSync(join(root, `${process.pid}-`));
    } catch (err) {
      throw new Error(`cannot create the KV swap directory under ${root}: ${(err as Error).message}`, { cause: err });
    }
    const space = new KvSwapSpace(directory, capacity, layers);
    openSpaces.add(space);
    if (openSpaces.size === 1) process.on('exit', closeOpenSpaces);
    return space;
  }

  usedBytes(): number {
    return this.used;
  }

  /** Whether `numBlocks` blocks fit in what is left of the capacity. */
  canSwapOut(numBlocks: number): boolean {
    return (
      !this.closed &&
      this.directory !== null &&
      Number.isInteger(numBlocks) &&
      numBlocks >= 0 &&
      this.used + numBlocks * this.bytesPerBlock <= this.capacityBytes
    );
  }

  /**
   * Copies the given physical blocks of every layer (K and V) into one new swap file. Throws when
   * they do not fit (check `canSwapOut` first) and on any I/O error (disk full, EIO), in which case
   * the partial file is removed and nothing is counted: the caller recomputes instead.
   */
  swapOut(blocks: readonly number[]): SwapHandle {
    if (this.directory === null) throw new Error('KV swap is disabled (capacity 0)');
    if (this.closed) throw new Error('KV swap space is closed');
    for (const b of blocks) checkBlock(b, this.layers[0].numBlocks);
    const bytes = blocks.length * this.bytesPerBlock;
    if (this.used + bytes > this.capacityBytes) {
      throw new Error(
        `KV swap space full: ${blocks.length} blocks need ${bytes} bytes, ${this.capacityBytes - this.used} of ${this.capacityBytes} free`,
      );
    }
    const path = join(this.directory, `${this.nextFile++}.kv`);
    let fd: number | null = null;
    try {
      fd = openSync(path, 'wx', 0o600);
      transfer(fd, this.segments(blocks), 'write');
      const opened = fd;
      fd = null;
      closeSync(opened); // a network filesystem may report a write error only here
    } catch (err) {
      if (fd !== null) ignoreErrors(() => closeSync(fd!));
      ignoreErrors(() => unlinkSync(path));
      throw new Error(`KV swap-out of ${blocks.length} blocks (${bytes} bytes) to ${path} failed: ${(err as Error).message}`, {
        cause: err,
      });
    }
    const handle: SwapHandle = Object.freeze({ numBlocks: blocks.length, bytes });
    this.files.set(handle, { path, bytes });
    this.used += bytes;
    return handle;
  }

  /**
   * Reads a handle's data back into `blocks` (as many as it holds; they need not be the blocks it
   * came from), then deletes its file and frees its bytes. A wrong handle or block list throws and
   * leaves the handle as it was; an I/O error throws too, but the handle is gone all the same (its
   * blocks hold partial data: the caller recomputes).
   */
  swapIn(handle: SwapHandle, blocks: readonly number[]): void {
    const file = this.files.get(handle);
    if (file === undefined)
      throw new Error(this.closed ? 'KV swap space is closed' : 'unknown KV swap handle (already swapped in or discarded)');
    if (blocks.length !== handle.numBlocks) throw new RangeError(`KV swap handle holds ${handle.numBlocks} blocks, ${blocks.length} given`);
    for (const b of blocks) checkBlock(b, this.layers[0].numBlocks);
    if (new Set(blocks).size !== blocks.length) throw new RangeError('KV swap-in into the same block twice');
    try {
      const fd = openSync(file.path, 'r');
      try {
        transfer(fd, this.segments(blocks), 'read');
      } finally {
        closeSync(fd);
      }
    } catch (err) {
      throw new Error(`KV swap-in of ${blocks.length} blocks from ${file.path} failed: ${(err as Error).message}`, { cause: err });
    } finally {
      this.drop(handle, file);
    }
  }

  /** Drops a handle without reading it (its sequence ended while swapped out). A handle already gone is ignored. */
  discard(handle: SwapHandle): void {
    const file = this.files.get(handle);
    if (file !== undefined) this.drop(handle, file);
  }

  /** Deletes every file and the directory. Idempotent; never throws. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.files.clear();
    this.used = 0;
    if (this.directory === null) return;
    ignoreErrors(() => rmSync(this.directory!, { recursive: true, force: true }));
    openSpaces.delete(this);
    if (openSpaces.size === 0) process.off('exit', closeOpenSpaces);
  }

  private drop(handle: SwapHandle, file: SwapFile): void {
    this.files.delete(handle);
    this.used -= file.bytes;
    // A file that will not go is swept with the directory by close().
    ignoreErrors(() => unlinkSync(file.path));
  }

  /** The byte ranges of `blocks` in file order: per layer, K then V, one range per run of consecutive blocks. */
  private segments(blocks: readonly number[]): Uint8Array[] {
    const out: Uint8Array[] = [];
    for (const layer of this.layers) {
      for (const side of [layer.k, layer.v]) {
        const bytes = sideBlockBytes(layer, side);
        for (let i = 0; i < blocks.length;) {
          let j = i + 1;
          while (j < blocks.length && blocks[j] === blocks[j - 1] + 1) j++;
          out.push(side.subarray(blocks[i] * bytes, (blocks[j - 1] + 1) * bytes));
          i = j;
        }
      }
    }
    return out;
  }
}

// The spaces of this thread not yet closed, closed by one 'exit' listener while there are any.
const openSpaces = new Set<KvSwapSpace>();

function closeOpenSpaces(): void {
  for (const space of [...openSpaces]) space.close();
}

/** Writes or reads `segments` back to back from offset 0, through short transfers; a read past the end throws. */
function transfer(fd: number, segments: Uint8Array[], mode: 'write' | 'read'): void {
  let position = 0;
  let i = 0;
  while (i < segments.length) {
    const batch = segments.slice(i, i + MAX_IOVECS);
    const want = batch.reduce((n, s) => n + s.byteLength, 0);
    const done = mode === 'write' ? writevSync(fd, batch, position) : readvSync(fd, batch, position);
    if (done === 0 && want > 0) throw new Error(mode === 'write' ? 'write made no progress' : `swap file ends at byte ${position}`);
    position += done;
    // Skip the buffers done; a partly done one continues from where it stopped.
    let left = done;
    while (i < segments.length && left >= segments[i].byteLength) left -= segments[i++].byteLength;
    if (left > 0) segments[i] = segments[i].subarray(left);
  }
}

function ignoreErrors(f: () => void): void {
  try {
    f();
  } catch {
    // best effort
  }
}
