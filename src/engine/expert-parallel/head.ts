// The head's side of expert parallelism, in the engine worker: starts the link thread, waits for
// the worker at start-up, and is the model's RemoteExperts. start() picks the rows routed to at least
// one of the worker's experts, encodes them straight into a REQUEST frame and posts it to the link
// thread (returns at once: the model computes its own experts meanwhile); finish() blocks this
// thread (Atomics.wait on the shared WAKE word, receiveMessageOnPort for the reply) until the reply
// is there, the peer is gone, or the reply timeout passes — an error, never a hang.
import { MessageChannel, receiveMessageOnPort, Worker, type MessagePort } from 'node:worker_threads';
import { expertRange, type RemoteExperts } from '../../model/architectures/expert-placement.js';
import { CONNECTED, CONTROL_BYTES, controlViews, FAILED, GEN, LOST, STATE, WAKE, type ControlViews } from './control.js';
import type { FromLink, LinkThreadData, ToLink } from './link-thread.js';
import {
  decodeReply,
  decodeText,
  encodeRequest,
  FrameType,
  payloadSeq,
  toBf16,
  workerCommand,
  type ModelIdentity,
  type RowsDtype,
} from './protocol.js';

export interface HeadLinkOptions {
  worldSize: number;
  /** Where the head listens for the worker (--master-addr, else --bind; --master-port). */
  host: string;
  port: number;
  identity: ModelIdentity;
  /** Shared with the main thread (control.ts); made here when absent. */
  control?: SharedArrayBuffer;
  /** The main thread's log (LinkEvent messages); null or absent: none. */
  events?: MessagePort | null;
  /** How long a reply may take before the step fails and the connection is dropped. */
  replyTimeoutMs: number;
  /** Start-up wait for the worker (in the "waiting" log line; waitForPeer takes its own). */
  connectTimeoutMs?: number;
  /** How rows travel: f32 (outputs identical to one rank) or bf16 (half the bytes). */
  rowsDtype?: RowsDtype;
  handshakeTimeoutMs?: number;
}

/** The worker cannot be reached: the step fails, the engine keeps serving. */
export class PeerUnavailableError extends Error {}

export class HeadLink {
  readonly control: SharedArrayBuffer;
  readonly endpoint: string;
  private readonly views: ControlViews;
  private readonly thread: Worker;
  private readonly port: MessagePort;
  private seq = 0;
  /** The link thread's fatal error (its listener failed), once read off the port. */
  private fatal: string | null = null;

  constructor(private readonly options: HeadLinkOptions) {
    this.control = options.control ?? new SharedArrayBuffer(CONTROL_BYTES);
    this.views = controlViews(this.control);
    this.endpoint = `${options.host}:${options.port}`;
    const { port1, port2 } = new MessageChannel();
    this.port = port1;
    const events = options.events ?? null;
    const data: LinkThreadData = {
      host: options.host,
      port: options.port,
      worldSize: options.worldSize,
      identity: options.identity,
      control: this.control,
      data: port2,
      events,
      handshakeTimeoutMs: options.handshakeTimeoutMs ?? 10_000,
      connectTimeoutMs: options.connectTimeoutMs ?? 0,
    };
    this.thread = new Worker(new URL('./link-thread.js', import.meta.url), {
      workerData: data,
      transferList: events === null ? [port2] : [port2, events],
    });
    // The link thread lives as long as this thread: it never keeps a process alive by itself.
    this.thread.unref();
  }

  get connected(): boolean {
    return Atomics.load(this.views.words, STATE) === CONNECTED;
  }

