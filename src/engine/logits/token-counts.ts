// How often a sequence has taken each token: a sparse count over the distinct ids seen, grown as
// tokens are accepted and read by the penalties' `process` without allocating.

export class TokenCounts {
  /** The distinct ids seen, in first-seen order: ids[0 .. size). */
  ids = new Int32Array(16);
  /** counts[i]: how often ids[i] was seen. */
  counts = new Int32Array(16);
  size = 0;
  private readonly slots = new Map<number, number>();

  add(id: number): void {
    const slot = this.slots.get(id);
    if (slot !== undefined) {
      this.counts[slot]++;
      return;
    }
    if (this.size === this.ids.length) {
      const ids = new Int32Array(this.size * 2);
      const counts = new Int32Array(this.size * 2);
      ids.set(this.ids);
      counts.set(this.counts);
      this.ids = ids;
      this.counts = counts;
    }
    this.slots.set(id, this.size);
    this.ids[this.size] = id;
    this.counts[this.size] = 1;
    this.size++;
  }
}
