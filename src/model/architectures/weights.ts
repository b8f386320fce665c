// Turns a checkpoint's tensors into what the kernels take: prepared weight matrices and f32 vectors.
import type { Ops, WeightMatrix } from '../../kernels/ops.js';
import { bytesPerRow, dequantize } from '../../kernels/dtypes.js';
import type { Checkpoint, Tensor } from '../types.js';

export class CheckpointWeights {
  /** Tensors the loader has been told of (taken, or left alone). */
  private readonly told = new Set<string>();

  constructor(
    private readonly checkpoint: Pick<Checkpoint, 'source' | 'tensors' | 'residency' | 'packedCache'>,
    private readonly ops: Ops,
  ) {}

  has(name: string): boolean {
    return this.checkpoint.tensors.has(name);
  }

  private tensor(name: string): Tensor {
    const t = this.checkpoint.tensors.get(name);
    if (!t) throw new Error(`${this.checkpoint.source}: missing tensor ${name}`);
    return t;
  }

  /**
   * A 2-D weight [out, in], checked against the expected shape, passed once through
   * ops.prepareWeight. The loader learns whether the weight still reads the tensor's bytes, so it
   * can release them when prepareWeight made its own copy (checkpoint.residency).
   */
  matrix(name: string, rows: number, cols: number): WeightMatrix {
    const t = this.tensor(name);
    if (t.shape.length !== 2 || t.shape[0] !== rows || t.shape[1] !== cols) {
      throw new Error(`${name}: expected shape [${rows}, ${cols}], got [${t.shape.join(', ')}]`);
    }
    const p = this.prepareKeyed(name, t, rows, cols, () => t.data);
    this.tell(t, p.inPlace);
    return p.w;
  }

