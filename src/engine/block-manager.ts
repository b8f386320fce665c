// The KV pool's bookkeeping: which fixed-size blocks are free, and how many owners each used
// block has. With prefix caching (prefix-cache.ts) full blocks stay in the radix tree after their
// last owner lets go — evictable, least recently released first, only when the pool needs room —
// and sequences with the same prefix share them by reference count. Cached blocks are immutable: a
// sequence about to write into one copies it first (makeWritable). The storage lives in kv-cache.ts.
import { PrefixCache } from './prefix-cache.js';

export interface BlockManagerOptions {
  /** Keep full blocks in a radix prefix cache for later sequences. */
  prefixCaching?: boolean;
  /** Copies a block's KV to another block in every layer (copy-on-write); needed with prefixCaching. */
  copyBlock?: (from: number, to: number) => void;
  /** Told the blocks that leave the prefix cache (hybrid models drop their state snapshots with them). */
  onUncached?: (blocks: readonly number[]) => void;
}

export class BlockManager {
  private readonly refCounts: Int32Array;
  // A stack: the most recently freed block is reused first (its memory is still warm).
  private readonly free: number[] = [];
  /** Cached blocks no sequence owns, in the order they were released (Map order: oldest first). */
  private readonly evictable = new Map<number, true>();
  private readonly cache: PrefixCache | null;
  private readonly copyBlock: (from: number, to: number) => void;
  private readonly onUncached: (blocks: readonly number[]) => void;

  constructor(
    readonly numBlocks: number,
    readonly blockSize: number,
    options: BlockManagerOptions = {},
  ) {
    if (!Number.isInteger(numBlocks) || numBlocks <= 0) throw new RangeError(`numBlocks must be a positive integer, got ${numBlocks}`);
    if (!Number.isInteger(blockSize) || blockSize <= 0) throw new RangeError(`blockSize must be a positive integer, got ${blockSize}`);
    this.refCounts = new Int32Array(numBlocks);
    for (let b = numBlocks - 1; b >= 0; b--) this.free.push(b);
    this.cache = options.prefixCaching ? new PrefixCache(blockSize) : null;
    this.onUncached = options.onUncached ?? (() => {});
    this.copyBlock =
      options.copyBlock ??
      (() => {
        throw new Error('copy-on-write needs BlockManagerOptions.copyBlock');
      });
  }

  get prefixCaching(): boolean {
    return this.cache !== null;
  }

  /** Blocks a sequence could get: free ones and cached ones no sequence owns. */
  freeBlocks(): number {
    return this.free.length + this.evictable.size;
  }

  /** Blocks with at least one owner; 0 when every sequence has been released (the leak check). */
  usedBlocks(): number {
    return this.numBlocks - this.freeBlocks();
  }

  /** Blocks in the prefix cache (owned or not). */
  cachedBlocks(): number {
    return this.cache?.size ?? 0;
  }

  refCount(block: number): number {
    return this.refCounts[block];
  }

  /** Blocks a table must gain to hold `numTokens` tokens. */
  blocksNeeded(table: readonly number[], numTokens: number): number {
    return Math.max(0, Math.ceil(numTokens / this.blockSize) - table.length);
  }

  canGrow(table: readonly number[], numTokens: number, extra = 0): boolean {
    return this.blocksNeeded(table, numTokens) + extra <= this.freeBlocks();
  }

  /** Appends fresh blocks to `table` until it covers `numTokens` tokens. All or nothing. */
  grow(table: number[], numTokens: number): void {
    const need = this.blocksNeeded(table, numTokens);
    if (need > this.freeBlocks()) throw new Error(`KV pool exhausted: need ${need} blocks, ${this.freeBlocks()} free`);
    for (let i = 0; i < need; i++) table.push(this.take());
  }

  /** Adds an owner to a block: a used one, or a cached one no sequence owns (no longer evictable then). */
  retain(block: number): void {
    if (this.refCounts[block] === 0) {
      if (!this.evictable.delete(block)) throw new Error(`retain of free block ${block}`);
    }
    this.refCounts[block]++;
  }

  /** Drops one owner of every block in `table` (blocks with no owner left go back to the pool) and empties it. */
  release(table: number[]): void {
    // Last block first: a prefix's later blocks become evictable before the earlier ones they continue.
    for (let i = table.length - 1; i >= 0; i--) this.releaseOne(table[i]);
    table.length = 0;
  }

  /** The cached blocks holding the longest whole-block prefix of `tokens` (not yet retained). */
  match(tokens: readonly number[]): number[] {
    return this.cache ? this.cache.match(tokens) : [];
  }

  /**
   * Puts a sequence's full blocks [from, to) into the prefix cache (blocks before `from` are cached
   * already). A block whose prefix is cached already under another block is swapped in the table
   * for the cached one, and its own block freed.
   */
  register(tokens: readonly number[], table: number[], from: number, to: number): void {
    if (!this.cache || from >= to) return;
    this.cache.insert(tokens, table, from, to, (index, cached) => {
      this.retain(cached);
      this.releaseOne(table[index]);
      table[index] = cached;
    });
  }

  /** Whether writing into table[index] needs a copy first (makeWritable would take a block). */
  isShared(table: readonly number[], index: number): boolean {
    const b = table[index];
    return b !== undefined && (this.refCounts[b] > 1 || (this.cache?.has(b) ?? false));
  }

  /** Copy-on-write: gives table[index] a private copy when it is shared or cached. Needs a free block. */
  makeWritable(table: number[], index: number): void {
    if (!this.isShared(table, index)) return;
    const copy = this.take();
    this.copyBlock(table[index], copy);
    this.releaseOne(table[index]);
    table[index] = copy;
  }

  private releaseOne(b: number): void {
    if (this.refCounts[b] <= 0) throw new Error(`double free of block ${b}`);
    if (--this.refCounts[b] > 0) return;
    if (this.cache?.has(b)) this.evictable.set(b, true);
    else this.free.push(b);
  }

  /** One block for a new owner: a free one, else the least recently released cached one (evicted with what continues it). */
  private take(): number {
    let b = this.free.pop();
    if (b === undefined) {
      const oldest = this.evictable.keys().next();
      if (oldest.done) throw new Error('KV pool exhausted');
      const removed = this.cache!.remove(oldest.value);
      for (const r of removed) {
        // A removed block still owned (not expected: owners hold every block before theirs) stays with its owner.
        if (this.evictable.delete(r)) this.free.push(r);
      }
      this.onUncached(removed);
      b = this.free.pop()!;
    }
    this.refCounts[b] = 1;
    return b;
  }
}
