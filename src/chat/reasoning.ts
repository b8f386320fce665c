// Splits model output into reasoning and text. It runs before the tool-call parser:
// detokenizer → stop strings → reasoning splitter → (text only) tool-call parser.
//
// Reasoning formats (MODEL.toml [model] reasoning_format; REASONING_FORMATS below):
//   think     `<think>` … `</think>`                 Qwen3, DeepSeek-R1, GLM, MiniMax …
//   mistral   `[THINK]` … `[/THINK]`                 Magistral, Ministral reasoning models
//   gemma4    `<|channel>thought\n` … `<channel|>`   Gemma 4 (the `thought` label line is dropped)
//   harmony   `<|channel|>analysis<|message|>` … `<|end|>`   GPT-OSS: not a tag pair but a framing of
//             every message (reasoning, answer, calls); its own splitter reads it
//             (tool-formats/harmony/splitter.ts), and none of what follows applies to it.
// Below, "open tag" / "close tag" are the format's pair; `<think>` stands for either.
//
// A block boundary is a point in the text (outside reasoning) where only whitespace has come
// since the start of the output, the last newline or the last close tag, and no tool-call opener
// of the active format (toolOpeners below) has been seen yet — after one the model is inside or
// after its calls. A block boundary is never inside a call's arguments: JSON strings cannot hold
// a raw newline, and the XML formats' values, which can, come after their opener.
//
// Where a reasoning span opens:
// - At the start of the output, when the rendered prompt ended inside an unclosed block
//   (promptOpensReasoning). A template-forced empty block (`<think>\n\n</think>`) is closed, so
//   it does not count (promptClosesReasoning).
// - Where the model writes the open tag at a block boundary (spec rule 3: a spontaneous
//   `<think>` mid-stream is detected). Anywhere else — mid-sentence, inside a call's arguments,
//   after a call — the open tag is text. (A line of content that starts with the tag, in a code
//   block say, does open a span: the price of rule 3.)
//
// Where it closes:
// - At the close tag.
// - At a tool-call opener of the active format (toolOpeners: the parser registry's
//   reasoningExits, dedicated call tokens such as `<tool_call>`, `[TOOL_CALLS]`, `<|tool_call>`):
//   the model is calling, not musing, so a call written inside a block that never closes, or
//   before it closes, comes out as a call (as vLLM does; llama.cpp keeps it as reasoning). The
//   opener and what follows go on as text; the same holds in every reasoning format.
//
// Outside reasoning, tags are text: a `</think>` in content (mid-sentence) or in a call's
// arguments is kept, as is a `<think>` that is not at a block boundary. The one exception: a
// close tag at a block boundary is dropped (with the newlines after it, as after any close tag).
// It sits in no call and closes nothing that is open: it is the model closing a block that was
// closed for it (the thinking budget forces `\n</think>\n\n`; a model cut off mid-thought writes
// its own `</think>` a line later), or one the template opened in a way promptOpensReasoning did
// not recognise (a close tag before any output: vLLM's DeepSeek-R1 / Qwen3 / Mistral parsers read
// that one as an empty block too). A close tag that pairs with an open tag kept as text before
// it stays text (`Use <think>\n…\n</think>` stays whole), and so does one after a call that ended
// reasoning (promotion above). vLLM and llama.cpp keep every close tag after the end of
// reasoning as content.
//
// Inside reasoning, an open tag before any non-whitespace reasoning (the model re-opening the
// block the prompt opened) is dropped; a later one is reasoning text.
//
// Formatting: newlines right after the open tag (and Gemma's label), right before the close tag
// and right after the close tag are dropped (Qwen3 writes `<think>\nX\n</think>\n\n`).

import type { ReasoningFormatName } from '../model/model-toml.js';

export type { ReasoningFormatName };
import { findFirst } from './tool-formats/common/scan.js';
import { HarmonySplitter } from './tool-formats/harmony/splitter.js';

/** How one family of models writes its reasoning. */
export interface ReasoningFormat {
  /** The tag (usually one special token) that opens a reasoning span. */
  open: string;
  /** The tag that closes it. */
  close: string;
  /** A label the model writes on the open tag's line and that is no part of the reasoning (Gemma 4's `thought`). */
  label?: string;
  /** What the thinking budget forces once it is spent: the close tag with the model's own spacing. */
  budgetClose: string;
  /**
   * Formats that frame every message, the answer included (harmony): the splitter that reads the
   * framing, used instead of the tag splitter below.
   */
  splitter?: (opts: ReasoningOptions) => ReasoningSplitter;
  /**
   * Framed formats: the text that opens the answer. A structured answer is enforced after it, and
   * the format's tool-call grammar covers the reasoning itself (no free text before the calls).
   */
  answerStart?: string;
}

