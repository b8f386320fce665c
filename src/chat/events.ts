// Protocol-neutral output events: what the output pipeline (detokenizer → reasoning splitter →
// tool-call parser) produces and every protocol encoder consumes.

export type FinishReason = 'stop' | 'length' | 'tool_calls' | 'error';

export type OutputEvent =
  | { type: 'text'; text: string }
  | { type: 'reasoning'; text: string }
  | { type: 'tool_call_start'; index: number; id: string; name: string }
  | { type: 'tool_call_args'; index: number; fragment: string }
  | { type: 'finish'; reason: FinishReason; stopSequence?: string | null };

/** Events a tool-call parser emits (the pipeline adds ids and the finish event). */
export type ParserEvent =
  | { type: 'text'; text: string }
  | { type: 'tool_call_start'; index: number; name: string }
  | { type: 'tool_call_args'; index: number; fragment: string };

/** A streaming tool-call parser for one wire format. */
export interface ToolCallParser {
  /** Feed the next piece of model text; returns what can be decided so far. */
  push(text: string): ParserEvent[];
  /** End of output: flush held-back text; incomplete or invalid calls fall back to text. */
  finish(): ParserEvent[];
}
