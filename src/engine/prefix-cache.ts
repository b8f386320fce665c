// The radix prefix cache (--enable-prefix-caching): a tree over full KV blocks, each node one
// block whose key is its tokens, under the node of the block before it — so a node stands for the
// whole token prefix from the start (a chained key, compared exactly: no hash collisions). A cached
// block is immutable; sequences share it by reference count (BlockManager). This file knows only
// the tree; the block manager decides when a block with no owner left is evicted.

/** One cached block: its id, its tokens' key, the block before it, and the blocks that continue it. */
interface CachedBlock {
  readonly block: number;
  readonly key: string;
  readonly parent: CachedBlock | null;
  readonly children: Map<string, CachedBlock>;
}

export class PrefixCache {
  private readonly roots = new Map<string, CachedBlock>();
  private readonly byBlock = new Map<number, CachedBlock>();

  constructor(readonly blockSize: number) {}

  /** How many blocks the tree holds. */
  get size(): number {
    return this.byBlock.size;
  }

  has(block: number): boolean {
    return this.byBlock.has(block);
  }

  /**
   * The cached blocks holding the longest prefix of `tokens` made of whole blocks, in order
   * (tokens [0, blockSize × result.length) are in them).
   */
  match(tokens: readonly number[]): number[] {
    const found: number[] = [];
    let level = this.roots;
    for (let end = this.blockSize; end <= tokens.length; end += this.blockSize) {
      const node = level.get(this.key(tokens, end));
      if (!node) break;
      found.push(node.block);
      level = node.children;
    }
    return found;
  }

  /**
   * Adds blocks [from, to) of a sequence's `table` (full blocks of `tokens`; blocks before `from`
   * are in the tree already, as its chain). Where the tree already holds a block with the same
   * prefix (another sequence computed it at the same time), the table's entry is left out and
   * `duplicate(index, cached)` is called so the caller can switch the sequence to the cached copy.
   */
  insert(
    tokens: readonly number[],
    table: readonly number[],
    from: number,
    to: number,
    duplicate: (index: number, cached: number) => void,
  ): void {
    let parent: CachedBlock | null | undefined = from === 0 ? null : this.byBlock.get(table[from - 1]);
    if (parent === undefined) throw new Error(`prefix cache: block ${table[from - 1]} (index ${from - 1}) is not cached`);
    for (let i = from; i < to; i++) {
      const level: Map<string, CachedBlock> = parent ? parent.children : this.roots;
      const key = this.key(tokens, (i + 1) * this.blockSize);
      let node: CachedBlock | undefined = level.get(key);
      if (node) {
        if (node.block !== table[i]) duplicate(i, node.block);
      } else {
        if (this.byBlock.has(table[i])) throw new Error(`prefix cache: block ${table[i]} is cached under another prefix`);
        node = { block: table[i], key, parent, children: new Map() };
        level.set(key, node);
        this.byBlock.set(table[i], node);
      }
      parent = node;
    }
  }

  /** Removes a block and every block that continues it (unreachable without it); returns their ids. */
  remove(block: number): number[] {
    const node = this.byBlock.get(block);
    if (!node) return [];
    (node.parent ? node.parent.children : this.roots).delete(node.key);
    const removed: number[] = [];
    const stack = [node];
    while (stack.length > 0) {
      const n = stack.pop()!;
      this.byBlock.delete(n.block);
      removed.push(n.block);
      for (const child of n.children.values()) stack.push(child);
    }
    return removed;
  }

  /** Tokens [end - blockSize, end) as a map key. */
  private key(tokens: readonly number[], end: number): string {
    return tokens.slice(end - this.blockSize, end).join(',');
  }
}
