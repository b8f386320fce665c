// Repetition with a limit.

import { seq, type GNode } from './nodes.js';

/**
 * 1..max items (unbounded when max <= 0). `item(again)` is one item followed by the choice of
 * another (`again`, which starts a further item) or the end; `again` is null for the last item
 * allowed. Unbounded repetition is a cycle through one node, so the matcher's stack stays flat (a
 * sequence's last kid is a tail call).
 */
export function bounded(max: number, item: (again: GNode | null) => GNode): GNode {
  if (max <= 0) {
    const loop = seq([]);
    loop.kids = [item(loop)];
    return loop;
  }
  let node = item(null);
  for (let i = 1; i < max; i++) node = item(node);
  return node;
}
