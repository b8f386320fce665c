// The few words the head's three threads share about the expert-parallel link, in one
// SharedArrayBuffer: the main thread (HTTP: /health, /metrics, admission) reads them, the link
// thread (owner of the socket) writes them, the engine worker waits on them (Atomics.wait).
//
//   i32[STATE]    the peer: WAITING (never connected), CONNECTED, LOST (was connected), FAILED (the
//                 listener could not start); Atomics.notify'd on every change
//   i32[WAKE]     bumped (and notified) whenever the engine worker may have something to read: a
//                 reply posted to it, or a state change, so one Atomics.wait covers both
//   i32[GEN]      handshakes accepted so far: a request sent under one connection is never answered by the next
//   i64 counters  bytes sent and received on the socket (frames, handshakes included), requests
//                 sent, rows sent, connections accepted
import type { ExpertParallelStatus, PeerState } from '../types.js';

export const CONTROL_BYTES = 128;

export const STATE = 0;
export const WAKE = 1;
export const GEN = 2;

export const WAITING = 0;
export const CONNECTED = 1;
export const LOST = 2;
export const FAILED = 3;

export const BYTES_SENT = 0;
export const BYTES_RECEIVED = 1;
export const REQUESTS = 2;
export const ROWS = 3;
export const CONNECTIONS = 4;

export interface ControlViews {
  readonly words: Int32Array;
  readonly counters: BigInt64Array;
}

export function controlViews(control: SharedArrayBuffer): ControlViews {
  return { words: new Int32Array(control, 0, 16), counters: new BigInt64Array(control, 64, 8) };
}

export function peerStateName(state: number): PeerState {
  return state === CONNECTED ? 'connected' : state === WAITING ? 'waiting' : state === LOST ? 'lost' : 'failed';
}

/** What /health and /metrics report, read from the shared words. */
export function readStatus(control: SharedArrayBuffer, worldSize: number, endpoint: string): ExpertParallelStatus {
  const { words, counters } = controlViews(control);
  const n = (i: number) => Number(Atomics.load(counters, i));
  return {
    worldSize,
    rank: 0,
    endpoint,
    peers: peerStateName(Atomics.load(words, STATE)),
    bytesSent: n(BYTES_SENT),
    bytesReceived: n(BYTES_RECEIVED),
    requests: n(REQUESTS),
    rowsSent: n(ROWS),
    connections: n(CONNECTIONS),
  };
}
