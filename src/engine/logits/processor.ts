// The logits-processor seam: everything that shapes a sequence's next token beyond plain sampling
// (the tool-call grammar's mask, the thinking budget, penalties, logit bias, min_tokens, bad words)
// is a processor over that sequence's logits, holding its own per-token state. A sequence carries
// its processors (built at admission); per sampling row the step loop asks them, in order, for a
// forced token, else lets each process the row, samples (or verifies a draft token), and then
// every processor accepts the token the sequence took — before the next row of a verify chunk.

export interface LogitsProcessor {
  /**
   * The token this processor imposes next (sampling and every `process` are skipped), or null.
   * Only looks: the state moves in `accept`. The first processor that forces a token wins.
   */
  forced?(): number | null;
  /**
   * Masks or reweights one row of logits in place before sampling (disallowed tokens to -Infinity).
   * Log-probabilities are still reported from the row as the model gave it.
   */
  process?(logits: Float32Array): void;
  /**
   * Moves the state past `token`, the next token the sequence took (forced, sampled, or one of
   * several a step accepts), in order. May throw when the token breaks the processor's rules.
   */
  accept(token: number): void;
}

/** The token one of the processors forces next, or null to sample. */
export function forcedToken(processors: readonly LogitsProcessor[]): number | null {
  for (let i = 0; i < processors.length; i++) {
    const token = processors[i].forced?.() ?? null;
    if (token !== null) return token;
  }
  return null;
}

/** Whether any processor changes logits (then log-probabilities need the row copied first). */
export function changesLogits(processors: readonly LogitsProcessor[]): boolean {
  for (let i = 0; i < processors.length; i++) if (processors[i].process) return true;
  return false;
}

/** Lets every processor mask or reweight the row, in order. */
export function processLogits(processors: readonly LogitsProcessor[], logits: Float32Array): void {
  for (let i = 0; i < processors.length; i++) processors[i].process?.(logits);
}

/** Advances every processor past the token the sequence took. */
export function acceptToken(processors: readonly LogitsProcessor[], token: number): void {
  for (let i = 0; i < processors.length; i++) processors[i].accept(token);
}
