// fam3: Gemma-style calls `<|tool_call>call:NAME{key:<|"|>text<|"|>,n:3}<tool_call|>`.
// The argument syntax is relaxed (see gemma-args.ts), so a call is decided when its
// braces close: the scan tracks strings, so a `}` or `<tool_call|>` inside a string is
// string content. A missing `<tool_call|>` at the end of output is forgiven.

import { GEMMA_QUOTE, parseGemmaObject } from './gemma-args.js';
import { Match, matchAt, partialTail, skipWs } from '../common/scan.js';
import {
  done,
  MORE,
  REJECT,
  StreamingToolParser,
  SteppedReader,
  type CallReader,
  type CallSink,
  type ReadResult,
} from '../common/stream.js';

const OPEN = '<|tool_call>';
const CLOSE = '<tool_call|>';
const PREFIX = 'call:';
const NAME_CHAR = /[\w.-]/;

const enum St {
  Prefix,
  Name,
  Body,
  After,
}

class GemmaReader extends SteppedReader {
  private pos: number;
  private st = St.Prefix;
  private nameStart = 0;
  private bodyStart = 0;
  private depth = 0;
  /** Inside a string: its closing quote, else ''. */
  private quote = '';
  private escaped = false;

  constructor(
    private readonly sink: CallSink,
    at: number,
  ) {
    super();
    this.pos = at + OPEN.length;
  }

  protected step(buf: string, eos: boolean): ReadResult | null {
    switch (this.st) {
      case St.Prefix: {
        const j = skipWs(buf, this.pos);
        const m = j < buf.length ? matchAt(buf, j, PREFIX) : Match.Partial;
        if (m === Match.Partial) return eos ? REJECT : MORE;
        this.nameStart = this.pos = m === Match.Yes ? j + PREFIX.length : j;
        this.st = St.Name;
        return null;
      }
      case St.Name:
        while (this.pos < buf.length && NAME_CHAR.test(buf[this.pos]!)) this.pos++;
        if (this.pos >= buf.length) return eos ? REJECT : MORE;
        if (buf[this.pos] !== '{' || this.pos === this.nameStart) return REJECT;
        this.bodyStart = this.pos;
        this.st = St.Body;
        return null;
      case St.Body:
        return this.scanBody(buf, eos);
      case St.After: {
        const j = skipWs(buf, this.pos);
        const m = j < buf.length ? matchAt(buf, j, CLOSE) : Match.Partial;
        if (m === Match.Partial && !eos) return MORE;
        return done(m === Match.Yes ? j + CLOSE.length : this.lastEnd);
      }
    }
  }

  /** Finds the brace closing the arguments; the call is emitted there. */
  private scanBody(buf: string, eos: boolean): ReadResult | null {
    while (this.pos < buf.length) {
      if (this.quote === GEMMA_QUOTE) {
        const end = buf.indexOf(GEMMA_QUOTE, this.pos);
        if (end < 0) {
          const p = partialTail(buf, this.pos, [GEMMA_QUOTE]);
          this.pos = p >= 0 ? p : buf.length;
          break;
        }
        this.pos = end + GEMMA_QUOTE.length;
        this.quote = '';
        continue;
      }
      const ch = buf[this.pos]!;
      if (this.quote === '"') {
        if (this.escaped) this.escaped = false;
        else if (ch === '\\') this.escaped = true;
        else if (ch === '"') this.quote = '';
      } else if (ch === '<') {
        const m = matchAt(buf, this.pos, GEMMA_QUOTE);
        if (m === Match.Partial) break;
        if (m === Match.Yes) {
          this.quote = GEMMA_QUOTE;
          this.pos += GEMMA_QUOTE.length;
          continue;
        }
      } else if (ch === '"') this.quote = '"';
      else if (ch === '{' || ch === '[') this.depth++;
      else if ((ch === '}' || ch === ']') && --this.depth === 0) {
        this.pos++;
        return this.emit(buf);
      }
      this.pos++;
    }
    return eos ? REJECT : MORE;
  }

  private emit(buf: string): ReadResult | null {
    const args = parseGemmaObject(buf.slice(this.bodyStart, this.pos));
    if (args === null) return REJECT;
    this.sink.open(buf.slice(this.nameStart, this.bodyStart));
    this.sink.args(JSON.stringify(args));
    this.sink.close();
    this.lastEnd = this.pos;
    this.st = St.After;
    return null;
  }
}

export class GemmaParser extends StreamingToolParser {
  protected readonly openers = [OPEN];

  protected createReader(_opener: string, at: number, sink: CallSink): CallReader {
    return new GemmaReader(sink, at);
  }
}
