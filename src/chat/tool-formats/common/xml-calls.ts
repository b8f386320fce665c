// Reader shared by the XML tool-call families (fam1: `<function=NAME><parameter=KEY>`,
// fam4: `<invoke name="NAME"><parameter name="KEY">`). A call is committed at its
// opening tag, each parameter is streamed when it ends, and values are typed by the
// tool's schema. Missing `</parameter>` / `</function>` tags are forgiven: the next
// tag (or the end of output) ends the element.

import { ArgsWriter } from './args-writer.js';
import type { ParamTyper } from './param-typer.js';
import { findFirst, Match, matchAny, matchAt, PARTIAL, skipWs } from './scan.js';
import { done, MORE, REJECT, SteppedReader, type CallSink, type ReadResult } from './stream.js';

export interface XmlDialect {
  /** Wrapper around one or more calls. */
  blockOpen: string;
  blockClose: string;
  /** A call's opening tag up to its name; the name runs to the next `>`. */
  itemOpen: string;
  itemClose: string;
  /** A parameter's opening tag up to its name; the name runs to the next `>`. */
  paramOpen: string;
  paramClose: string;
}

const enum St {
  BlockStart,
  ItemTag,
  ItemBody,
  ParamTag,
  ParamValue,
  AfterItem,
}

/** A tag name longer than this, or spanning a line, means the text is not a tag. */
const MAX_NAME = 256;

export class XmlCallReader extends SteppedReader {
  private pos: number;
  private st: St;
  private tagStart: number;
  private name = '';
  private key = '';
  private valueStart = 0;
  private scanFrom = 0;
  private args: ArgsWriter | null = null;
  private readonly bodyTags: readonly string[];
  private readonly valueEnds: readonly string[];

  constructor(
    private readonly d: XmlDialect,
    private readonly typer: ParamTyper,
    private readonly sink: CallSink,
    at: number,
    /** Opened by the block wrapper (else by a bare call tag). */
    private readonly wrapped: boolean,
  ) {
    super();
    this.tagStart = at;
    this.pos = at + (wrapped ? d.blockOpen.length : d.itemOpen.length);
    this.st = wrapped ? St.BlockStart : St.ItemTag;
    this.bodyTags = [d.paramOpen, d.itemClose, d.blockClose];
    this.valueEnds = [d.paramClose, ...this.bodyTags];
  }

  /** One transition; null when it made progress and the loop should go on. */
  protected step(buf: string, eos: boolean): ReadResult | null {
    const d = this.d;
    switch (this.st) {
      case St.BlockStart: {
        const j = skipWs(buf, this.pos);
        const m = j < buf.length ? matchAt(buf, j, d.itemOpen) : Match.Partial;
        if (m === Match.Partial) return eos ? REJECT : MORE;
        if (m === Match.No) return REJECT;
        this.tagStart = j;
        this.pos = j + d.itemOpen.length;
        this.st = St.ItemTag;
        return null;
      }
      case St.ItemTag:
      case St.ParamTag: {
        const name = this.tagName(buf, eos);
        if (name === undefined) return MORE;
        if (name === null) return this.st === St.ItemTag ? this.stop() : this.endCall(this.tagStart);
        if (this.st === St.ItemTag) {
          this.name = name;
          this.args = new ArgsWriter(this.sink, name);
          this.st = St.ItemBody;
        } else {
          this.key = name;
          this.valueStart = this.scanFrom = this.pos;
          this.st = St.ParamValue;
        }
        return null;
      }
      case St.ItemBody: {
        const j = skipWs(buf, this.pos);
        const k = j < buf.length ? matchAny(buf, j, this.bodyTags) : PARTIAL;
        if (k === PARTIAL && !eos) return MORE;
        if (k === 0) {
          this.tagStart = j;
          this.pos = j + d.paramOpen.length;
          this.st = St.ParamTag;
          return null;
        }
        if (k === 1) {
          this.closeCall();
          this.pos = this.lastEnd = j + d.itemClose.length;
          this.st = St.AfterItem;
          return null;
        }
        if (k === 2) return this.endCall(j + d.blockClose.length);
        // End of output, or stray text inside the call: the call ends here, the rest is text.
        return this.endCall(j);
      }
      case St.ParamValue: {
        const f = findFirst(buf, this.scanFrom, this.valueEnds);
        if (f.kind !== 'full') {
          this.scanFrom = f.kind === 'partial' ? f.index : buf.length;
          if (!eos) return MORE;
          this.param(buf.slice(this.valueStart).trimEnd());
          return this.endCall(buf.length);
        }
        const raw = buf.slice(this.valueStart, f.index);
        if (f.marker === d.paramClose) {
          this.param(raw);
          this.pos = f.index + d.paramClose.length;
        } else {
          // No closing tag: the next tag ends the value and is read as usual.
          this.param(raw.trimEnd());
          this.pos = f.index;
        }
        this.st = St.ItemBody;
        return null;
      }
      case St.AfterItem: {
        const j = skipWs(buf, this.pos);
        const tags = this.wrapped ? [d.blockClose, d.itemOpen] : [d.blockClose];
        const k = j < buf.length ? matchAny(buf, j, tags) : PARTIAL;
        if (k === PARTIAL && !eos) return MORE;
        if (k === 0) return done(j + d.blockClose.length);
        if (k === 1) {
          this.tagStart = j;
          this.pos = j + d.itemOpen.length;
          this.st = St.ItemTag;
          return null;
        }
        return done(this.lastEnd);
      }
    }
  }

  /** The name in the tag at `pos` (up to `>`); undefined until decided, null if not a tag. */
  private tagName(buf: string, eos: boolean): string | null | undefined {
    const limit = Math.min(buf.length, this.pos + MAX_NAME);
    const gt = buf.indexOf('>', this.pos);
    const text = buf.slice(this.pos, gt >= 0 && gt < limit ? gt : limit);
    if (/[<\n]/.test(text)) return null;
    if (gt < 0 || gt >= limit) return eos || limit - this.pos >= MAX_NAME ? null : undefined;
    this.pos = gt + 1;
    const name = text.trim().replace(/^(["'])(.*)\1$/, '$2');
    return name || null;
  }

  private param(raw: string): void {
    this.args!.param(this.key, this.typer.convert(this.name, this.key, raw));
  }

  private closeCall(): void {
    this.args!.close();
    this.args = null;
  }

  private endCall(end: number): ReadResult {
    this.closeCall();
    return done(end);
  }
}

/**
 * Whether `name` survives the tag reading above (`<function=NAME>`, `<invoke name="NAME">`): the
 * text up to `>` on one line, trimmed, one pair of quotes around it dropped. The grammars write
 * only such names.
 */
export function xmlTagNameOk(name: string, quoted: boolean): boolean {
  if (name.length === 0 || name.length > 200 || /[<>\n]/.test(name)) return false;
  if (quoted) return true;
  return name === name.trim() && !/^(["']).*\1$/.test(name);
}
