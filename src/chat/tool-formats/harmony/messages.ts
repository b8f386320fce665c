// OpenAI harmony (GPT-OSS): the streaming reader of the message framing that both harmony stages
// share (the reasoning splitter, splitter.ts, and the tool-call parser, parser.ts).
//
// What the model writes after the generation prompt's `<|start|>assistant`:
//   <|channel|>analysis<|message|>…<|end|>                                   reasoning
//   <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>
//   <|start|>assistant to=functions.NAME<|channel|>commentary json<|message|>{…}<|call|>
//   <|start|>assistant<|channel|>commentary<|message|>…<|end|>               a preamble (user-visible)
//   <|start|>assistant<|channel|>final<|message|>…<|return|>                 the answer
// A header runs from `<|start|>` (or a `<|channel|>` outside a message) to `<|message|>`: the role,
// `<|channel|>NAME`, an optional recipient `to=…` (before or after the channel), and an optional
// content type (`<|constrain|>json`, or a bare `json`). The body runs to `<|end|>`, `<|call|>` or
// `<|return|>`. `<|call|>` and `<|return|>` end the output (GPT-OSS's generation_config lists them
// as EOS, so the pipeline usually hides them and the output just ends); anything after one is
// dropped and `stopped` turns true. Tolerated: a body cut short by the next `<|start|>` or
// `<|channel|>` (the model forgot `<|end|>`), a recipient-first header at the very start of the
// output (` to=functions.X<|channel|>…`: the prompt wrote `<|start|>assistant`), stray `<|end|>`s
// between messages (dropped), and text outside any message (passed on as `text`).
//
// Every decision waits for the text that proves it: a special token cut by a chunk boundary
// (`<|me` … `ssage|>`) is held back, so every chunking gives the same events (bodies may come in
// different pieces). A header that reaches MAX_HEADER characters without `<|message|>` is no
// header: its text is passed on as text. A header cut off by the end of output is dropped.

import { findFirst } from '../common/scan.js';

export const START = '<|start|>';
export const CHANNEL = '<|channel|>';
export const MESSAGE = '<|message|>';
export const CONSTRAIN = '<|constrain|>';
export const END = '<|end|>';
export const CALL = '<|call|>';
export const RETURN = '<|return|>';

/** The recipient prefix of a function call (`to=functions.get_weather`). */
export const FUNCTIONS = 'functions.';

/** Longest header taken as one (the longest real ones are a tool name plus ~60 characters). */
const MAX_HEADER = 512;

export interface HarmonyHeader {
  /** `analysis`, `commentary`, `final` … ('' when the header names none). */
  channel: string;
  /** `functions.NAME`, `python`, `browser.search` …, or null. */
  recipient: string | null;
  /** `json` …, or null. */
  contentType: string | null;
}

export type HarmonyEvent =
  /** Text outside any message. */
  | { type: 'text'; text: string }
  | { type: 'open'; header: HarmonyHeader }
  | { type: 'body'; text: string }
  /** The message ended: at its terminator, or null (the next header, or the end of output). */
  | { type: 'close'; end: string | null };

const BODY_MARKERS = [END, CALL, RETURN, START, CHANNEL];
const OUTSIDE_MARKERS = [START, CHANNEL, END, CALL, RETURN];
const HEADER_MARKERS = [MESSAGE];
const RECIPIENT_FIRST = /^\s*to=/;

const enum St {
  /** The start of the output: a recipient-first header may come. */
  Start,
  Outside,
  Header,
  Body,
}

/**
 * A recipient-first header so far: `to=NAME`, whitespace, and then `<|channel|>` (or a prefix of it)
 * and anything after it.
 */
function recipientFirstHeader(text: string): boolean {
  const m = /^\s*to=[^\s<]*\s*/.exec(text);
  if (m === null) return false;
  const rest = text.slice(m[0].length);
  return rest.startsWith(CHANNEL) || CHANNEL.startsWith(rest);
}

/** Reads the header text between `<|start|>` and `<|message|>`. */
export function parseHeader(text: string): HarmonyHeader {
  const c = text.indexOf(CHANNEL);
  const channel = c < 0 ? '' : (/^\s*([^\s<]+)/.exec(text.slice(c + CHANNEL.length))?.[1] ?? '');
  const recipient = /(?:^|\s|>)to=([^\s<]+)/.exec(text)?.[1] ?? null;
  let contentType = /<\|constrain\|>\s*([^\s<]+)/.exec(text)?.[1] ?? null;
  if (contentType === null && c >= 0) {
    // A bare content type: the last word after the channel that is not the recipient.
    const words = text
      .slice(c + CHANNEL.length)
      .split(/\s+|<\|[a-z]+\|>/)
      .filter((w) => w !== '');
    const last = words.length > 1 ? words[words.length - 1]! : '';
    if (last !== '' && !last.startsWith('to=')) contentType = last;
  }
  return { channel, recipient, contentType };
}

export interface HarmonyReaderOptions {
  /** The prompt left an analysis message open (it ended with `<|channel|>analysis<|message|>`). */
  startsInAnalysis?: boolean;
}

export class HarmonyReader {
  private st: St;
  private buf = '';
  private header = '';
  /** The open header began with the recipient, at the start of the output (` to=functions.X<|channel|>…`). */
  private recipientFirst = false;
  private out: HarmonyEvent[] = [];
  private stop = false;

