// The packed-weights cache: the matrices the fast loader repacked for the kernels (ops.packedLayout,
// native/packed.h) kept in a file, so that a later load of the same GGUF file maps them instead of
// repacking. Repacking costs CPU and, mostly, the kernel's zeroing of the fresh anonymous memory it
// writes (measured ≈ 2/3 of a Q8_0 load's CPU time); a mapped file whose pages sit in the page cache
// costs neither, and RSS stays about the packed size, as with llama.cpp's mapped GGUF.
//
// One file per GGUF file (named by a hash of its real path) in the cache directory:
//   bytes 0..8   magic "SVCPACK\n"
//         8..12  u32 LE: FILE_VERSION
//        12..16  u32 LE: length of the JSON header
//        16..48  SHA-256 of the JSON header
//        48..    the JSON header (CacheHeader): the pack format (the kernels' layouts and their
//                version), the GGUF file's identity (real path, size, mtime, inode), the file's size,
//                and per matrix its key, dtype, shape, offset, length and a SHA-1 of its first and
//                last 4 KiB
//   then each matrix's bytes at a 4096-aligned offset.
// write() runs once the server is serving: a temporary file in the same directory, synced, then
// renamed into place, so a reader sees a whole file or none, and processes writing the same cache
// at once each rename a whole file of their own. A file that is truncated, of another version or
// format, or made from another state of the GGUF file is ignored (the load says why), and the load
// repacks and rewrites it. A directory that cannot be written to is logged; serving goes on.
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, realpathSync, statSync, unlinkSync } from 'node:fs';
import { mkdir, open, rename, unlink } from 'node:fs/promises';
import { homedir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { threadId } from 'node:worker_threads';
import { readEnv } from '../../common/env.js';
import type { DType } from '../../kernels/dtypes.js';
import type { PackedLayout, WeightMatrix } from '../../kernels/ops.js';
import type { PackedWeightStore } from '../types.js';
import { mapFile, type FileView, type MappedFile } from './file-bytes.js';

const MAGIC = 'SVCPACK\n';
/** The container's version (the packed bytes' own version is in the format string). */
export const FILE_VERSION = 1;
const PREFIX_BYTES = 48;
const ALIGN = 4096;
/** Bytes hashed at each end of a matrix (a cheap check that the bytes are where the header says). */
const EDGE_BYTES = 4096;
/** Largest single write: big enough to stream, small enough for one libuv thread at a time. */
const WRITE_CHUNK = 16 * 2 ** 20;

export interface PackedCacheSettings {
  /** Directory of the cache files (made when first written). */
  dir: string;
  /** ops.packedLayout.format() of the kernels that will take the weights. */
  format: string;
}

export type CacheLog = (level: 'info' | 'warn', message: string) => void;

/** What a load took from the cache, for the start-up log. */
export interface PackedCacheReport {
  file: string;
  /** Matrices mapped from the cache file, and their bytes. */
  mapped: number;
  mappedBytes: number;
  /** Matrices packed during this load (the cache file is written once serving when there are any). */
  packed: number;
  packedBytes: number;
  /** Why the cache file was not used, when it was not. */
  ignored?: string;
}

interface Identity {
  path: string;
  size: number;
  mtimeMs: number;
  ino: number;
}

interface EntryHeader {
  key: string;
  dtype: DType;
  rows: number;
  cols: number;
  offset: number;
  length: number;
  /** SHA-1 (hex) of the first and last EDGE_BYTES. */
  edges: string;
}

interface CacheHeader {
  format: string;
  source: Identity;
  fileBytes: number;
  entries: EntryHeader[];
}

/** The cache directory: --packed-cache-dir, else $XDG_CACHE_HOME/svc/packed, else ~/.cache/svc/packed. */
export function packedCacheRoot(dir?: string, env?: NodeJS.ProcessEnv): string {
  if (dir) return resolve(dir);
  const xdg = readEnv('XDG_CACHE_HOME', env);
  return join(xdg !== null ? resolve(xdg) : join(homedir(), '.cache'), 'svc', 'packed');
}

/** The cache file of a GGUF file: one per real path (a changed file replaces its cache file). */
export function packedCacheFile(dir: string, ggufPath: string): string {
  const real = realpathSync(ggufPath);
  const stem = basename(real)
    .replace(/\.gguf$/i, '')
    .replace(/[^A-Za-z0-9._-]/g, '_');
  return join(dir, `${stem}-${createHash('sha256').update(real).digest('hex').slice(0, 16)}.svcpack`);
}

class CacheFileError extends Error {}

/** The header of a cache file's bytes, checked against its own length; throws CacheFileError saying what is wrong. */
function readHeader(file: FileView): CacheHeader {
  if (file.size < PREFIX_BYTES) throw new CacheFileError('not a packed-weights cache file');
  const prefix = file.view(0, PREFIX_BYTES);
  if (Buffer.from(prefix.subarray(0, 8)).toString('latin1') !== MAGIC) throw new CacheFileError('not a packed-weights cache file');
  const view = new DataView(prefix.buffer, prefix.byteOffset, PREFIX_BYTES);
  const version = view.getUint32(8, true);
  if (version !== FILE_VERSION) throw new CacheFileError(`file version ${version}, this svc writes ${FILE_VERSION}`);
  const length = view.getUint32(12, true);
  if (PREFIX_BYTES + length > file.size) throw new CacheFileError(`truncated: ${file.size} bytes, its header alone is longer`);
  const json = file.view(PREFIX_BYTES, length);
  const digest = createHash('sha256').update(json).digest();
  if (!digest.equals(prefix.subarray(16, 48))) throw new CacheFileError('header checksum mismatch');
  const header = JSON.parse(Buffer.from(json).toString('utf8')) as CacheHeader;
  if (header.fileBytes !== file.size)
    throw new CacheFileError(`truncated or overwritten: ${file.size} bytes, its header says ${header.fileBytes}`);
  for (const e of header.entries)
    if (!(e.offset % 64 === 0 && e.offset >= PREFIX_BYTES + length && e.length > 0 && e.offset + e.length <= header.fileBytes))
      throw new CacheFileError(`matrix ${e.key} lies outside the file`);
  return header;
}

function edgeHash(data: Uint8Array): string {
  const n = Math.min(EDGE_BYTES, data.byteLength);
  return createHash('sha1')
    .update(data.subarray(0, n))
    .update(data.subarray(data.byteLength - n))
    .digest('hex');
}

function identityOf(ggufPath: string): Identity {
  const path = realpathSync(ggufPath);
  const st = statSync(path);
  return { path, size: st.size, mtimeMs: st.mtimeMs, ino: st.ino };
}

function sameIdentity(a: Identity, b: Identity): boolean {
  return a.path === b.path && a.size === b.size && a.mtimeMs === b.mtimeMs && a.ino === b.ino;
}

const alignUp = (n: number, to: number) => Math.ceil(n / to) * to;

function errorText(err: unknown): string {
  const e = err as NodeJS.ErrnoException;
  return e.code ? `${e.code}: ${e.message}` : String(e.message ?? err);
}

export class PackedWeightCache implements PackedWeightStore {
  /** Weights this load took or packed, in order, for write(). */
  private readonly kept: { key: string; w: WeightMatrix }[] = [];
  private mappedCount = 0;
  private mappedBytes = 0;
  /** Byte ranges of the matrices taken from the mapping, in take order. */
  private readonly takenRanges: [number, number][] = [];
  private packedCount = 0;
  private packedBytes = 0;
  /** Set once a matrix under a key the file holds failed its checks (logged once). */
  private badEntry: string | null = null;

  private constructor(
    readonly file: string,
    private readonly settings: PackedCacheSettings,
    private readonly source: Identity,
    private readonly log: CacheLog,
    private readonly mapped: { file: MappedFile; entries: Map<string, EntryHeader> } | null,
    private readonly ignored: string | undefined,
  ) {}

  /**
   * The cache of `ggufPath` in settings.dir: its file mapped and its pages populated when it is
   * valid for this GGUF file and format; otherwise none, with the reason logged. Never throws for a
   * bad or missing cache file (only for a GGUF file that cannot be stat'ed).
   */
  static open(ggufPath: string, settings: PackedCacheSettings, log: CacheLog): PackedWeightCache {
    const source = identityOf(ggufPath);
    const file = packedCacheFile(settings.dir, ggufPath);
    const none = (reason: string) => new PackedWeightCache(file, settings, source, log, null, reason);
    const ignore = (reason: string) => {
      log('warn', `packed-weights cache ${file} ignored (${reason}): repacking; it is rewritten once serving`);
      return none(reason);
    };
    if (!existsSync(file)) return none('none yet');
    let mapping: MappedFile;
    try {
      mapping = mapFile(file, false);
    } catch (err) {
      return ignore(`cannot map it (${errorText(err)})`);
    }
    let header: CacheHeader;
    try {
      header = readHeader(mapping);
    } catch (err) {
      if (err instanceof CacheFileError || err instanceof SyntaxError) return ignore((err as Error).message);
      throw err;
    }
    if (header.format !== settings.format)
      return ignore(`packed in another format: ${header.format}; these kernels' is ${settings.format}`);
    if (!sameIdentity(header.source, source))
      return ignore(`made from another state of ${source.path} (size, modification time or inode changed)`);
    const entries = new Map(header.entries.map((e) => [e.key, e]));
    // Weights are read at every step: map the pages now (from the page cache), as the fast loader
    // does for weights used in place, so the first request takes no page faults.
    const first = Math.min(...header.entries.map((e) => e.offset));
    if (Number.isFinite(first)) mapping.advise(first, header.fileBytes - first, 'populate');
    return new PackedWeightCache(file, settings, source, log, { file: mapping, entries }, undefined);
  }

  /** True when a valid cache file is mapped (the loader then reads nothing ahead of the model). */
  get usable(): boolean {
    return this.mapped !== null;
  }

  take(key: string, dtype: DType, rows: number, cols: number, layout: PackedLayout): WeightMatrix | null {
    const e = this.mapped?.entries.get(key);
    if (!e || e.dtype !== dtype || e.rows !== rows || e.cols !== cols || layout.packedLength(dtype, rows, cols) !== e.length) return null;
    const data = this.mapped!.file.view(e.offset, e.length);
    if (edgeHash(data) !== e.edges) {
      if (this.badEntry === null) {
        this.badEntry = key;
        this.log(
          'warn',
          `packed-weights cache ${this.file}: matrix ${key} fails its check; such matrices are repacked and the file rewritten`,
        );
      }
      return null;
    }
    const w = layout.adopt(dtype, rows, cols, data);
    this.kept.push({ key, w });
    this.mappedCount++;
    this.mappedBytes += e.length;
    this.takenRanges.push([e.offset, e.length]);
    return w;
  }

  /**
   * Once the model is built: the matrices taken from the mapping move into anonymous huge pages in
   * the background, at the same addresses (MappedFile.moveToHugePages). Decode reads every weight
   * each step, and from 4 KiB page-cache pages it ran 6-11% slower (Qwen3-0.6B and Llama-3.2-1B,
   * Q8_0 and Q4_K_M, 2 threads). Nothing when transparent huge pages are off. Returns the
   * 2 MiB chunks that will move.
   */
  moveToHugePages(): number {
    if (this.mapped === null || this.takenRanges.length === 0 || !transparentHugePagesOn()) return 0;
    return this.mapped.file.moveToHugePages(mergeRanges(this.takenRanges, ALIGN));
  }

  record(key: string, w: WeightMatrix, layout: PackedLayout): void {
    if (!layout.isPacked(w)) return;
    this.kept.push({ key, w });
    this.packedCount++;
    this.packedBytes += w.data.byteLength;
  }

  report(): PackedCacheReport {
    return {
      file: this.file,
      mapped: this.mappedCount,
      mappedBytes: this.mappedBytes,
      packed: this.packedCount,
      packedBytes: this.packedBytes,
      ...(this.ignored !== undefined ? { ignored: this.ignored } : {}),
    };
  }

  /** True when this load packed matrices the cache file does not hold (write() then writes it anew). */
  get needsWrite(): boolean {
    return this.packedCount > 0;
  }

  /**
   * Writes every weight this load took or packed to a new cache file: a temporary file (its path
   * handed to onScratch, then null once it is gone or renamed), synced, renamed into place. Meant
   * for once the server is serving: the writes go through the thread pool, this thread only
   * schedules them. Errors are logged, never thrown.
   */
  async write(onScratch?: (path: string | null) => void): Promise<void> {
    if (this.kept.length === 0) return;
    const t0 = performance.now();
    const scratch = `${this.file}.tmp-${process.pid}-${threadId}-${Math.random().toString(36).slice(2, 10)}`;
    let scratchMade = false;
    try {
      await mkdir(this.settings.dir, { recursive: true });
      removeStaleScratch(this.file);
      // The same bytes under two keys (a matrix taken twice) are written once.
      const unique = new Map<Uint8Array, number>();
      const plan = (dataStart: number) => {
        unique.clear();
        let end = dataStart;
        const entries: EntryHeader[] = this.kept.map(({ key, w }) => {
          let offset = unique.get(w.data);
          if (offset === undefined) {
            offset = alignUp(end, ALIGN);
            end = offset + w.data.byteLength;
            unique.set(w.data, offset);
          }
          return { key, dtype: w.dtype, rows: w.rows, cols: w.cols, offset, length: w.data.byteLength, edges: edgeHash(w.data) };
        });
        const header: CacheHeader = { format: this.settings.format, source: this.source, fileBytes: end, entries };
        return Buffer.from(JSON.stringify(header), 'utf8');
      };
      let dataStart = ALIGN;
      let json = plan(dataStart);
      while (PREFIX_BYTES + json.byteLength > dataStart) {
        dataStart = alignUp(PREFIX_BYTES + json.byteLength, ALIGN);
        json = plan(dataStart);
      }
      const prefix = Buffer.alloc(PREFIX_BYTES);
      prefix.write(MAGIC, 0, 'latin1');
      prefix.writeUInt32LE(FILE_VERSION, 8);
      prefix.writeUInt32LE(json.byteLength, 12);
      createHash('sha256').update(json).digest().copy(prefix, 16);

      const handle = await open(scratch, 'wx');
      scratchMade = true;
      onScratch?.(scratch);
      let bytes = 0;
      try {
        await handle.write(prefix, 0, PREFIX_BYTES, 0);
        await handle.write(json, 0, json.byteLength, PREFIX_BYTES);
        for (const [data, offset] of unique) {
          for (let at = 0; at < data.byteLength; at += WRITE_CHUNK) {
            const n = Math.min(WRITE_CHUNK, data.byteLength - at);
            const { bytesWritten } = await handle.write(data, at, n, offset + at);
            if (bytesWritten !== n) throw new Error(`short write (${bytesWritten} of ${n} bytes)`);
          }
          bytes += data.byteLength;
        }
        await handle.sync();
      } finally {
        await handle.close();
      }
      await rename(scratch, this.file);
      scratchMade = false;
      onScratch?.(null);
      this.log(
        'info',
        `packed-weights cache: wrote ${this.file} (${unique.size} matrices, ${(bytes / 2 ** 20).toFixed(1)} MiB, ` +
          `in ${((performance.now() - t0) / 1000).toFixed(1)} s); the next load maps it`,
      );
    } catch (err) {
      this.log('warn', `packed-weights cache: cannot write ${this.file} (${errorText(err)}); serving goes on, the next load repacks`);
      if (scratchMade) {
        await unlink(scratch).catch(() => undefined);
        onScratch?.(null);
      }
    }
  }
}

/** Temporary files of `file` left by processes that are gone (killed while writing). */
function removeStaleScratch(file: string): void {
  const dir = join(file, '..');
  const prefix = `${basename(file)}.tmp-`;
  for (const name of readdirSync(dir)) {
    if (!name.startsWith(prefix)) continue;
    const pid = Number(name.slice(prefix.length).split('-')[0]);
    if (!Number.isInteger(pid) || pid === process.pid || processAlive(pid)) continue;
    try {
      unlinkSync(join(dir, name));
    } catch {
      // Another process removed it first.
    }
  }
}

function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Whether madvise(MADV_HUGEPAGE) can give this process transparent huge pages (THP not 'never'). */
function transparentHugePagesOn(): boolean {
  try {
    return !readFileSync('/sys/kernel/mm/transparent_hugepage/enabled', 'utf8').includes('[never]');
  } catch {
    return false;
  }
}

/**
 * Byte ranges sorted and joined where less than `gap` bytes lie between them (the padding before the
 * next matrix's aligned offset): the move shrinks each range inwards to whole 2 MiB chunks.
 */
function mergeRanges(ranges: readonly [number, number][], gap: number): [number, number][] {
  const out: [number, number][] = [];
  for (const [offset, length] of [...ranges].sort((a, b) => a[0] - b[0])) {
    const last = out[out.length - 1];
    if (last && offset < last[0] + last[1] + gap) last[1] = Math.max(last[1], offset + length - last[0]);
    else out.push([offset, length]);
  }
  return out;
}
