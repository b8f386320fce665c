// Context auto-compaction (--auto-compact), the pure part: a conversation cut into segments that
// stay whole, which of them stay verbatim, the message list that results (one note message in
// place of the others: the model's summary, or a line saying what was left out), and the
// middle-elision of long tool outputs. No model and no tokenizer here: src/chat/auto-compact.ts
// measures and decides, src/chat/compaction-summary.ts has the model write the summary.
import { addText, mapText, type ChatMessage } from './request.js';

/**
 * Messages that stay or go together: an assistant turn that calls tools with the tool results
 * that follow it (a result without its call, or a call without its result, is a conversation
 * templates refuse or models misread), or any other message alone.
 */
export interface Segment {
  messages: ChatMessage[];
  /** Never summarized or dropped: system and developer messages, and the latest user message (the request being answered). */
  pinned: boolean;
}

/** The conversation as segments, in order; every message is in exactly one. */
export function segmentConversation(messages: readonly ChatMessage[]): Segment[] {
  const segments: Segment[] = [];
  for (let i = 0; i < messages.length;) {
    const first = messages[i++]!;
    const group = [first];
    if (first.role === 'assistant' && (first.toolCalls?.length ?? 0) > 0) {
      while (i < messages.length && messages[i]!.role === 'tool') group.push(messages[i++]!);
    }
    segments.push({ messages: group, pinned: first.role === 'system' || first.role === 'developer' });
  }
  const anchor = latestUser(segments);
  if (anchor >= 0) segments[anchor]!.pinned = true;
  return segments;
}

/** Index of the segment holding the latest user message; -1 when there is none. */
export function latestUser(segments: readonly Segment[]): number {
  for (let i = segments.length - 1; i >= 0; i--) if (segments[i]!.messages[0]!.role === 'user') return i;
  return -1;
}

/** How many segments may be compacted away (those not pinned). */
export function compactableCount(segments: readonly Segment[]): number {
  return segments.filter((s) => !s.pinned).length;
}

/**
 * The fewest unpinned segments kept: the newest one when it is not pinned, i.e. the tool exchange
 * (or assistant turn) after the latest user message, which the model answers next.
 */
export function minimumRecent(segments: readonly Segment[]): number {
  const last = segments.at(-1);
  return last !== undefined && !last.pinned ? 1 : 0;
}

/** Which segments stay verbatim: every pinned one, and the newest `recent` of the others. */
export function keepRecent(segments: readonly Segment[], recent: number): boolean[] {
  const keep = segments.map((s) => s.pinned);
  let left = recent;
  for (let i = segments.length - 1; i >= 0 && left > 0; i--) {
    if (!segments[i]!.pinned) {
      keep[i] = true;
      left--;
    }
  }
  return keep;
}

/** The messages of the segments not kept, in order. */
export function removedMessages(segments: readonly Segment[], keep: readonly boolean[]): ChatMessage[] {
  return segments.flatMap((s, i) => (keep[i] ? [] : s.messages));
}

/** The text of the note that stands for the removed messages. */
export function compactionNote(summary: string | null, summarized: number, omitted: number): string {
  const parts: string[] = [];
  if (summary !== null && summarized > 0) parts.push(`${summarized} earlier messages were replaced by the summary below`);
  if (omitted > 0) parts.push(`${omitted} ${parts.length > 0 ? 'more' : 'earlier messages'} were left out`);
  const head = `[Context compacted: ${parts.join('; ')}.]`;
  return summary !== null && summarized > 0 ? `${head}\n${summary}` : head;
}

/**
 * The conversation with the segments not kept replaced by one user message holding `note` (none
 * when every segment is kept). The note stands where the first removed segment after the latest
 * user message was, so the request reads first and then what was done for it; else where the
 * first removed segment was. Next to a user message it is merged into it (blank line between):
 * several templates (Mistral's, Gemma's) refuse two user turns in a row.
 */