  constructor(opts: HarmonyReaderOptions = {}) {
    this.st = opts.startsInAnalysis ? St.Body : St.Start;
    if (opts.startsInAnalysis) this.out.push({ type: 'open', header: { channel: 'analysis', recipient: null, contentType: null } });
  }

  /** A `<|call|>` or `<|return|>` ended the output: whatever follows is dropped. */
  get stopped(): boolean {
    return this.stop;
  }

  push(text: string): HarmonyEvent[] {
    if (!this.stop) this.buf += text;
    return this.run(false);
  }

  finish(): HarmonyEvent[] {
    return this.run(true);
  }

  private run(eos: boolean): HarmonyEvent[] {
    while (!this.stop && this.step(eos));
    if (eos) {
      // A header cut off by the end of output is control text, never content; an unproven
      // recipient-first one was text.
      if (this.st === St.Header && this.recipientFirst) this.text(this.header);
      if (this.st === St.Body) this.emit({ type: 'close', end: null });
      this.st = St.Outside;
      this.buf = '';
      this.header = '';
    }
    const out = this.out;
    this.out = [];
    return out;
  }

  /** One decision; false when the buffer holds nothing more that can be decided. */
  private step(eos: boolean): boolean {
    if (this.buf === '') return false;
    switch (this.st) {
      case St.Start:
        return this.stepStart(eos);
      case St.Outside:
        return this.stepOutside(eos);
      case St.Header:
        return this.stepHeader(eos);
      case St.Body:
        return this.stepBody(eos);
    }
  }

  private stepStart(eos: boolean): boolean {
    if (RECIPIENT_FIRST.test(this.buf)) {
      this.st = St.Header;
      this.header = '';
      this.recipientFirst = true;
      return true;
    }
    // Still possibly `to=` (after whitespace): wait for more.
    const t = this.buf.trimStart();
    if (!eos && 'to='.startsWith(t)) return false;
    this.st = St.Outside;
    return true;
  }

  private stepOutside(eos: boolean): boolean {
    const f = findFirst(this.buf, 0, OUTSIDE_MARKERS);
    if (f.kind === 'none' || (f.kind === 'partial' && eos)) {
      this.text(this.take(this.buf.length));
      return false;
    }
    this.text(this.take(f.index));
    if (f.kind === 'partial') return false;
    this.take(f.marker.length);
    if (f.marker === START) {
      this.st = St.Header;
      this.header = '';
    } else if (f.marker === CHANNEL) {
      this.st = St.Header;
      this.header = CHANNEL;
    } else if (f.marker !== END) this.stop = true;
    return true;
  }

  private stepHeader(eos: boolean): boolean {
    const f = findFirst(this.buf, 0, HEADER_MARKERS);
    if (f.kind === 'full') {
      this.header += this.take(f.index);
      if (this.recipientFirst && !recipientFirstHeader(this.header)) return this.notHeader();
      this.take(MESSAGE.length);
      this.st = St.Body;
      this.recipientFirst = false;
      this.emit({ type: 'open', header: parseHeader(this.header) });
      this.header = '';
      return true;
    }
    const keep = f.kind === 'partial' && !eos ? f.index : this.buf.length;
    this.header += this.take(keep);
    if (this.recipientFirst && !recipientFirstHeader(this.header)) return this.notHeader();
    if (this.header.length >= MAX_HEADER) {
      // No header after all: its text is text.
      this.text(this.header);
      this.header = '';
      this.st = St.Outside;
      return true;
    }
    return false;
  }

  private stepBody(eos: boolean): boolean {
    const f = findFirst(this.buf, 0, BODY_MARKERS);
    if (f.kind === 'none' || (f.kind === 'partial' && eos)) {
      this.body(this.take(this.buf.length));
      return false;
    }
    this.body(this.take(f.index));
    if (f.kind === 'partial') return false;
    if (f.marker === START || f.marker === CHANNEL) {
      // The model went on to the next message without `<|end|>`: the marker starts its header.
      this.emit({ type: 'close', end: null });
      this.st = St.Outside;
      return true;
    }
    this.take(f.marker.length);
    this.emit({ type: 'close', end: f.marker });
    this.st = St.Outside;
    if (f.marker !== END) this.stop = true;
    return true;
  }

  /** The recipient-first "header" at the start was text that begins with `to=`. */
  private notHeader(): boolean {
    this.text(this.header);
    this.header = '';
    this.recipientFirst = false;
    this.st = St.Outside;
    return true;
  }

  private take(n: number): string {
    const t = this.buf.slice(0, n);
    this.buf = this.buf.slice(n);
    return t;
  }

  private text(t: string): void {
    if (t === '') return;
    const last = this.out[this.out.length - 1];
    if (last?.type === 'text') last.text += t;
    else this.out.push({ type: 'text', text: t });
  }

  private body(t: string): void {
    if (t === '') return;
    const last = this.out[this.out.length - 1];
    if (last?.type === 'body') last.text += t;
    else this.out.push({ type: 'body', text: t });
  }

  private emit(e: HarmonyEvent): void {
    this.out.push(e);
  }
}

/** The tool a recipient calls (`functions.get_weather` → `get_weather`), or null when it is no function call. */
export function functionName(header: HarmonyHeader): string | null {
  const r = header.recipient;
  return r !== null && r.startsWith(FUNCTIONS) && r.length > FUNCTIONS.length ? r.slice(FUNCTIONS.length) : null;
}