export const REASONING_FORMATS: Readonly<Record<ReasoningFormatName, ReasoningFormat>> = {
  think: { open: '<think>', close: '</think>', budgetClose: '\n</think>\n\n' },
  mistral: { open: '[THINK]', close: '[/THINK]', budgetClose: '[/THINK]' },
  gemma4: { open: '<|channel>', close: '<channel|>', label: 'thought', budgetClose: '<channel|>' },
  // The open "tag" is three tokens, so no thinking budget watches it (output-plan.ts); GPT-OSS takes
  // its effort from the system message (`reasoning_effort`) instead.
  harmony: {
    open: '<|channel|>analysis<|message|>',
    close: '<|end|>',
    budgetClose: '<|end|><|start|>assistant<|channel|>final<|message|>',
    splitter: (opts) => new HarmonySplitter(opts),
    answerStart: '<|channel|>final<|message|>',
  },
};

export interface ReasoningPiece {
  type: 'text' | 'reasoning';
  text: string;
}

export interface ReasoningSplitter {
  push(text: string): ReasoningPiece[];
  /** End of output: flushes held-back text. */
  finish(): ReasoningPiece[];
  /** True once the splitter has read the end of the output (harmony's `<|return|>`, `<|call|>`). */
  readonly ended?: boolean;
}

export interface ReasoningOptions {
  /** The rendered prompt ended inside an unclosed reasoning block. */
  startsInReasoning: boolean;
  /** Texts that end a reasoning span and start text (the tool-call format's openers). */
  toolOpeners?: readonly string[];
  /** The model's reasoning tags; `<think>` … `</think>` by default. */
  format?: ReasoningFormat;
}

const LEADING_NL = /^[\r\n]+/;
const TRAILING_NL = /[\r\n]+$/;
const NON_SPACE = /\S/;
const NO_MARKERS: readonly string[] = [];

/** True when the prompt ends inside an unclosed reasoning block (only whitespace, or the format's label, after the open tag). */
export function promptOpensReasoning(renderedPrompt: string, format: ReasoningFormat = REASONING_FORMATS.think): boolean {
  const i = renderedPrompt.lastIndexOf(format.open);
  if (i < 0) return false;
  const rest = renderedPrompt.slice(i + format.open.length).trim();
  return rest === '' || rest === format.label;
}

