// Splits model output into reasoning (`<think>`…`</think>`) and text. It runs before the
// tool-call parser: detokenizer → reasoning splitter → (text only) tool-call parser.
//
// - Output starts in reasoning only when the rendered prompt ended inside an unclosed
//   think block (promptOpensReasoning); a template-forced empty `<think>\n\n</think>`
//   is closed, so it does not count.
// - A `<think>` the model emits, at the start or mid-stream, opens a span.
// - Newlines right after `<think>`, before `</think>` and right after `</think>` are
//   formatting (Qwen3 writes `<think>\nX\n</think>\n\n`) and are dropped.
// - A tool-call opener of the active format (toolOpeners, from the parser registry's
//   reasoningExits) inside a reasoning span ends the span: in the formats that have
//   one it is a dedicated call token, so the model is calling, not musing. This is
//   how a call inside a think block that never closes still comes out as a call.
//   The opener and what follows go on as text; a later stray `</think>` is dropped.

import { findFirst } from './tool-formats/common/scan.js';

export interface ReasoningPiece {
  type: 'text' | 'reasoning';
  text: string;
}

export interface ReasoningSplitter {
  push(text: string): ReasoningPiece[];
  /** End of output: flushes held-back text. */
  finish(): ReasoningPiece[];
}

export interface ReasoningOptions {
  /** The rendered prompt ended inside an unclosed think block. */
  startsInReasoning: boolean;
  /** Texts that end a reasoning span and start text (the tool-call format's openers). */
  toolOpeners?: readonly string[];
  openTag?: string;
  closeTag?: string;
}

const OPEN = '<think>';
const CLOSE = '</think>';
const LEADING_NL = /^[\r\n]+/;
const TRAILING_NL = /[\r\n]+$/;

/** True when the prompt ends inside an unclosed think block (only whitespace after `<think>`). */
export function promptOpensReasoning(renderedPrompt: string, openTag = OPEN): boolean {
  const i = renderedPrompt.lastIndexOf(openTag);
  return i >= 0 && renderedPrompt.slice(i + openTag.length).trim() === '';
}

export function createReasoningSplitter(opts: ReasoningOptions): ReasoningSplitter {
  return new Splitter(opts);
}

class Splitter implements ReasoningSplitter {
  private readonly open: string;
  private readonly close: string;
  private readonly reasoningMarkers: readonly string[];
  private readonly textMarkers: readonly string[];
  private inReasoning: boolean;
  /** Drop newlines until the next other character (just after a tag). */
  private trimLead: boolean;
  /** Trailing newlines of reasoning, held back in case `</think>` follows. */
  private heldNl = '';
  private buf = '';
  private out: ReasoningPiece[] = [];

  constructor(opts: ReasoningOptions) {
    this.open = opts.openTag ?? OPEN;
    this.close = opts.closeTag ?? CLOSE;
    this.reasoningMarkers = [this.close, this.open, ...(opts.toolOpeners ?? [])];
    this.textMarkers = [this.open, this.close];
    this.inReasoning = opts.startsInReasoning;
    this.trimLead = opts.startsInReasoning;
  }

  push(text: string): ReasoningPiece[] {
    this.buf += text;
    return this.run(false);
  }

  finish(): ReasoningPiece[] {
    const out = this.run(true);
    this.heldNl = '';
    return out;
  }

  private run(eos: boolean): ReasoningPiece[] {
    this.out = [];
    for (;;) {
      const f = findFirst(this.buf, 0, this.inReasoning ? this.reasoningMarkers : this.textMarkers);
      if (f.kind === 'none' || (f.kind === 'partial' && eos)) {
        this.emit(this.buf);
        this.buf = '';
        break;
      }
      this.emit(this.buf.slice(0, f.index));
      this.buf = this.buf.slice(f.index);
      if (f.kind === 'partial') break;
      this.onMarker(f.marker);
    }
    return this.out;
  }

  /** The buffer starts with `marker`. */
  private onMarker(marker: string): void {
    if (marker === this.open) {
      // In reasoning already (e.g. the prompt opened it too), a second `<think>` is dropped.
      this.buf = this.buf.slice(marker.length);
      if (!this.inReasoning) this.trimLead = true;
      this.inReasoning = true;
    } else if (marker === this.close) {
      this.buf = this.buf.slice(marker.length);
      this.heldNl = '';
      this.inReasoning = false;
      this.trimLead = true;
    } else {
      // A tool-call opener: reasoning ends here; the opener stays in the buffer as text.
      this.heldNl = '';
      this.inReasoning = false;
      this.trimLead = false;
    }
  }

  private emit(t: string): void {
    if (this.trimLead) {
      t = t.replace(LEADING_NL, '');
      if (!t) return;
      this.trimLead = false;
    }
    if (this.inReasoning) {
      t = this.heldNl + t;
      this.heldNl = TRAILING_NL.exec(t)?.[0] ?? '';
      t = t.slice(0, t.length - this.heldNl.length);
    }
    if (!t) return;
    const type = this.inReasoning ? 'reasoning' : 'text';
    const last = this.out[this.out.length - 1];
    if (last?.type === type) last.text += t;
    else this.out.push({ type, text: t });
  }
}
