// Prompt worker pool: chat-template rendering and tokenization run in worker threads, never on the
// HTTP event loop, so /health, /metrics and other clients are answered within milliseconds while a
// huge prompt is processed. Each worker rebuilds the model's tokenizer from its definition (no file
// is read) and holds the chat template; the routes await the result.
//
// - PROMPT_WORKERS threads: two, so one huge prompt never queues every other request behind it;
//   more buy little, since the engine's kernels already use every core. A task goes to the live
//   worker with the fewest tasks in hand. During start-up only the first runs (see the constructor).
// - Errors thrown in a worker (a 400 from raise_exception, an empty or too long prompt) come back
//   as the same ApiError (status, message, code, param); anything else as an Error (a 500).
// - Memory returns: a worker that handled an input of RECYCLE_CHARS or more is retired once its
//   tasks are done (terminated: its whole heap goes back) and a fresh one takes its place.
import { Worker } from 'node:worker_threads';
import { ApiError } from '../common/api-error.js';
import type { ChatPrompt, ChatTemplateInput } from './prompt.js';
import type { TokenizeInput } from './tokenize.js';

/** Worker threads per model (see the top of this file). */
export const PROMPT_WORKERS = 2;

/** A worker that saw an input this long (UTF-16 units; 1 Mi) is recycled afterwards. */
export const RECYCLE_CHARS = 1 << 20;

export interface PromptWorkerData {
  /** The tokenizer's packed definition (Tokenizer.packed: every worker reads the same bytes). */
  tokenizer: SharedArrayBuffer;
  chatTemplate: string | null;
}

/** A task without its id. `tokenize` / `detokenize` serve POST /tokenize and /detokenize (src/chat/tokenize.ts). */
export type PromptJob =
  | { kind: 'chat'; input: ChatTemplateInput }
  | { kind: 'text'; text: string; param: string }
  | { kind: 'tokenize'; input: TokenizeInput }
  | { kind: 'detokenize'; ids: number[] };

/** A job as posted: with its id and the context length that bounds it (the engine's, known once it has loaded). */
export type PromptTask = PromptJob & { id: number; maxSeqLen: number };

export type PromptReply =
  | { id: number; ok: true; tokens: Uint32Array; text: string | null; chars: number }
  | {
      id: number;
      ok: false;
      message: string;
      /** Set when the worker threw an ApiError. */
      api: { status: number; code: string | null; param: string | null } | null;
      chars: number;
    };

interface Pending {
  resolve(reply: PromptReply & { ok: true }): void;
  reject(err: Error): void;
}

class PromptThread {
  readonly worker: Worker;
  readonly pending = new Map<number, Pending>();
  /** Takes no new task; terminated once its pending tasks are done. */
  retiring = false;
  /** Settles once the worker has built its tokenizer (or is gone). */
  readonly ready: Promise<void>;

  constructor(data: PromptWorkerData, onReply: (t: PromptThread, r: PromptReply) => void, onGone: (t: PromptThread, err: Error) => void) {
    this.worker = new Worker(new URL('./prompt-worker.js', import.meta.url), { workerData: data });
    // Idle prompt workers never keep the process alive.
    this.worker.unref();
    let markReady!: () => void;
    this.ready = new Promise((resolve) => (markReady = resolve));
    this.worker.once('exit', () => markReady());
    this.worker.on('message', (r: PromptReply | { ready: true }) => ('ready' in r ? markReady() : onReply(this, r)));
    this.worker.on('error', (err) => onGone(this, err));
    this.worker.on('exit', (code) => onGone(this, new Error(`prompt worker exited (code ${code})`)));
  }
}

export class PromptWorkers {
  private readonly data: PromptWorkerData;
  private maxSeqLen: number | null;
  private threads: PromptThread[] = [];
  private nextId = 1;
  private closed = false;
  private readonly firstReady: Promise<void>;
  private readonly size: number;
  /** Workers recycled so far (tests look at it). */
  recycled = 0;

