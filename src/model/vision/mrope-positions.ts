// Qwen2-VL's multimodal RoPE positions for a prompt (HF Qwen2VLModel.get_rope_index): the decoder
// rotates each frequency by a temporal, height or width position (ForwardBatch.mropePositions).
// Text tokens count up with all three equal; an image's tokens, one per merged patch, take their
// (t, h, w) place on the patch grid offset by the position where the image starts; the text after
// it resumes at the largest position so far + 1. An image of h × w merged patches thus advances the
// positions by max(t, h, w), not by its h·w tokens, so a sequence's positions run behind its length:
// its rope delta (max position + 1 − prompt length, ≤ 0) carries on into every decoded token.

/** An image's merged patch grid: temporal (1 for a still image), height, width; t·h·w image tokens. */
export interface MropeGrid {
  readonly t: number;
  readonly h: number;
  readonly w: number;
}

/** A prompt's M-RoPE positions. */
export interface MropeLayout {
  /** Prompt tokens laid out. */
  readonly length: number;
  /** [3, length]: the temporal row, then the height row, then the width row. */
  readonly positions: Int32Array;
  /**
   * What every token after the prompt adds to its index to get its position (the same in all three
   * rows): the largest prompt position + 1 − length. HF's rope_deltas.
   */
  readonly ropeDelta: number;
}

/**
 * The positions of `tokens`, whose images are `imageTokenId` tokens: the i-th image is the next
 * grids[i].t · h · w of them, contiguous (images back to back are told apart by their grids' sizes,
 * as HF does; a chat template puts <|vision_start|> / <|vision_end|> text tokens around each).
 */
export function mropePositions(tokens: ArrayLike<number>, imageTokenId: number, grids: readonly MropeGrid[]): MropeLayout {
  const n = tokens.length;
  const positions = new Int32Array(3 * n);
  let next = 0; // the next free position: largest so far + 1
  let image = 0;
  for (let i = 0; i < n;) {
    if (tokens[i] !== imageTokenId) {
      positions[i] = positions[n + i] = positions[2 * n + i] = next++;
      i++;
      continue;
    }
    const grid = grids[image];
    if (!grid) throw new RangeError(`mropePositions: image token at ${i} but only ${grids.length} image grids`);
    const { t, h, w } = grid;
    if (![t, h, w].every((v) => Number.isInteger(v) && v >= 1)) throw new RangeError(`mropePositions: bad grid ${t}×${h}×${w}`);
    const count = t * h * w;
    for (let j = 0; j < count; j++, i++) {
      if (i >= n || tokens[i] !== imageTokenId) {
        throw new RangeError(`mropePositions: image ${image} (grid ${t}×${h}×${w}) needs ${count} image tokens, the prompt has ${j}`);
      }
      positions[i] = next + Math.floor(j / (h * w));
      positions[n + i] = next + (Math.floor(j / w) % h);
      positions[2 * n + i] = next + (j % w);
    }
    next += Math.max(t, h, w);
    image++;
  }
  if (image !== grids.length) throw new RangeError(`mropePositions: ${grids.length} image grids but ${image} images in the prompt`);
  return { length: n, positions, ropeDelta: next - n };
}

const NO_POSITIONS = new Int32Array(0);

/**
 * Writes the M-RoPE positions of a sequence's tokens [from, from + count) into rows [row, row + count)
 * of a batch's mropePositions `out` [3, batchRows]: from the layout within the prompt, at
 * index + ropeDelta after it (decode). layout null: a text-only sequence (positions = indices).
 */
export function writeMropeRows(
  layout: MropeLayout | null,
  from: number,
  count: number,
  out: Int32Array,
  row: number,
  batchRows: number,
): void {
  if (from < 0 || count < 0 || row < 0 || row + count > batchRows || out.length < 3 * batchRows) {
    throw new RangeError(`writeMropeRows: rows [${row}, ${row + count}) do not fit a batch of ${batchRows} in ${out.length} positions`);
  }
  const length = layout?.length ?? 0;
  const prompt = layout?.positions ?? NO_POSITIONS;
  const delta = layout?.ropeDelta ?? 0;
  for (let j = 0; j < count; j++) {
    const i = from + j;
    for (let s = 0; s < 3; s++) out[s * batchRows + row + j] = i < length ? prompt[s * length + i] : i + delta;
  }
}
