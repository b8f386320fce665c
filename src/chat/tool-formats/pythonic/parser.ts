// pythonic: a Python list of calls `[f(a=1), g(b="x")]` (Llama 3.2 / Llama 4 style),
// optionally between `<|python_start|>` and `<|python_end|>`. Each call is decided at
// its closing parenthesis (the scan tracks strings and brackets), so an argument list
// that is not keyword literals leaves the text as text.

import { parsePythonKwargs } from './python-literal.js';
import { Match, matchAt, skipWs } from '../common/scan.js';
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

const PY_START = '<|python_start|>';
const PY_END = '<|python_end|>';
const IDENT_START = /[A-Za-z_]/;
const IDENT_CHAR = /[\w.]/;

const enum St {
  Open,
  CallStart,
  Name,
  Paren,
  Args,
  AfterCall,
  End,
}

class PythonicReader extends SteppedReader {
  private pos: number;
  private st = St.Open;
  private name = '';
  private nameStart = 0;
  private argsStart = 0;
  private depth = 0;
  private quote = '';
  private escaped = false;

  constructor(
    private readonly sink: CallSink,
    at: number,
    /** Opened by `<|python_start|>`, so a `<|python_end|>` closes it. */
    private readonly tagged: boolean,
  ) {
    super();
    this.pos = tagged ? at + PY_START.length : at;
  }

  protected step(buf: string, eos: boolean): ReadResult | null {
    if (this.st === St.Name) {
      while (this.pos < buf.length && IDENT_CHAR.test(buf[this.pos]!)) this.pos++;
      if (this.pos >= buf.length) return eos ? this.stop() : MORE;
      this.name = buf.slice(this.nameStart, this.pos);
      this.st = St.Paren;
      return null;
    }
    if (this.st === St.Args) return this.scanArgs(buf, eos);
    const j = skipWs(buf, this.pos);
    if (this.st === St.End) {
      // The list is closed; only a tagged list has a closing tag to take along.
      const m = this.tagged ? (j < buf.length ? matchAt(buf, j, PY_END) : Match.Partial) : Match.No;
      if (m === Match.Partial && !eos) return MORE;
      return done(m === Match.Yes ? j + PY_END.length : this.pos);
    }
    if (j >= buf.length) return eos ? this.stop() : MORE;
    const ch = buf[j]!;
    switch (this.st) {
      case St.Open:
        if (ch !== '[') return REJECT;
        this.st = St.CallStart;
        break;
      case St.CallStart:
        if (IDENT_START.test(ch)) {
          this.nameStart = this.pos = j;
          this.st = St.Name;
          return null;
        }
        // `[]` is not a call list; a trailing comma before `]` is forgiven.
        if (ch !== ']' || this.lastEnd < 0) return this.stop();
        this.st = St.End;
        break;
      case St.Paren:
        if (ch !== '(') return this.stop();
        this.argsStart = j + 1;
        this.depth = 0;
        this.st = St.Args;
        break;
      case St.AfterCall:
        if (ch !== ',' && ch !== ']') return done(this.lastEnd);
        this.st = ch === ',' ? St.CallStart : St.End;
        break;
    }
    this.pos = j + 1;
    return null;
  }

  /** Finds the parenthesis closing the argument list; the call is emitted there. */
  private scanArgs(buf: string, eos: boolean): ReadResult | null {
    for (; this.pos < buf.length; this.pos++) {
      const ch = buf[this.pos]!;
      if (this.quote) {
        if (this.escaped) this.escaped = false;
        else if (ch === '\\') this.escaped = true;
        else if (ch === this.quote) this.quote = '';
      } else if (ch === '"' || ch === "'") this.quote = ch;
      else if (ch === '(' || ch === '[' || ch === '{') this.depth++;
      else if (ch === ')' || ch === ']' || ch === '}') {
        if (this.depth-- > 0) continue;
        if (ch !== ')') return this.stop();
        return this.emit(buf);
      }
    }
    return eos ? this.stop() : MORE;
  }

  private emit(buf: string): ReadResult | null {
    const args = parsePythonKwargs(buf.slice(this.argsStart, this.pos));
    if (args === null) return this.stop();
    this.sink.open(this.name);
    this.sink.args(JSON.stringify(args));
    this.sink.close();
    this.pos = this.lastEnd = this.pos + 1;
    this.st = St.AfterCall;
    return null;
  }
}

export class PythonicParser extends StreamingToolParser {
  protected readonly openers = ['[', PY_START];

  protected createReader(opener: string, at: number, sink: CallSink): CallReader {
    return new PythonicReader(sink, at, opener === PY_START);
  }
}
