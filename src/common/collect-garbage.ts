// A full garbage collection on demand. V8 keeps the heap pages it grew into during a one-off build
// (a tokenizer's 150k-entry tables and the garbage of making them) until memory runs short; a
// collection right after such a build hands them back: ~25–35 MB per thread that builds a
// tokenizer (the main thread and each prompt worker), measured on a 151k-token vocabulary.
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';

let collect: (() => void) | null = null;

/** Runs a full, compacting collection of the calling thread's heap (~0.1 s after a tokenizer build). */
export function collectGarbage(): void {
  if (collect === null) {
    // Node's public way to reach V8's gc() without the --expose-gc command-line flag: a context made
    // after the flag is set has it (the flag is process-wide, so later contexts and workers do too).
    setFlagsFromString('--expose-gc');
    collect = runInNewContext('gc') as () => void;
  }
  collect();
}
