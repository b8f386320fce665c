// The harmony reasoning splitter (reasoning format `harmony`, src/chat/reasoning.ts): the first
// text stage for GPT-OSS. It reads the message framing (messages.ts) and routes each message by
// its channel and recipient:
//   analysis (and any message to a built-in tool: python, browser.*)   → reasoning
//   final, commentary without a recipient (a preamble), no channel      → text
//   a message to functions.NAME, whatever its channel                   → passed on as one canonical
//       call message, `<|channel|>commentary to=functions.NAME<|message|>{…}` and its terminator, for the
//       harmony tool-call parser (parser.ts) behind this stage; without tools it stays text.
// The framing itself (headers, `<|end|>`, `<|return|>`) never reaches the text. Two messages of the
// same kind in one output (two analysis messages around a preamble, a preamble and then the final
// answer) are joined with a blank line.

import type { ReasoningPiece, ReasoningSplitter } from '../../reasoning.js';
import { CHANNEL, END, functionName, HarmonyReader, MESSAGE, type HarmonyEvent, type HarmonyHeader } from './messages.js';

type Route = 'reasoning' | 'text' | 'call';

function route(header: HarmonyHeader): Route {
  if (functionName(header) !== null) return 'call';
  if (header.channel === 'analysis' || header.recipient !== null) return 'reasoning';
  return 'text';
}

export class HarmonySplitter implements ReasoningSplitter {
  private readonly reader: HarmonyReader;
  /** The open message's route, or null between messages. */
  private current: Route | null = null;
  /** Whether the open message has written anything yet. */
  private wrote = false;
  /** Per piece type: something was written by an earlier message (a separator goes before the next). */
  private readonly written = { reasoning: false, text: false };
  private out: ReasoningPiece[] = [];

  constructor(opts: { startsInReasoning: boolean }) {
    this.reader = new HarmonyReader({ startsInAnalysis: opts.startsInReasoning });
  }

  /** A `<|return|>` or `<|call|>` ended the output. */
  get ended(): boolean {
    return this.reader.stopped;
  }

  push(text: string): ReasoningPiece[] {
    return this.route(this.reader.push(text));
  }

  finish(): ReasoningPiece[] {
    return this.route(this.reader.finish());
  }

  private route(events: HarmonyEvent[]): ReasoningPiece[] {
    this.out = [];
    for (const e of events) {
      switch (e.type) {
        case 'text':
          this.emit('text', e.text);
          break;
        case 'open':
          this.current = route(e.header);
          this.wrote = false;
          if (this.current === 'call') this.emit('text', `${CHANNEL}commentary to=${e.header.recipient!}${MESSAGE}`);
          break;
        case 'body':
          if (this.current === 'call') this.emit('text', e.text);
          else this.messageText(this.current ?? 'text', e.text);
          break;
        case 'close':
          // The call's own terminator (`<|call|>` ends the output there too); `<|end|>` where it had none.
          if (this.current === 'call') this.emit('text', e.end ?? END);
          else if (this.current !== null && this.wrote) this.written[this.current] = true;
          this.current = null;
          break;
      }
    }
    return this.out;
  }

  /** Body text of a reasoning or text message; the first piece of a later message gets a blank line before it. */
  private messageText(type: 'reasoning' | 'text', t: string): void {
    if (!this.wrote) {
      // Leading newlines of a message are formatting, not content.
      t = t.replace(/^[\r\n]+/, '');
      if (t === '') return;
      if (this.written[type]) t = `\n\n${t}`;
      this.wrote = true;
    }
    this.emit(type, t);
  }

  private emit(type: ReasoningPiece['type'], t: string): void {
    if (t === '') return;
    const last = this.out[this.out.length - 1];
    if (last?.type === type) last.text += t;
    else this.out.push({ type, text: t });
  }
}
