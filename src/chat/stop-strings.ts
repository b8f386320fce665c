// Stop strings over streamed text. A stop can straddle token (and chunk) boundaries, so the tail
// of the text that could still become a stop is held back until it either completes a stop (the
// text is cut before it) or stops matching (it is released).

export interface StopResult {
  /** Text that is safe to emit now. */
  text: string;
  /** The stop string that matched in this push, or null. */
  stop: string | null;
}

export class StopStringMatcher {
  private readonly stops: string[];
  private readonly maxHold: number;
  private held = '';
  /** How many leading characters of `held` came from unarmed pushes: a match may not end within them. */
  private heldUnarmed = 0;
  private matched: string | null = null;

  constructor(stops: readonly string[]) {
    // An empty stop would match everywhere; OpenAI ignores it.
    this.stops = stops.filter((s) => s.length > 0);
    this.maxHold = Math.max(0, ...this.stops.map((s) => s.length - 1));
  }

  /** The stop string that ended the text, once one has. */
  get stopped(): string | null {
    return this.matched;
  }

  /**
   * The next piece of text. `armed` false (min_tokens not reached yet): no stop may end inside this
   * text, though one that starts in it and ends in a later, armed piece does count (as vLLM, which
   * only checks stop strings once the output is past min_tokens).
   */
  push(text: string, armed = true): StopResult {
    if (this.matched !== null) return { text: '', stop: null };
    if (this.stops.length === 0) return { text, stop: null };
    const buf = this.held + text;
    const unarmed = armed ? this.heldUnarmed : buf.length;
    const hit = armed ? this.firstMatch(buf, unarmed) : null;
    if (hit) {
      this.matched = hit.stop;
      this.held = '';
      this.heldUnarmed = 0;
      return { text: buf.slice(0, hit.start), stop: hit.stop };
    }
    const keep = this.partialStopSuffix(buf);
    const cut = buf.length - keep;
    this.held = buf.slice(cut);
    this.heldUnarmed = Math.max(0, unarmed - cut);
    return { text: buf.slice(0, cut), stop: null };
  }

  /** End of output: whatever was held back cannot become a stop any more. */
  finish(): string {
    const rest = this.held;
    this.held = '';
    this.heldUnarmed = 0;
    return rest;
  }

  // The match that completes first, as if the text had arrived one character at a time; so the
  // result does not depend on how the text was chunked. Ties: the earlier start (cuts more).
  // Only matches ending past buf[0, unarmed) count.
  private firstMatch(buf: string, unarmed: number): { start: number; stop: string } | null {
    let best: { start: number; end: number; stop: string } | null = null;
    for (const stop of this.stops) {
      const start = buf.indexOf(stop, Math.max(0, unarmed - stop.length + 1));
      if (start < 0) continue;
      const end = start + stop.length;
      if (!best || end < best.end || (end === best.end && start < best.start)) best = { start, end, stop };
    }
    return best;
  }

  // Length of the longest tail of buf that is a proper prefix of some stop.
  private partialStopSuffix(buf: string): number {
    for (let k = Math.min(this.maxHold, buf.length); k > 0; k--) {
      const tail = buf.slice(buf.length - k);
      if (this.stops.some((s) => s.startsWith(tail))) return k;
    }
    return 0;
  }
}
