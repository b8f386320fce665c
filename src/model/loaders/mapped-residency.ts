// Keeps a mapped GGUF file's weights in flat memory while the model is built from it (the
// checkpoint's WeightResidency). The model takes tensors roughly in file order; for each one:
//  - fast load: a weight repacked or decoded into memory of its own (whatever prepareWeight
//    repacks, norms decoded to f32, Q/K rows un-interleaved) has its source pages released
//    (MADV_DONTNEED: the page cache keeps them, the process's RSS stops counting them), so the
//    file's bytes and the packed copy are never both resident; a weight multiplied in place has
//    its pages mapped now (populate), so the first request takes no page faults. The next
//    READ_AHEAD bytes after the tensor just taken are mapped in one call (MADV_POPULATE_READ):
//    measured several times faster than letting the packing threads fault them in page by page.
//  - --no-fast-load: pages stay as the kernel faulted them in; nothing is released.
// A stacked expert tensor of which a rank keeps only its own experts is told with the part kept:
// in fast load that part is populated and the rest released, so a rank holds only its experts' pages.
// A derived copy (un-interleaved Q/K rows) is made when the model first reads it and dropped as
// soon as the model has its own weight, so at most one such copy is alive at a time.
// With a packed-weights cache file (packed-cache.ts) the packed weights never read their tensors'
// bytes: nothing is read ahead (readAheadOn false); the few tensors read (norms) fault their pages in,
// and weights used in place are populated as above.
import type { LoadProgress, Tensor, WeightResidency } from '../types.js';
import type { MappedFile } from './file-bytes.js';

/** How far ahead of the tensor just taken pages are mapped (bounded: they count in RSS until released). */
const READ_AHEAD = 64 * 2 ** 20;

interface Entry {
  offset: number;
  length: number;
  /** Set for tensors whose data is a copy derived from the mapped bytes. */
  derived?: DerivedBytes;
}

/** A copy made from mapped bytes on first read and forgotten on drop() (remade if read again). */
export class DerivedBytes {
  private bytes: Uint8Array | null = null;
  constructor(private readonly make: () => Uint8Array) {}
  get(): Uint8Array {
    return (this.bytes ??= this.make());
  }
  drop(): void {
    this.bytes = null;
  }
}

export class MappedResidency implements WeightResidency {
  private readonly entries = new Map<string, Entry>();
  /** Offsets of the ranges taken so far (tied tensors share one). */
  private readonly done = new Set<number>();
  private readonly ranges = new Set<number>();
  private rangeBytes = 0;
  private takenBytes = 0;
  /** The window already asked for: [aheadFrom, aheadTo). */
  private aheadFrom = 0;
  private aheadTo = 0;

  constructor(
    private readonly file: MappedFile,
    private readonly fast: boolean,
    private readonly onProgress?: (p: LoadProgress) => void,
    private readonly readAheadOn = true,
  ) {}

  get totalBytes(): number {
    return this.rangeBytes;
  }

  /** A tensor viewing bytes [offset, offset + length) of the file (its data is a view, or `derived` from it). */
  add(name: string, offset: number, length: number, derived?: DerivedBytes): void {
    this.entries.set(name, { offset, length, derived });
    if (!this.ranges.has(offset)) {
      this.ranges.add(offset);
      this.rangeBytes += length;
    }
  }

  /** Starts reading ahead from `offset` (the first tensor the model will take). */
  start(offset: number): void {
    if (this.fast) this.readAhead(offset);
  }

  taken(tensor: Tensor, inPlace: boolean, kept?: { begin: number; end: number }): void {
    const e = this.entries.get(tensor.name);
    if (!e) return;
    // A derived copy in use stays (the weight is that copy); the mapped range is free either way.
    if (e.derived && !inPlace) e.derived.drop();
    if (this.fast) {
      this.readAhead(e.offset + e.length);
      if (inPlace && !e.derived) {
        // Only the part kept is mapped for good: another rank's experts in the same tensor are released.
        const begin = Math.max(0, Math.min(kept?.begin ?? 0, e.length));
        const end = Math.max(begin, Math.min(kept?.end ?? e.length, e.length));
        if (begin > 0) this.file.advise(e.offset, begin, 'release');
        if (end > begin) this.file.advise(e.offset + begin, end - begin, 'populate');
        if (end < e.length) this.file.advise(e.offset + end, e.length - end, 'release');
      } else this.file.advise(e.offset, e.length, 'release');
    }
    if (this.done.has(e.offset)) return;
    this.done.add(e.offset);
    this.takenBytes += e.length;
    this.onProgress?.({ tensors: this.done.size, totalTensors: this.ranges.size, bytes: this.takenBytes, totalBytes: this.rangeBytes });
  }

  private readAhead(from: number): void {
    if (!this.readAheadOn) return;
    const to = Math.min(this.file.size, from + READ_AHEAD);
    // Inside the current window: extend it; elsewhere (the model jumped, e.g. to lm_head): a new one.
    const inWindow = from >= this.aheadFrom && from <= this.aheadTo;
    const start = inWindow ? this.aheadTo : from;
    if (!inWindow) this.aheadFrom = from;
    if (to <= start) return;
    this.file.advise(start, to - start, 'populate');
    this.aheadTo = to;
  }
}