  /**
   * The workers build their tokenizers from `tokenizer` (a packed definition: the main thread need not have
   * built its own yet). While `maxSeqLen` is null (start-up: the engine is still loading the weights and
   * has not settled the context length) only one worker starts, since tokenizer builds are CPU-bound
   * and would compete with the load; setMaxSeqLen starts the rest.
   */
  constructor(tokenizer: SharedArrayBuffer, chatTemplate: string | null, maxSeqLen: number | null, size = PROMPT_WORKERS) {
    this.data = { tokenizer, chatTemplate };
    this.size = size;
    this.maxSeqLen = null;
    const first = this.spawn();
    this.threads.push(first);
    this.firstReady = first.ready;
    if (maxSeqLen !== null) this.setMaxSeqLen(maxSeqLen);
  }

  /**
   * Renders and encodes a chat prompt in a worker. `limit` replaces the context length as its bound
   * (auto-compaction counts prompts longer than the context: src/chat/auto-compact.ts).
   */
  async chat(input: ChatTemplateInput, limit?: number): Promise<ChatPrompt> {
    const r = await this.run({ kind: 'chat', input }, limit);
    return { tokens: Array.from(r.tokens), text: r.text! };
  }

  /** Encodes a plain-completions text prompt in a worker (BOS … as for raw text). */
  async text(text: string, param: string): Promise<number[]> {
    return Array.from((await this.run({ kind: 'text', text, param })).tokens);
  }

  /** The context length that bounds every prompt from now on; the first call starts the other workers. */
  setMaxSeqLen(maxSeqLen: number): void {
    const first = this.maxSeqLen === null;
    this.maxSeqLen = maxSeqLen;
    if (first) while (this.threads.length < this.size && !this.closed) this.threads.push(this.spawn());
  }

  /** Settles once the first worker has built its tokenizer (so the first requests do not wait for it). */
  async ready(): Promise<void> {
    await this.firstReady;
  }

  /** Tokenizes a text or a rendered conversation in a worker (src/chat/tokenize.ts). */
  async tokenize(input: TokenizeInput): Promise<number[]> {
    return Array.from((await this.run({ kind: 'tokenize', input })).tokens);
  }

  /** Decodes token ids in a worker, special tokens included. */
  async detokenize(ids: number[]): Promise<string> {
    return (await this.run({ kind: 'detokenize', ids })).text!;
  }

  /** Ends every worker; tasks in hand fail. */
  async close(): Promise<void> {
    this.closed = true;
    const threads = this.threads;
    this.threads = [];
    await Promise.all(threads.map((t) => t.worker.terminate()));
  }

  private spawn(): PromptThread {
    return new PromptThread(
      this.data,
      (t, r) => this.onReply(t, r),
      (t, err) => this.onGone(t, err),
    );
  }

  private run(task: PromptJob, limit?: number): Promise<PromptReply & { ok: true }> {
    if (this.closed) return Promise.reject(new Error('the prompt workers are closed'));
    if (this.maxSeqLen === null) return Promise.reject(new Error('the prompt workers have no context length yet'));
    const maxSeqLen = limit ?? this.maxSeqLen;
    const live = this.threads.filter((t) => !t.retiring);
    const thread = live.reduce((a, b) => (b.pending.size < a.pending.size ? b : a));
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      thread.pending.set(id, { resolve, reject });
      thread.worker.postMessage({ id, maxSeqLen, ...task } as PromptTask);
    });
  }

  private onReply(thread: PromptThread, r: PromptReply): void {
    const p = thread.pending.get(r.id);
    thread.pending.delete(r.id);
    if (r.chars >= RECYCLE_CHARS && !thread.retiring) this.retire(thread);
    if (thread.retiring && thread.pending.size === 0) void thread.worker.terminate();
    if (!p) return;
    if (r.ok) p.resolve(r);
    else p.reject(r.api ? new ApiError(r.api.status, r.message, { code: r.api.code, param: r.api.param }) : new Error(r.message));
  }

  /** No new tasks for this worker; a fresh one takes its place now. */
  private retire(thread: PromptThread): void {
    thread.retiring = true;
    this.recycled++;
    const i = this.threads.indexOf(thread);
    if (i >= 0 && !this.closed) this.threads[i] = this.spawn();
  }

  /** A worker exited (recycled, crashed or closed): its tasks in hand fail; a crashed one is replaced. */
  private onGone(thread: PromptThread, err: Error): void {
    for (const p of thread.pending.values()) p.reject(err);
    thread.pending.clear();
    const i = this.threads.indexOf(thread);
    if (i >= 0 && !this.closed) this.threads[i] = this.spawn();
  }
}
