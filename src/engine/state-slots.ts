// Recurrent state of hybrid models (Gated DeltaNet / Mamba layers beside attention): unlike K/V, a
// sequence's state is one fixed-size record that each token overwrites, so it cannot be rebuilt
// from cached blocks. Slots [0, numSequenceSlots) hold running sequences' states, one each; slots
// after them hold snapshots (--ssm-cache-slots): copies of a sequence's state at a position where a
// whole KV block ends, keyed by that block of the prefix cache (whose radix chain stands for the
// whole prefix up to there). A prefix-cache hit on a hybrid model resumes from the latest snapshot
// along the hit; a block leaving the prefix cache takes its snapshot with it; when every snapshot
// slot is taken, the least recently used snapshot makes room.

/** What the model's recurrent state store does (Model.createRecurrentState). */
export interface StateStore {
  reset(slot: number): void;
  copy(fromSlot: number, toSlot: number): void;
}

export class StateSlots {
  private readonly freeSequenceSlots: number[] = [];
  private readonly freeSnapshotSlots: number[] = [];
  /** Snapshot slot by prefix-cache block, least recently used first (Map order). */
  private readonly snapshots = new Map<number, number>();
  /** Snapshots taken and restored since start (stats and tests). */
  taken = 0;
  restored = 0;

  constructor(
    private readonly store: StateStore,
    readonly numSequenceSlots: number,
    readonly numSnapshotSlots: number,
  ) {
    for (let s = numSequenceSlots - 1; s >= 0; s--) this.freeSequenceSlots.push(s);
    for (let s = numSequenceSlots + numSnapshotSlots - 1; s >= numSequenceSlots; s--) this.freeSnapshotSlots.push(s);
  }

  /** Snapshots held now. */
  get size(): number {
    return this.snapshots.size;
  }

  /** A slot for a sequence about to run, its state zeroed; null when every one is taken. */
  acquire(): number | null {
    const slot = this.freeSequenceSlots.pop();
    if (slot === undefined) return null;
    this.store.reset(slot);
    return slot;
  }

  release(slot: number): void {
    if (slot < 0 || slot >= this.numSequenceSlots || this.freeSequenceSlots.includes(slot))
      throw new Error(`state slot ${slot} is not held`);
    this.freeSequenceSlots.push(slot);
  }

  has(block: number): boolean {
    return this.snapshots.has(block);
  }

  /** Copies a sequence's state (in `slot`) as the snapshot of the prefix ending with `block`. */
  snapshot(block: number, slot: number): void {
    if (this.numSnapshotSlots === 0) return;
    let to = this.snapshots.get(block);
    if (to === undefined) {
      to = this.freeSnapshotSlots.pop();
      if (to === undefined) {
        const [oldestBlock, oldestSlot] = this.snapshots.entries().next().value as [number, number];
        this.snapshots.delete(oldestBlock);
        to = oldestSlot;
      }
    } else {
      this.snapshots.delete(block); // re-inserted below as the most recently used
    }
    this.store.copy(slot, to);
    this.snapshots.set(block, to);
    this.taken++;
  }

  /** Copies the snapshot of the prefix ending with `block` into a sequence's `slot`; false when there is none. */
  restore(block: number, slot: number): boolean {
    const from = this.snapshots.get(block);
    if (from === undefined) return false;
    this.snapshots.delete(block);
    this.snapshots.set(block, from);
    this.store.copy(from, slot);
    this.restored++;
    return true;
  }

  /** Blocks that left the prefix cache: their snapshots go with them. */
  forget(blocks: readonly number[]): void {
    for (const b of blocks) {
      const slot = this.snapshots.get(b);
      if (slot === undefined) continue;
      this.snapshots.delete(b);
      this.freeSnapshotSlots.push(slot);
    }
  }
}
