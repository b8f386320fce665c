// Whole-block KV copies across every layer (copy-on-write in the prefix cache). A block's bytes are
// contiguous in each layer side, whatever the KV dtype: block b is bytes [b × size, (b + 1) × size)
// with size = side.byteLength / numBlocks.
import type { KvLayer } from '../kernels/ops.js';

export function copyKvBlock(layers: readonly KvLayer[], from: number, to: number): void {
  for (const layer of layers) {
    for (const side of [layer.k, layer.v]) {
      const size = side.byteLength / layer.numBlocks;
      side.copyWithin(to * size, from * size, (from + 1) * size);
    }
  }
}