export function compactConversation(segments: readonly Segment[], keep: readonly boolean[], note: string): ChatMessage[] {
  const anchor = latestUser(segments);
  let at = segments.findIndex((_, i) => !keep[i] && i > anchor);
  if (at < 0) at = keep.indexOf(false);
  const out: ChatMessage[] = [];
  let noteAt = -1;
  segments.forEach((s, i) => {
    if (i === at) {
      noteAt = out.length;
      out.push({ role: 'user', content: note });
    }
    if (keep[i]) out.push(...s.messages);
  });
  if (noteAt < 0) return out;
  const before = out[noteAt - 1];
  const after = out[noteAt + 1];
  if (before?.role === 'user') {
    out[noteAt - 1] = addText(before, note, 'after', '\n\n');
    out.splice(noteAt, 1);
  } else if (after?.role === 'user') {
    out[noteAt + 1] = addText(after, note, 'before', '\n\n');
    out.splice(noteAt, 1);
  }
  return out;
}

/** The marker left where the middle of a text was cut out. */
export function elisionMarker(chars: number): string {
  return `[… ${chars} characters elided …]`;
}

/**
 * `text` cut to about `maxChars` characters by removing its middle (the start of a tool output
 * says what it is, its end how it finished), with a marker saying how much went. Never splits a
 * surrogate pair.
 */
export function elideMiddle(text: string, maxChars: number): string {
  if (text.length <= maxChars) return text;
  let head = Math.ceil(maxChars / 2);
  let tail = maxChars - head;
  if (head > 0 && isHighSurrogate(text.charCodeAt(head - 1))) head--;
  if (tail > 0 && isLowSurrogate(text.charCodeAt(text.length - tail))) tail--;
  const cut = text.length - head - tail;
  return `${text.slice(0, head)}\n${elisionMarker(cut)}\n${text.slice(text.length - tail)}`;
}

const isHighSurrogate = (c: number): boolean => c >= 0xd800 && c <= 0xdbff;
const isLowSurrogate = (c: number): boolean => c >= 0xdc00 && c <= 0xdfff;

/**
 * The largest cap such that cutting every length above it down to it removes at least `cut`
 * characters in all (the longest texts are cut first, to a common length); Infinity when nothing
 * needs cutting, 0 when even cutting everything is not enough.
 */
export function capToCut(lengths: readonly number[], cut: number): number {
  if (cut <= 0) return Infinity;
  const sorted = [...lengths].sort((a, b) => b - a);
  let sum = 0;
  for (let k = 1; k <= sorted.length; k++) {
    sum += sorted[k - 1]!;
    const cap = Math.floor((sum - cut) / k);
    if (cap >= (sorted[k] ?? 0)) return Math.max(0, cap);
  }
  return 0;
}

/** Lengths of the tool outputs of `messages` (what truncateToolOutputs may cut). */
export function toolOutputLengths(messages: readonly ChatMessage[]): number[] {
  return messages.filter((m) => m.role === 'tool').map((m) => (m.content ?? '').length);
}

/** The messages with every tool output longer than `maxChars` middle-elided to it, and how many were. */
export function truncateToolOutputs(messages: readonly ChatMessage[], maxChars: number): { messages: ChatMessage[]; truncated: number } {
  let truncated = 0;
  const out = messages.map((m) => {
    if (m.role !== 'tool' || m.content === null || m.content.length <= maxChars) return m;
    truncated++;
    // A tool output with images (parts) has each of its texts elided to the cap.
    return mapText(m, (text) => (text.length <= maxChars ? text : elideMiddle(text, maxChars)));
  });
  return { messages: out, truncated };
}

/**
 * The largest k in [lo, hi] for which `fits(k)` holds, where fits holds for every k up to some
 * point and for none after it (keeping more turns only makes a prompt longer); lo - 1 when none.
 */
export async function largestFitting(lo: number, hi: number, fits: (k: number) => Promise<boolean>): Promise<number> {
  let best = lo - 1;
  while (lo <= hi) {
    const mid = Math.floor((lo + hi) / 2);
    if (await fits(mid)) {
      best = mid;
      lo = mid + 1;
    } else hi = mid - 1;
  }
  return best;
}