/** True when the prompt ends with an empty block the template closed itself (enable_thinking false): no reasoning follows. */
export function promptClosesReasoning(renderedPrompt: string, format: ReasoningFormat = REASONING_FORMATS.think): boolean {
  const label = format.label === undefined ? '' : `(?:${escapeRegExp(format.label)}\\s*)?`;
  return new RegExp(`${escapeRegExp(format.open)}\\s*${label}${escapeRegExp(format.close)}\\s*$`).test(renderedPrompt);
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

export function createReasoningSplitter(opts: ReasoningOptions): ReasoningSplitter {
  return opts.format?.splitter?.(opts) ?? new Splitter(opts);
}

/** Whether only whitespace follows the last line break once `t` is appended to a line that was blank (`blank`). */
function blankAfter(blank: boolean, t: string): boolean {
  const nl = Math.max(t.lastIndexOf('\n'), t.lastIndexOf('\r'));
  const tailBlank = !NON_SPACE.test(nl >= 0 ? t.slice(nl + 1) : t);
  return nl >= 0 ? tailBlank : blank && tailBlank;
}

class Splitter implements ReasoningSplitter {
  private readonly open: string;
  private readonly close: string;
  /** The label line after the open tag (Gemma 4's `thought\n`), or null. */
  private readonly labelLine: string | null;
  private readonly reasoningMarkers: readonly string[];
  private readonly textMarkers: readonly string[];
  private readonly toolOpeners: ReadonlySet<string>;
  private inReasoning: boolean;
  /** Drop newlines until the next other character (just after a tag). */
  private trimLead: boolean;
  /** Trailing newlines of reasoning, held back in case the close tag follows. */
  private heldNl = '';
  /** Just after an open tag: the label line may come next. */
  private expectLabel: boolean;
  /** Only whitespace in this reasoning span so far. */
  private spanBlank = true;
  /** Only whitespace in the text since the start of the output, the last newline or the last close tag. */
  private lineBlank = true;
  /** A tool-call opener was seen: the model is in or after its calls, and there are no block boundaries any more. */
  private sawCall = false;
  /** An open tag went out as text and no close tag has since: the next close tag is its pair, text too. */
  private textOpen = false;
  private buf = '';
  private out: ReasoningPiece[] = [];

  constructor(opts: ReasoningOptions) {
    const format = opts.format ?? REASONING_FORMATS.think;
    const openers = opts.toolOpeners ?? [];
    this.open = format.open;
    this.close = format.close;
    this.labelLine = format.label === undefined ? null : `${format.label}\n`;
    this.reasoningMarkers = [this.close, this.open, ...openers];
    this.textMarkers = [this.open, this.close, ...openers];
    this.toolOpeners = new Set(openers);
    this.inReasoning = opts.startsInReasoning;
    this.trimLead = opts.startsInReasoning;
    this.expectLabel = opts.startsInReasoning;
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
      if (this.expectLabel && !this.takeLabel(eos)) break;
      const markers = this.inReasoning ? this.reasoningMarkers : this.sawCall ? NO_MARKERS : this.textMarkers;
      const f = findFirst(this.buf, 0, markers);
      if (f.kind === 'none' || (f.kind === 'partial' && eos)) {
        this.emit(this.buf);
        this.buf = '';
        break;
      }
      this.emit(this.buf.slice(0, f.index));
      this.buf = this.buf.slice(f.index);
      if (f.kind === 'partial') break;
      if (this.inReasoning) this.onReasoningMarker(f.marker);
      else this.onTextMarker(f.marker);
    }
    return this.out;
  }

  /** Drops the label line at the start of a span; false while the buffer could still become it. */
  private takeLabel(eos: boolean): boolean {
    const line = this.labelLine;
    if (line !== null && this.buf.startsWith(line)) this.buf = this.buf.slice(line.length);
    else if (line !== null && line.startsWith(this.buf) && !eos) return false;
    this.expectLabel = false;
    return true;
  }

  /** In reasoning; the buffer starts with `marker`. */
  private onReasoningMarker(marker: string): void {
    if (marker === this.close) {
      this.buf = this.buf.slice(marker.length);
      this.heldNl = '';
      this.inReasoning = false;
      this.trimLead = true;
      this.lineBlank = true;
    } else if (marker === this.open) {
      // The model re-opening the block the prompt opened: dropped. Later in the span it is reasoning text.
      if (!this.spanBlank) this.emit(marker);
      this.buf = this.buf.slice(marker.length);
    } else {
      // A tool-call opener: reasoning ends here; the opener stays in the buffer and goes on as text.
      this.heldNl = '';
      this.inReasoning = false;
      this.trimLead = false;
      this.sawCall = true;
    }
  }

  /** In text; the buffer starts with `marker`. */
  private onTextMarker(marker: string): void {
    if (this.toolOpeners.has(marker)) {
      // Text from here on, whatever tags it holds; the opener itself is emitted on the next round.
      this.sawCall = true;
      return;
    }
    this.buf = this.buf.slice(marker.length);
    // No opener seen yet (sawCall would have emptied the markers): lineBlank says block boundary.
    if (marker === this.open) {
      if (this.lineBlank) {
        this.inReasoning = true;
        this.trimLead = true;
        this.expectLabel = true;
        this.spanBlank = true;
      } else {
        this.textOpen = true;
        this.emit(marker);
      }
    } else if (this.lineBlank && !this.textOpen) {
      // A stray close at a block boundary closes nothing open: dropped, with the newlines after it.
      this.trimLead = true;
    } else {
      this.textOpen = false;
      this.emit(marker);
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
    if (this.inReasoning && NON_SPACE.test(t)) this.spanBlank = false;
    if (!this.inReasoning) this.lineBlank = blankAfter(this.lineBlank, t);
    const type = this.inReasoning ? 'reasoning' : 'text';
    const last = this.out[this.out.length - 1];
    if (last?.type === type) last.text += t;
    else this.out.push({ type, text: t });
  }
}
