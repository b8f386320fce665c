// Whole-file byte access for the weight loaders:
//  - read: large sequential reads into one ArrayBuffer the process owns (safetensors' fast path);
//  - mmap: a read-only memory mapping through the native addon, paged in lazily (GGUF always;
//    safetensors with --no-fast-load), with page advice on ranges of it (mapped-residency.ts).
// Tensors are zero-copy views into the result, so the bytes must be treated as read-only either way.
// Both are one ArrayBuffer viewed a range at a time (FileView): on Node 20 a typed array stops at
// 4 GiB, and model files (an 8B Q4_K_M, a 5 GB safetensors shard) do not.
import { closeSync, existsSync, fstatSync, openSync, readSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** Size of each sequential read: large enough to keep the disk streaming, small enough to stay interruptible. */
const READ_CHUNK = 64 * 1024 * 1024;

/** A file's bytes, a range at a time. */
export interface FileView {
  /** Bytes in the file. */
  readonly size: number;
  /** Bytes [offset, offset + length) as a view (RangeError outside the file). Read-only: with mmap, writing to it crashes the process. */
  view(offset: number, length: number): Uint8Array;
}

/** The FileView of bytes already in memory. */
export function bytesView(bytes: Uint8Array): FileView {
  return bufferView(bytes.buffer as ArrayBuffer, bytes.byteOffset, bytes.byteLength);
}

/** The FileView of `size` bytes of an ArrayBuffer from `base` (the whole buffer by default). */
function bufferView(buffer: ArrayBuffer, base = 0, size = buffer.byteLength): FileView {
  return {
    size,
    view(offset, length) {
      if (!(offset >= 0 && length >= 0 && offset + length <= size))
        throw new RangeError(`bytes [${offset}, ${offset + length}) lie outside the file`);
      return new Uint8Array(buffer, base + offset, length);
    },
  };
}

export interface FileBytes extends FileView {
  path: string;
  /** How the bytes were obtained. */
  mode: 'read' | 'mmap';
}

/** Load a file's bytes, by sequential reads (fastLoad) or by memory mapping. */
export function loadFileBytes(path: string, fastLoad: boolean): FileBytes {
  return fastLoad ? readWholeFile(path) : mapWholeFile(path);
}

function readWholeFile(path: string): FileBytes {
  let fd: number;
  try {
    fd = openSync(path, 'r');
  } catch (err) {
    throw new Error(`${path}: cannot open (${(err as Error).message})`, { cause: err });
  }
  try {
    const size = fstatSync(fd).size;
    // An ArrayBuffer rather than a Buffer, read and viewed in ranges: Buffers and typed arrays stop at 4 GiB.
    const buffer = new ArrayBuffer(size);
    let pos = 0;
    while (pos < size) {
      const len = Math.min(READ_CHUNK, size - pos);
      const n = readSync(fd, new Uint8Array(buffer, pos, len), 0, len, pos);
      if (n === 0) throw new Error(`${path}: file shrank while reading (got ${pos} of ${size} bytes)`);
      pos += n;
    }
    return { path, ...bufferView(buffer), mode: 'read' };
  } finally {
    closeSync(fd);
  }
}

/** Page advice on a range of a mapping (native/mmap.cc's codes). */
export const ADVICE = { release: 0, willneed: 1, populate: 2 } as const;

export interface MappedFile extends FileView {
  path: string;
  /** Gives the kernel `advice` for bytes [offset, offset + length); returns the bytes advised. */
  advise(offset: number, length: number, advice: keyof typeof ADVICE): number;
  /**
   * Moves the ranges' bytes into anonymous huge pages in the background, at the same addresses
   * (native/mmap.cc relocateToHugePages: a nice-19 thread; views stay valid). For bytes that are
   * read often and never released (advise 'release' would zero moved pages). Returns the 2 MiB
   * chunks it will move (ranges are shrunk inwards to whole chunks).
   */
  moveToHugePages(ranges: readonly (readonly [offset: number, length: number])[]): number;
}

interface NativeMmap {
  mapFile(path: string, sequential?: boolean): ArrayBuffer;
  adviseRange(buffer: ArrayBuffer, offset: number, length: number, advice: number): number;
  relocateToHugePages(buffer: ArrayBuffer, ranges: Float64Array): number;
}

/** Map `path` read-only. sequential: it will be read front to back (else the whole file is asked for ahead). */
export function mapFile(path: string, sequential: boolean): MappedFile {
  if (!existsSync(path)) throw new Error(`${path}: file not found`);
  const native = loadNative();
  const buffer = native.mapFile(path, sequential);
  return {
    path,
    ...bufferView(buffer),
    advise: (offset, length, advice) => native.adviseRange(buffer, offset, length, ADVICE[advice]),
    moveToHugePages: (ranges) => native.relocateToHugePages(buffer, Float64Array.from(ranges.flat())),
  };
}

let nativeMmap: NativeMmap | null = null;

function mapWholeFile(path: string): FileBytes {
  const { size, view } = mapFile(path, false);
  return { path, size, view, mode: 'mmap' };
}

/** The addon lives at <repo>/build/Release; find it by walking up from this (compiled or source) file. */
function loadNative(): NativeMmap {
  if (nativeMmap) return nativeMmap;
  let dir = dirname(fileURLToPath(import.meta.url));
  for (;;) {
    const candidate = join(dir, 'build', 'Release', 'svc_native.node');
    if (existsSync(candidate)) {
      const addon = createRequire(import.meta.url)(candidate) as Partial<NativeMmap>;
      if (
        typeof addon.mapFile !== 'function' ||
        typeof addon.adviseRange !== 'function' ||
        typeof addon.relocateToHugePages !== 'function'
      ) {
        throw new Error(
          `${candidate}: native addon has no mapFile() / adviseRange() / relocateToHugePages(); rebuild it with \`npx node-gyp rebuild\``,
        );
      }
      nativeMmap = addon as NativeMmap;
      return nativeMmap;
    }
    const parent = dirname(dir);
    if (parent === dir) {
      throw new Error(
        'memory-mapped loading (every GGUF file, safetensors with --no-fast-load) needs the native addon (build/Release/svc_native.node); build it with `npx node-gyp rebuild`',
      );
    }
    dir = parent;
  }
}