  /**
   * A weight stored with more than two dimensions whose first is out_features (a convolution kernel
   * [out, in, kh, kw]), checked against `shape` and taken as the matrix [shape[0], product of the
   * rest]: its input features in the stored (row-major) order. Prepared once, as matrix().
   */
  flatMatrix(name: string, shape: readonly number[]): WeightMatrix {
    const t = this.tensor(name);
    if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
      throw new Error(`${name}: expected shape [${shape.join(', ')}], got [${t.shape.join(', ')}]`);
    }
    const cols = shape.slice(1).reduce((a, b) => a * b, 1);
    const p = this.prepareKeyed(name, t, shape[0], cols, () => t.data);
    this.tell(t, p.inPlace);
    return p.w;
  }

  /**
   * The 2-D weight `name` [sum of parts, cols] cut into consecutive row blocks of `parts` rows, each
   * prepared as a matrix of its own (a fused projection such as nn.MultiheadAttention's
   * in_proj_weight, whose q, k and v blocks multiply different inputs).
   */
  rowBlocks(name: string, cols: number, parts: readonly number[]): WeightMatrix[] {
    const t = this.tensor(name);
    const rows = parts.reduce((a, b) => a + b, 0);
    if (t.shape.length !== 2 || t.shape[0] !== rows || t.shape[1] !== cols) {
      throw new Error(`${name}: expected shape [${rows}, ${cols}], got [${t.shape.join(', ')}]`);
    }
    const rowBytes = bytesPerRow(t.dtype, cols);
    let start = 0,
      inPlace = true;
    const out = parts.map((take) => {
      const begin = start;
      start += take;
      const p = this.prepareKeyed(`${name}[${begin}:${begin + take}]`, t, take, cols, () =>
        t.data.subarray(begin * rowBytes, (begin + take) * rowBytes),
      );
      inPlace &&= p.inPlace;
      return p.w;
    });
    this.tell(t, inPlace);
    return out;
  }

  /**
   * The first `take` rows of the 2-D weight `name` [rows, cols], prepared as a matrix of their own:
   * a head that scores only the leading token ids costs take/rows of the full matmul. A second
   * weight over a tensor the model already took, so the loader is not told of it again.
   */
  leadingRows(name: string, rows: number, cols: number, take: number): WeightMatrix {
    const t = this.tensor(name);
    if (t.shape.length !== 2 || t.shape[0] !== rows || t.shape[1] !== cols) {
      throw new Error(`${name}: expected shape [${rows}, ${cols}], got [${t.shape.join(', ')}]`);
    }
    if (!Number.isInteger(take) || take < 1 || take > rows) throw new RangeError(`${name}: cannot take ${take} of its ${rows} rows`);
    return this.prepareKeyed(`${name}[0:${take}]`, t, take, cols, () => t.data.subarray(0, take * bytesPerRow(t.dtype, cols))).w;
  }

  /**
   * Per-expert matrices cut out of the stacked tensor `name` [count, blockRows, cols] without
   * copying: for each expert e in [first, end) and each part, rows [part.start, part.start +
   * part.rows) of e's block, passed through ops.prepareWeight on their own. Returns them as
   * [part][e - first]. The loader is told once, with the bytes of experts [first, end) as the part
   * kept: another rank's experts are never read here, and their pages are released if read ahead.
   */
  stackedMatrices(
    name: string,
    count: number,
    blockRows: number,
    cols: number,
    [first, end]: readonly [number, number],
    parts: readonly { start: number; rows: number }[],
  ): WeightMatrix[][] {
    const t = this.tensor(name);
    if (t.shape.length !== 3 || t.shape[0] !== count || t.shape[1] !== blockRows || t.shape[2] !== cols) {
      throw new Error(`${name}: expected shape [${count}, ${blockRows}, ${cols}], got [${t.shape.join(', ')}]`);
    }
    if (!(Number.isInteger(first) && Number.isInteger(end) && 0 <= first && first <= end && end <= count)) {
      throw new RangeError(`${name}: experts [${first}, ${end}) outside its ${count}`);
    }
    const rowBytes = bytesPerRow(t.dtype, cols);
    const blockBytes = blockRows * rowBytes;
    let inPlace = true;
    const out = parts.map(({ start, rows }) => {
      if (start < 0 || rows < 1 || start + rows > blockRows)
        throw new RangeError(`${name}: rows [${start}, ${start + rows}) outside ${blockRows}`);
      const mats: WeightMatrix[] = [];
      for (let e = first; e < end; e++) {
        const begin = e * blockBytes + start * rowBytes;
        const p = this.prepareKeyed(`${name}[${e}][${start}:${start + rows}]`, t, rows, cols, () =>
          t.data.subarray(begin, begin + rows * rowBytes),
        );
        inPlace &&= p.inPlace;
        mats.push(p.w);
      }
      return mats;
    });
    this.tell(t, inPlace, { begin: first * blockBytes, end: end * blockBytes });
    return out;
  }

  /** A matrix the model built itself (transposed, de-interleaved) passed through ops.prepareWeight. */
  prepare(m: WeightMatrix): WeightMatrix {
    return this.ops.prepareWeight(m);
  }

  /** Tells the loader the model leaves tensor `name` alone (an expert another rank holds): its pages may go. */
  skip(name: string): void {
    this.tell(this.tensor(name), false);
  }

  /**
   * Tells the loader the model leaves every tensor it has not been told of alone: a rank that
   * holds only experts takes nothing else, and pages the loader read ahead of them are released.
   */
  skipTheRest(): void {
    for (const t of this.checkpoint.tensors.values()) if (!this.told.has(t.name)) this.tell(t, false);
  }

  /**
   * The weight `key` names (tensor t's bytes, or the rows of them `data` cuts out): from the
   * packed-weights cache when it holds it (t's bytes are then never read, not even un-interleaved),
   * else prepared now and handed to the cache. inPlace: it still reads `data`'s buffer.
   */
  private prepareKeyed(key: string, t: Tensor, rows: number, cols: number, data: () => Uint8Array): { w: WeightMatrix; inPlace: boolean } {
    const cache = this.checkpoint.packedCache;
    const layout = this.ops.packedLayout;
    const hit = cache && layout ? cache.take(key, t.dtype, rows, cols, layout) : null;
    if (hit) return { w: hit, inPlace: false };
    const bytes = data();
    const w = this.ops.prepareWeight({ dtype: t.dtype, rows, cols, data: bytes });
    if (cache && layout) cache.record(key, w, layout);
    return { w, inPlace: w.data.buffer === bytes.buffer };
  }

  private tell(t: Tensor, inPlace: boolean, kept?: { begin: number; end: number }): void {
    this.told.add(t.name);
    this.checkpoint.residency?.taken(t, inPlace, kept);
  }

  /** The shape of tensor `name`, or null when the checkpoint has none. */
  shape(name: string): readonly number[] | null {
    return this.checkpoint.tensors.get(name)?.shape ?? null;
  }

  /** The storage dtype of tensor `name`. */
  dtype(name: string): Tensor['dtype'] {
    return this.tensor(name).dtype;
  }

  /** A 1-D tensor (norm weight, bias) as f32, converted once here so the forward pass never re-decodes it. */
  vector(name: string, length: number): Float32Array {
    const t = this.tensor(name);
    if (t.shape.length !== 1 || t.shape[0] !== length) {
      throw new Error(`${name}: expected shape [${length}], got [${t.shape.join(', ')}]`);
    }
    const v = dequantize(t.dtype, t.data, 1, length);
    this.tell(t, false);
    return v;
  }

  /** A tensor of any shape (position embeddings, a probe) as f32, checked against `shape`. */
  array(name: string, shape: readonly number[]): Float32Array {
    const t = this.tensor(name);
    if (t.shape.length !== shape.length || t.shape.some((d, i) => d !== shape[i])) {
      throw new Error(`${name}: expected shape [${shape.join(', ')}], got [${t.shape.join(', ')}]`);
    }
    const cols = shape.length === 0 ? 1 : shape[shape.length - 1];
    const v = dequantize(
      t.dtype,
      t.data,
      shape.slice(0, -1).reduce((a, b) => a * b, 1),
      cols,
    );
    this.tell(t, false);
    return v;
  }

  optionalVector(name: string, length: number): Float32Array | undefined {
    return this.has(name) ? this.vector(name, length) : undefined;
  }
}
