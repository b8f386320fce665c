// harmony (GPT-OSS) tool calls: a message to `functions.NAME` (messages.ts reads the framing) is a
// call of NAME with the message body, a JSON object, as its arguments; every other message's body
// is text. Behind the harmony reasoning splitter (splitter.ts) only call messages and the answer's
// text arrive here; alone (no reasoning stage), analysis text is text too.
//
// The header decides: a call commits (`tool_call_start`) as soon as its header is read, before any
// argument, and its arguments stream as they are scanned (common/json-value.ts). The message ends
// at `<|call|>` or, usually, at the end of output (`<|call|>` is an EOS token the pipeline hides).
// Arguments cut off (max_tokens) or turning malformed are closed at their last safe point (as the
// JSON formats do, common/json-call.ts); the rest of that body is dropped: it is inside a call, not
// content. A body that does not start a JSON object gives `{}`.

import type { ParserEvent, ToolCallParser } from '../../events.js';
import { JsonValueScanner, Step } from '../common/json-value.js';
import { isWs } from '../common/scan.js';
import { CallSink } from '../common/stream.js';
import { functionName, HarmonyReader, type HarmonyEvent } from './messages.js';

const enum Args {
  /** Before the object's `{`. */
  Before,
  Scanning,
  /** Complete, malformed or given up: the rest of the body is ignored. */
  Over,
}

export class HarmonyToolParser implements ToolCallParser {
  private readonly reader = new HarmonyReader();
  private readonly sink = new CallSink();
  private out: ParserEvent[] = [];
  /** In a call message. */
  private inCall = false;
  private args = Args.Before;
  private sc = new JsonValueScanner();
  private finished = false;

  push(text: string): ParserEvent[] {
    if (this.finished) throw new Error('push after finish');
    return this.run(this.reader.push(text));
  }

  finish(): ParserEvent[] {
    if (this.finished) return [];
    this.finished = true;
    return this.run(this.reader.finish());
  }

  private run(events: HarmonyEvent[]): ParserEvent[] {
    this.out = [];
    this.sink.target(this.out);
    for (const e of events) {
      switch (e.type) {
        case 'text':
          this.text(e.text);
          break;
        case 'open': {
          const name = functionName(e.header);
          this.inCall = name !== null;
          if (name !== null) {
            this.sink.open(name);
            this.args = Args.Before;
            this.sc = new JsonValueScanner();
          }
          break;
        }
        case 'body':
          if (this.inCall) this.argsText(e.text);
          else this.text(e.text);
          break;
        case 'close':
          if (this.inCall) this.closeCall();
          this.inCall = false;
          break;
      }
    }
    return this.out;
  }

  private argsText(t: string): void {
    for (let i = 0; i < t.length && this.args !== Args.Over; i++) {
      const ch = t[i]!;
      if (this.args === Args.Before) {
        if (isWs(ch)) continue;
        if (ch !== '{') {
          this.args = Args.Over;
          break;
        }
        this.args = Args.Scanning;
      }
      const r = this.sc.push(ch);
      if (r === Step.Error) this.args = Args.Over;
      else if (r !== Step.More) {
        // Done (an object ends at its brace): the arguments are whole.
        this.sink.args(this.sc.takeSafe());
        this.args = Args.Over;
      }
    }
    if (this.args === Args.Scanning) this.sink.args(this.sc.takeSafe());
  }

  private closeCall(): void {
    if (this.sc.kind === null) this.sink.args('{}');
    else if (!this.sc.done) this.sink.args(this.sc.complete().fragment);
    this.sink.close();
  }

  private text(t: string): void {
    if (t === '') return;
    const last = this.out[this.out.length - 1];
    if (last?.type === 'text') last.text += t;
    else this.out.push({ type: 'text', text: t });
  }
}
