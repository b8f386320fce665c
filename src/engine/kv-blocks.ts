// Whole-block operations on KV storage that need no element format. Each layer's K and V are laid
// out [numBlocks][blockSize][...], so one block of one side is one contiguous byte range of
// byteLength / numBlocks bytes, whatever the dtype (f32, bf16, fp8 or a quantized block format).
import type { KvLayer } from '../kernels/ops.js';

/** Bytes one block takes in one side (k or v) of a layer. */
export function sideBlockBytes(layer: KvLayer, side: Uint8Array): number {
  const bytes = side.byteLength / layer.numBlocks;
  if (!Number.isInteger(bytes)) throw new RangeError(`KV side of ${side.byteLength} bytes does not split into ${layer.numBlocks} blocks`);
  return bytes;
}

/** Bytes one block takes across all layers, keys and values. */
export function kvBytesPerBlock(layers: readonly KvLayer[]): number {
  let bytes = 0;
  for (const layer of layers) bytes += sideBlockBytes(layer, layer.k) + sideBlockBytes(layer, layer.v);
  return bytes;
}

/** Throws unless `block` is a block index of a pool of `numBlocks` blocks. */
export function checkBlock(block: number, numBlocks: number): void {
  if (!Number.isInteger(block) || block < 0 || block >= numBlocks)
    throw new RangeError(`KV block ${block} is outside the pool (0..${numBlocks - 1})`);
}

/** Copies block `from` over block `to` in every layer, keys and values (copy-on-write of a shared block). */
export function copyKvBlock(layers: readonly KvLayer[], from: number, to: number): void {
  for (const layer of layers) {
    checkBlock(from, layer.numBlocks);
    checkBlock(to, layer.numBlocks);
    if (from === to) continue;
    for (const side of [layer.k, layer.v]) {
      const bytes = sideBlockBytes(layer, side);
      side.copyWithin(to * bytes, from * bytes, (from + 1) * bytes);
    }
  }
}
