// Hands a thread's spare heap back to the OS after a one-off build (a tokenizer's 150k-entry tables
// and the garbage of making them). A plain full collection frees the objects but V8 keeps the pages:
// the young generation stays at the size the build grew it to (~34 MB) and old space is not
// compacted. V8's low-memory notification (native/mmap.cc; Node has no JavaScript call for it)
// collects, compacts and shrinks the young generation. The young generation grows back only as far
// as later work needs.
import { loadAddon } from './native.js';

/** Collects and compacts the calling thread's heap and returns its free pages (~0.1 s after a tokenizer build). */
export function releaseHeapMemory(): void {
  loadAddon().releaseHeapMemory();
}
