// Which layers the self-speculative drafter skips, measured at start-up on the model's own text:
// 1. the model greedily continues its BOS token for CALIBRATION_TOKENS tokens (its own text needs
//    no tokenizer, and is what drafts will mostly see: the model's output);
// 2. one pass over that text ranks the layers by how little they change the residual stream
//    (cosine similarity of each layer's input and output, as LayerSkip / SWIFT / Draft & Verify
//    rank redundancy); the first and the last layer are never skipped;
// 3. for k = 1 … ⌊L/2⌋, skipping the k most redundant layers is scored by the share of positions
//    where the skipping model's argmax agrees with the full model's (teacher-forced acceptance α);
// 4. the speed model picks k: a verify step takes 1 + α + … + α^K tokens and costs one decode
//    step plus K draft passes, each the kept share of the weights (parameter count; decode is
//    bound by reading them).
import type { KvLayer } from '../../kernels/ops.js';
import type { ForwardBatch, Model, OutputHead } from '../../model/architectures/index.js';
import { allocateKvCache } from '../kv-cache.js';

/** Length of the calibration text, BOS included. */
export const CALIBRATION_TOKENS = 64;

export interface SkipCandidate {
  /** Layers left out, ascending. */
  readonly skip: readonly number[];
  /** Share of calibration positions where the skipping model's argmax is the full model's. */
  readonly agreement: number;
  /** A draft pass's cost in decode steps (its share of the weights read). */
  readonly cost: number;
}

export interface SkipCalibration {
  /** Per layer: mean cosine similarity of its input and output hidden states over the text. */
  readonly cosine: readonly number[];
  /** Skipping the 1, 2, … ⌊L/2⌋ most redundant layers (of those that may be skipped). */
  readonly candidates: readonly SkipCandidate[];
  readonly ms: number;
}

/** Tokens a verify step takes per decode-step cost, K drafts at per-token acceptance `agreement`. */
export function expectedSpeedup(c: SkipCandidate, numDrafts: number): number {
  const a = c.agreement;
  let tokens = 1;
  for (let i = 1, p = a; i <= numDrafts; i++, p *= a) tokens += p;
  return tokens / (1 + numDrafts * c.cost);
}

/** The candidate the speed model expects most from at `numDrafts` drafts per step. */
export function bestCandidate(cal: SkipCalibration, numDrafts: number): SkipCandidate {
  let best = cal.candidates[0];
  for (const c of cal.candidates) if (expectedSpeedup(c, numDrafts) > expectedSpeedup(best, numDrafts)) best = c;
  return best;
}

export function calibrateSkipSets(model: Model, head: OutputHead | null): SkipCalibration {
  const t0 = performance.now();
  const c = model.config;
  const L = c.numLayers;
  if (L < 3) throw new Error(`--self-speculative: a ${L}-layer model has no layer to skip (the first and last are kept)`);
  const runner = new TextRunner(model, head, CALIBRATION_TOKENS);
  const text = runner.generate(c.bosTokenId ?? c.eosTokenIds[0] ?? 0);

  const cosine = new Array<number>(L).fill(0);
  const full = runner.argmaxes(text, undefined, layerCosines(c.hiddenSize, cosine));
  // Most redundant first; the first layer builds the representation and the last reads it out.
  const order = [...Array(L).keys()].slice(1, L - 1).sort((a, b) => cosine[b] - cosine[a]);

  const layerParams = c.hiddenSize * (2 * c.numHeads * c.headDim + 2 * c.numKvHeads * c.headDim) + 3 * c.hiddenSize * c.intermediateSize;
  const headParams = (head ? head.ids.length : c.vocabSize) * c.hiddenSize;
  const stepParams = L * layerParams + c.vocabSize * c.hiddenSize;
  const candidates: SkipCandidate[] = [];
  for (let k = 1; k <= Math.min(order.length, Math.floor(L / 2)); k++) {
    const skip = order.slice(0, k).sort((a, b) => a - b);
    const draft = runner.argmaxes(text, new Set(skip));
    let agree = 0;
    for (let i = 0; i < draft.length; i++) if (draft[i] === full[i]) agree++;
    candidates.push({ skip, agreement: agree / draft.length, cost: ((L - k) * layerParams + headParams) / stepParams });
  }
  return { cosine, candidates, ms: performance.now() - t0 };
}

/** Accumulates, per layer, the mean over rows of cos(input, output) from forward's onHidden. */
function layerCosines(hiddenSize: number, out: number[]): (index: number, hidden: Float32Array) => void {
  let prev = new Float32Array(0);
  return (index, hidden) => {
    if (index > 0) {
      const rows = hidden.length / hiddenSize;
      let sum = 0;
      let counted = 0;
      for (let r = 0; r < rows; r++) {
        let dot = 0;
        let a = 0;
        let b = 0;
        for (let j = r * hiddenSize; j < (r + 1) * hiddenSize; j++) {
          dot += prev[j] * hidden[j];
          a += prev[j] * prev[j];
          b += hidden[j] * hidden[j];
        }
        // A token with an all-zero embedding has no direction to compare.
        if (a > 0 && b > 0) {
          sum += dot / Math.sqrt(a * b);
          counted++;
        }
      }
      out[index - 1] = counted > 0 ? sum / counted : 0;
    }
    prev = hidden.slice();
  };
}

/** Runs one short text through the model in a private KV cache (the pool is not touched). */
class TextRunner {
  private readonly kv: KvLayer[];
  private readonly blockTable: Int32Array;
  private static readonly BLOCK = 16;

  constructor(
    private readonly model: Model,
    private readonly head: OutputHead | null,
    private readonly length: number,
  ) {
    const blocks = Math.ceil(length / TextRunner.BLOCK);
    this.kv = allocateKvCache(model.config, blocks, TextRunner.BLOCK, 'f32');
    this.blockTable = Int32Array.from({ length: blocks }, (_, i) => i);
  }

  /** `first`, then the model's greedy continuation, `length` tokens in all. */
  generate(first: number): number[] {
    const text = [first];
    while (text.length < this.length) {
      const pos = text.length - 1;
      text.push(this.argmaxes(text, undefined, undefined, pos)[0]);
    }
    return text;
  }

  /**
   * Argmax token of each row from `from` on (earlier rows' KV already in the cache), with
   * `skip` left out. Rows' KV is written at their positions.
   */
  argmaxes(
    text: readonly number[],
    skip?: ReadonlySet<number>,
    onHidden?: (index: number, hidden: Float32Array) => void,
    from = 0,
  ): number[] {
    const n = text.length - from;
    const positions = Int32Array.from({ length: n }, (_, i) => from + i);
    const batch: ForwardBatch = {
      tokens: Int32Array.from(text.slice(from)),
      positions,
      slots: positions,
      seqs: [{ qStart: 0, qLen: n, kvLen: text.length, blockTable: this.blockTable }],
      logitRows: Int32Array.from({ length: n }, (_, i) => i),
    };
    const logits = this.model.forward(batch, this.kv, { skipLayers: skip, head: this.head ?? undefined, onHidden });
    const width = logits.length / n;
    const out: number[] = [];
    for (let r = 0; r < n; r++) {
      let best = 0;
      for (let i = 1; i < width; i++) if (logits[r * width + i] > logits[r * width + best]) best = i;
      out.push(this.head ? this.head.ids[best] : best);
    }
    return out;
  }
}