  /** Blocks until the worker has connected (or throws: the listener failed, or `timeoutMs` passed). */
  waitForPeer(timeoutMs: number): void {
    const { words } = this.views;
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const state = Atomics.load(words, STATE);
      if (state === CONNECTED) return;
      if (state === FAILED) throw new Error(this.fatalMessage());
      const left = deadline - Date.now();
      if (left <= 0)
        throw new Error(
          `expert parallelism: rank 1 of ${this.options.worldSize} did not connect to ${this.endpoint} within ${Math.round(timeoutMs / 1000)} s ` +
            `(start it with \`${workerCommand(this.options.worldSize, this.options.host, this.options.port)}\`; ` +
            'SVC_EP_CONNECT_TIMEOUT_S sets the wait)',
        );
      Atomics.wait(words, STATE, state, left);
    }
  }

  /** The RemoteExperts of a model with `numExperts` experts per MoE layer and rows of `hidden`. */
  remoteExperts(numExperts: number, hidden: number): RemoteExperts {
    return new LinkedRemoteExperts(this, numExperts, hidden, this.options.worldSize, this.options.rowsDtype ?? 'f32');
  }

  /** Posts an encoded REQUEST; returns its seq and the connection generation it went out under. */
  send(frame: ArrayBuffer, seq: number, rows: number): number {
    const gen = Atomics.load(this.views.words, GEN);
    this.port.postMessage({ type: 'request', frame, seq, rows } satisfies ToLink, [frame]);
    return gen;
  }

  nextSeq(): number {
    this.seq = (this.seq + 1) >>> 0;
    return this.seq;
  }

  /** Throws PeerUnavailableError unless the worker is connected. */
  checkConnected(): void {
    const state = Atomics.load(this.views.words, STATE);
    if (state === CONNECTED) return;
    const why =
      state === LOST
        ? `was lost; waiting for it to reconnect to ${this.endpoint}`
        : state === FAILED
          ? this.fatalMessage()
          : `has not connected to ${this.endpoint} yet`;
    throw new PeerUnavailableError(`expert-parallel rank 1 ${why}`);
  }

  /**
   * Blocks until the REPLY (or ERROR) to `seq` arrives, sent under connection `gen`. Throws when the
   * peer is gone, when it reports an error, or after `replyTimeoutMs` (the connection is then dropped).
   */
  awaitReply(seq: number, gen: number, layer: number): ArrayBuffer {
    const { words } = this.views;
    const timeout = this.options.replyTimeoutMs;
    const deadline = Date.now() + timeout;
    for (;;) {
      // Read WAKE before draining the port: a reply posted after the drain has bumped it, so the wait returns at once.
      const wake = Atomics.load(words, WAKE);
      for (let r = receiveMessageOnPort(this.port); r !== undefined; r = receiveMessageOnPort(this.port)) {
        const msg = r.message as FromLink;
        if (msg.type === 'fatal') this.fatal = msg.message;
        else if (msg.type === 'unsent' && msg.seq === seq) throw new PeerUnavailableError(`expert-parallel ${msg.message}`);
        else if (msg.type === 'frame' && payloadSeq(msg.payload) === seq) {
          if (msg.frameType === FrameType.REPLY) return msg.payload;
          throw new Error(`expert-parallel rank 1 could not compute layer ${layer}: ${decodeText(msg.payload, 4)}`);
        }
        // Anything else answers a request this thread has given up on.
      }
      if (Atomics.load(words, STATE) !== CONNECTED || Atomics.load(words, GEN) !== gen)
        throw new PeerUnavailableError(
          `expert-parallel rank 1 was lost while computing layer ${layer}; waiting for it to reconnect to ${this.endpoint}`,
        );
      const left = deadline - Date.now();
      if (left <= 0) {
        this.port.postMessage({ type: 'drop', reason: `no reply for layer ${layer} within ${timeout} ms` } satisfies ToLink);
        throw new PeerUnavailableError(
          `expert-parallel rank 1 did not answer layer ${layer} within ${timeout} ms (SVC_EP_REPLY_TIMEOUT_S); the connection was dropped`,
        );
      }
      Atomics.wait(words, WAKE, wake, left);
    }
  }

  /** Stops the link thread (closing the listener and the connection). */
  async close(): Promise<void> {
    this.port.close();
    await this.thread.terminate();
  }

  private fatalMessage(): string {
    for (let r = receiveMessageOnPort(this.port); r !== undefined; r = receiveMessageOnPort(this.port)) {
      const msg = r.message as FromLink;
      if (msg.type === 'fatal') this.fatal = msg.message;
    }
    return `expert parallelism: ${this.fatal ?? 'the link failed'}`;
  }
}

/** One MoE layer's request in flight: its seq and connection, and which rows of the step it carried. */
interface Pending {
  seq: number;
  gen: number;
  layer: number;
  rows: Int32Array;
}

class LinkedRemoteExperts implements RemoteExperts {
  /** The experts the other rank holds: [first, end). */
  private readonly first: number;
  private readonly end: number;
  private pending: Pending | null = null;
  /** Scratch: rows of the step that need the peer (grown, never shrunk). */
  private picked = new Int32Array(64);

  constructor(
    private readonly link: HeadLink,
    numExperts: number,
    private readonly hidden: number,
    worldSize: number,
    private readonly dtype: RowsDtype,
  ) {
    if (worldSize !== 2) throw new RangeError(`expert parallelism runs on 2 ranks, not ${worldSize}`);
    [this.first, this.end] = expertRange(numExperts, { rank: 1, worldSize });
  }

  start(layer: number, x: Float32Array, n: number, ids: Int32Array, weights: Float32Array, k: number): void {
    // A forward that failed between start and finish left one behind: its reply, if any, is dropped by seq.
    this.pending = null;
    this.link.checkConnected();
    const { hidden, first, end } = this;
    if (this.picked.length < n) this.picked = new Int32Array(Math.max(n, this.picked.length * 2));
    let m = 0;
    for (let i = 0; i < n; i++) {
      for (let j = 0; j < k; j++) {
        const e = ids[i * k + j];
        if (e >= first && e < end) {
          this.picked[m++] = i;
          break;
        }
      }
    }
    if (m === 0) return;
    const seq = this.link.nextSeq();
    const req = encodeRequest({ seq, layer, dtype: this.dtype, m, k, hidden });
    for (let r = 0; r < m; r++) {
      const i = this.picked[r];
      const row = x.subarray(i * hidden, (i + 1) * hidden);
      if (req.rows instanceof Float32Array) req.rows.set(row, r * hidden);
      else toBf16(row, req.rows.subarray(r * hidden, (r + 1) * hidden));
      req.ids.set(ids.subarray(i * k, (i + 1) * k), r * k);
      req.weights.set(weights.subarray(i * k, (i + 1) * k), r * k);
    }
    const rows = this.picked.slice(0, m);
    const gen = this.link.send(req.frame, seq, m);
    this.pending = { seq, gen, layer, rows };
  }

  finish(out: Float32Array, _n: number): void {
    const p = this.pending;
    this.pending = null;
    if (p === null) return;
    const reply = decodeReply(this.link.awaitReply(p.seq, p.gen, p.layer));
    const { hidden } = this;
    if (reply.m !== p.rows.length || reply.hidden !== hidden)
      throw new Error(`expert-parallel rank 1 answered layer ${p.layer} with ${reply.m}×${reply.hidden}, not ${p.rows.length}×${hidden}`);
    const sum = reply.out;
    for (let r = 0; r < p.rows.length; r++) {
      const base = p.rows[r] * hidden;
      const from = r * hidden;
      for (let h = 0; h < hidden; h++) out[base + h] += sum[from + h];
    }
  }
}
