// hermes: `<tool_call>{"name": …, "arguments": {…}}</tool_call>` (Qwen2.5, Qwen3, Hermes).
// The arguments stream as they are generated. A missing `</tool_call>` at the end of
// output is forgiven; several objects inside one block are several calls.

import { JsonCallReader } from '../common/json-call.js';
import { Match, matchAt, skipWs } from '../common/scan.js';
import {
  done,
  MORE,
  REJECT,
  SteppedReader,
  StreamingToolParser,
  type CallReader,
  type CallSink,
  type ReadResult,
} from '../common/stream.js';

const OPEN = '<tool_call>';
const CLOSE = '</tool_call>';

class HermesReader extends SteppedReader {
  private pos: number;
  private obj: JsonCallReader | null = null;

  constructor(
    private readonly sink: CallSink,
    at: number,
  ) {
    super();
    this.pos = at + OPEN.length;
  }

  protected step(buf: string, eos: boolean): ReadResult | null {
    if (this.obj) {
      const r = this.obj.read(buf, eos);
      if (r.kind === 'more') return MORE;
      this.obj = null;
      if (r.kind === 'reject') return this.stop();
      this.pos = this.lastEnd = r.end;
    }
    const j = skipWs(buf, this.pos);
    if (j >= buf.length) return eos ? this.stop() : MORE;
    if (buf[j] === '{') {
      this.obj = new JsonCallReader(this.sink, j);
      return null;
    }
    if (this.lastEnd < 0) return REJECT;
    const m = matchAt(buf, j, CLOSE);
    if (m === Match.Partial && !eos) return MORE;
    // Anything else after a call ends the block there; it is text.
    return done(m === Match.Yes ? j + CLOSE.length : this.lastEnd);
  }
}

export class HermesParser extends StreamingToolParser {
  protected readonly openers = [OPEN];

  protected createReader(_opener: string, at: number, sink: CallSink): CallReader {
    return new HermesReader(sink, at);
  }
}
