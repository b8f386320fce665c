// A byte trie over the vocabulary, laid out in preorder so a mask walk touches flat typed arrays only.
//
// Node i's subtree is the range [i, end[i]); its first child is i + 1 and the sibling after child c
// is end[c], so skipping a rejected subtree is one index jump. Node 0 is the root (the empty
// string). Tokens whose bytes end at node i are tokIds[tokStart[i] .. tokStart[i + 1]) — several
// ids can share one byte string (an added token that repeats a vocabulary entry).

export class VocabTrie {
  /** The byte on the edge into each node (unused for the root). */
  readonly byte: Uint8Array;
  /** One past the last node of each node's subtree. */
  readonly end: Int32Array;
  readonly tokStart: Int32Array;
  readonly tokIds: Int32Array;

  private constructor(byte: Uint8Array, end: Int32Array, tokStart: Int32Array, tokIds: Int32Array) {
    this.byte = byte;
    this.end = end;
    this.tokStart = tokStart;
    this.tokIds = tokIds;
  }

  get nodeCount(): number {
    return this.end.length;
  }

  /** The child of `node` along `b`, or -1. */
  child(node: number, b: number): number {
    for (let c = node + 1, e = this.end[node]; c < e; c = this.end[c]) if (this.byte[c] === b) return c;
    return -1;
  }

  /** Builds the trie of the given tokens (entries that are null or empty are left out). */
  static build(tokens: readonly (Uint8Array | null)[]): VocabTrie {
    const ids: number[] = [];
    for (let id = 0; id < tokens.length; id++) if (tokens[id] && tokens[id]!.length > 0) ids.push(id);
    // Sorting the byte strings makes insertion a preorder traversal: each token shares its
    // longest common prefix with the one before it, so nodes are appended, never inserted.
    ids.sort((a, b) => compareBytes(tokens[a]!, tokens[b]!) || a - b);

    let cap = 1024;
    let byte = new Uint8Array(cap);
    let end = new Int32Array(cap);
    let tokStart = new Int32Array(cap + 1);
    let count = 1; // the root
    const path: number[] = [0]; // node at each depth of the current prefix
    let prev: Uint8Array = new Uint8Array(0);
    const tokIds = new Int32Array(ids.length);
    let tokCount = 0;

    for (const id of ids) {
      const t = tokens[id]!;
      let lcp = 0;
      while (lcp < prev.length && lcp < t.length && prev[lcp] === t[lcp]) lcp++;
      // Close the nodes deeper than the shared prefix: their subtrees end here.
      while (path.length - 1 > lcp) end[path.pop()!] = count;
      for (let d = lcp; d < t.length; d++) {
        if (count === cap) {
          cap *= 2;
          byte = grow(byte, cap);
          end = grow(end, cap);
          tokStart = grow(tokStart, cap + 1);
        }
        byte[count] = t[d];
        tokStart[count] = tokCount;
        path.push(count++);
      }
      tokIds[tokCount++] = id;
      prev = t;
    }
    while (path.length > 0) end[path.pop()!] = count;
    // tokStart[i] was set when node i was created; tokens are appended in preorder, so a node's
    // range ends where the next node's begins.
    tokStart[0] = 0;
    tokStart[count] = tokCount;
    return new VocabTrie(byte.slice(0, count), end.slice(0, count), tokStart.slice(0, count + 1), tokIds);
  }
}

function compareBytes(a: Uint8Array, b: Uint8Array): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) if (a[i] !== b[i]) return a[i] - b[i];
  return a.length - b.length;
}

function grow<T extends Uint8Array | Int32Array>(a: T, n: number): T {
  const b = new (a.constructor as new (n: number) => T)(n);
  b.set(a);
  return b;
}
