// The draft passes' output head: lm_head without its all-zero rows. A token whose row is zero gets
// logit 0 whatever the hidden state, so it is the argmax only when every other logit is negative;
// a draft may miss that rare case (the verify corrects it) and skips those rows' bytes. Models
// trained on a small vocabulary inside a large one (svc-tiny-chat: 2,190 live rows of 151,936)
// spend most of a decode step in lm_head, and the draft then costs a fraction of it.
import type { Model, OutputHead } from '../../model/architectures/index.js';

/** Rows read per outputRows call while scanning. */
const SCAN_ROWS = 4096;
/** Below this share of live rows a separate head pays for its copy; above it, drafts use lm_head. */
const MAX_LIVE_SHARE = 0.9;

/** lm_head over its non-zero rows, or null when (nearly) every row is live. */
export function liveDraftHead(model: Model): OutputHead | null {
  const { vocabSize, hiddenSize } = model.config;
  const rows = new Float32Array(SCAN_ROWS * hiddenSize);
  const ids = new Int32Array(SCAN_ROWS);
  const live: number[] = [];
  for (let start = 0; start < vocabSize; start += SCAN_ROWS) {
    const n = Math.min(SCAN_ROWS, vocabSize - start);
    for (let i = 0; i < n; i++) ids[i] = start + i;
    model.outputRows(ids.subarray(0, n), rows.subarray(0, n * hiddenSize));
    for (let i = 0; i < n; i++) {
      for (let j = i * hiddenSize; j < (i + 1) * hiddenSize; j++) {
        if (rows[j] !== 0) {
          live.push(start + i);
          break;
        }
      }
    }
  }
  if (live.length === 0 || live.length > MAX_LIVE_SHARE * vocabSize) return null;
  return model.outputHead(Int32Array.from(live));
}
