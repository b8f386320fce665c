// The KV pool's bookkeeping: which fixed-size blocks are free, and how many owners each used
// block has. Reference counts are there so a prefix cache can share full blocks between
// sequences; today every block has one owner. The storage itself lives in kv-cache.ts.

export class BlockManager {
  private readonly refCounts: Int32Array;
  // A stack: the most recently freed block is reused first (its memory is still warm).
  private readonly free: number[] = [];

  constructor(
    readonly numBlocks: number,
    readonly blockSize: number,
  ) {
    if (!Number.isInteger(numBlocks) || numBlocks <= 0) throw new RangeError(`numBlocks must be a positive integer, got ${numBlocks}`);
    if (!Number.isInteger(blockSize) || blockSize <= 0) throw new RangeError(`blockSize must be a positive integer, got ${blockSize}`);
    this.refCounts = new Int32Array(numBlocks);
    for (let b = numBlocks - 1; b >= 0; b--) this.free.push(b);
  }

  freeBlocks(): number {
    return this.free.length;
  }

  /** Blocks with at least one owner; 0 when every sequence has been released (the leak check). */
  usedBlocks(): number {
    return this.numBlocks - this.free.length;
  }

  refCount(block: number): number {
    return this.refCounts[block];
  }

  /** Blocks a table must gain to hold `numTokens` tokens. */
  blocksNeeded(table: readonly number[], numTokens: number): number {
    return Math.max(0, Math.ceil(numTokens / this.blockSize) - table.length);
  }

  canGrow(table: readonly number[], numTokens: number): boolean {
    return this.blocksNeeded(table, numTokens) <= this.free.length;
  }

  /** Appends fresh blocks to `table` until it covers `numTokens` tokens. All or nothing. */
  grow(table: number[], numTokens: number): void {
    const need = this.blocksNeeded(table, numTokens);
    if (need > this.free.length) throw new Error(`KV pool exhausted: need ${need} blocks, ${this.free.length} free`);
    for (let i = 0; i < need; i++) {
      const b = this.free.pop()!;
      this.refCounts[b] = 1;
      table.push(b);
    }
  }

  /** Adds an owner to a used block (a sequence sharing a cached prefix block). */
  retain(block: number): void {
    if (this.refCounts[block] <= 0) throw new Error(`retain of free block ${block}`);
    this.refCounts[block]++;
  }

  /** Drops one owner of every block in `table` (blocks with no owner left go back to the pool) and empties it. */
  release(table: number[]): void {
    for (const b of table) {
      if (this.refCounts[b] <= 0) throw new Error(`double free of block ${b}`);
      if (--this.refCounts[b] === 0) this.free.push(b);
    }
    table.length = 0;
  }
}
