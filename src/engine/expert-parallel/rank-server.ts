// An expert worker's side (rank 1): connects to the head at --master-addr:--master-port (retrying
// with backoff while it is not up), says HELLO, and answers every REQUEST with ops.moe over the
// experts it holds — straight into the REPLY frame — until the connection ends; then connects again
// (the head restarted). A refused handshake (another model, world size or rank) ends it for good.
// It runs on the thread that calls it; ops.moe runs on the kernels' own thread pool.
import { connect, type Socket } from 'node:net';
import type { MoeExperts, Ops } from '../../kernels/ops.js';
import {
  checkHello,
  decodeHello,
  decodeRequest,
  decodeText,
  encodeError,
  encodeHello,
  encodeReject,
  encodeReply,
  FrameReader,
  FrameType,
  fromBf16,
  MAX_FRAME,
  MAX_HANDSHAKE_FRAME,
  PROTOCOL_MAGIC,
  PROTOCOL_VERSION,
  type Hello,
  type ModelIdentity,
} from './protocol.js';

export interface ExpertRankOptions {
  /** The head's rendezvous address. */
  host: string;
  port: number;
  rank: number;
  worldSize: number;
  identity: ModelIdentity;
  /** Per layer, this rank's experts (global ids; the others null); null for a layer without experts. */
  experts: readonly (MoeExperts | null)[];
  ops: Ops;
  /** Log lines. */
  onEvent?: (level: 'info' | 'warn' | 'error', message: string) => void;
  /** Reconnect backoff: first delay and cap, ms. */
  retryMs?: { first: number; max: number };
  /** Tests: override what this rank says in its HELLO (another version, world size…). */
  hello?: Partial<Hello>;
}

export interface ExpertRankStats {
  requests: number;
  rows: number;
  bytesSent: number;
  bytesReceived: number;
  connections: number;
}

export interface ExpertRank {
  /** Resolves when the rank stops for good: close(), or the head refused it (`error` says why). */
  readonly done: Promise<{ error: string | null }>;
  stats(): ExpertRankStats;
  /** Connected to the head, handshake done. */
  readonly connected: boolean;
  close(): void;
}

export function serveExperts(o: ExpertRankOptions): ExpertRank {
  const log = o.onEvent ?? (() => undefined);
  const retry = o.retryMs ?? { first: 100, max: 2000 };
  const own: Hello = {
    magic: PROTOCOL_MAGIC,
    version: PROTOCOL_VERSION,
    rank: o.rank,
    worldSize: o.worldSize,
    identity: o.identity,
    ...o.hello,
  };
  const endpoint = `${o.host}:${o.port}`;
  const stats: ExpertRankStats = { requests: 0, rows: 0, bytesSent: 0, bytesReceived: 0, connections: 0 };
  let stopped = false;
  let connected = false;
  let socket: Socket | null = null;
  let timer: NodeJS.Timeout | null = null;
  let delay = retry.first;
  let lastWaitLog = 0;
  let finish!: (r: { error: string | null }) => void;
  const done = new Promise<{ error: string | null }>((resolve) => (finish = resolve));

  const stop = (error: string | null) => {
    if (stopped) return;
    stopped = true;
    if (timer !== null) clearTimeout(timer);
    socket?.destroy();
    finish({ error });
  };

  const write = (s: Socket, frame: ArrayBuffer) => {
    stats.bytesSent += frame.byteLength;
    s.write(new Uint8Array(frame));
  };

  const schedule = () => {
    if (stopped) return;
    timer = setTimeout(attempt, delay);
    delay = Math.min(retry.max, delay * 2);
  };

  function attempt(): void {
    timer = null;
    if (stopped) return;
    const s = connect({ host: o.host, port: o.port });
    socket = s;
    s.setNoDelay(true);
    s.setKeepAlive(true, 5000);
    const reader = new FrameReader(MAX_HANDSHAKE_FRAME);
    let accepted = false;
    let reason = 'the head closed the connection';
    s.on('connect', () => write(s, encodeHello(own)));
    s.on('data', (chunk: Buffer) => {
      stats.bytesReceived += chunk.length;
      let frames;
      try {
        frames = reader.push(chunk);
      } catch (err) {
        reason = `a bad frame from the head: ${(err as Error).message}`;
        s.destroy();
        return;
      }
      for (const frame of frames) {
        if (stopped) return;
        if (frame.type === FrameType.REJECT) {
          const why = decodeText(frame.payload);
          log('error', `Expert parallel: the head at ${endpoint} refused rank ${o.rank}: ${why}`);
          stop(`the head at ${endpoint} refused rank ${o.rank}: ${why}`);
          return;
        }
        if (!accepted) {
          const mismatch =
            frame.type === FrameType.HELLO
              ? checkHello(own, decodeHello(frame.payload))
              : `the process at ${endpoint} is not an svc head (its first frame is of type ${frame.type})`;
          if (mismatch !== null) {
            write(s, encodeReject(mismatch));
            s.end();
            log('error', `Expert parallel: refusing the head at ${endpoint}: ${mismatch}`);
            stop(`refused the head at ${endpoint}: ${mismatch}`);
            return;
          }
          accepted = true;
          connected = true;
          delay = retry.first;
          stats.connections++;
          reader.maxFrame = MAX_FRAME;
          log('info', `Expert parallel: connected to the head at ${endpoint}; serving expert computations for rank ${o.rank}`);
          continue;
        }
        if (frame.type !== FrameType.REQUEST) {
          reason = `the head sent a frame of type ${frame.type}, which a worker does not take`;
          s.destroy();
          return;
        }
        write(s, answer(frame.payload));
      }
    });
    s.on('error', (err: NodeJS.ErrnoException) => (reason = err.code ?? err.message));
    s.on('close', () => {
      if (socket === s) socket = null;
      if (stopped) return;
      if (accepted) {
        connected = false;
        log('warn', `Expert parallel: lost the head at ${endpoint} (${reason}); reconnecting`);
      } else if (Date.now() - lastWaitLog >= 10_000) {
        lastWaitLog = Date.now();
        log('info', `Expert parallel: waiting for the head at ${endpoint} (${reason}); retrying`);
      }
      schedule();
    });
  }

  /** One REQUEST → its REPLY (or ERROR) frame. */
  function answer(payload: ArrayBuffer): ArrayBuffer {
    let seq = 0;
    try {
      const req = decodeRequest(payload);
      const { layer, m, k, hidden } = req.header;
      seq = req.header.seq;
      stats.requests++;
      stats.rows += m;
      const experts = o.experts[layer];
      if (experts === undefined || experts === null) throw new RangeError(`layer ${layer} has no experts on rank ${o.rank}`);
      let x: Float32Array;
      if (req.rows instanceof Float32Array) x = req.rows;
      else {
        x = new Float32Array(m * hidden);
        fromBf16(req.rows, x);
      }
      const reply = encodeReply(seq, m, hidden);
      o.ops.moe(x, m, experts, req.ids, req.weights, k, reply.out);
      return reply.frame;
    } catch (err) {
      return encodeError(seq, err instanceof Error ? err.message : String(err));
    }
  }

  attempt();
  return {
    done,
    stats: () => ({ ...stats }),
    get connected() {
      return connected && !stopped;
    },
    close: () => stop(null),
  };
}
