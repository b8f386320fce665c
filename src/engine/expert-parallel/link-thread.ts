// The head's link thread: owns the TCP listener on --master-port and the connection of the expert
// worker (rank 1). It exists so that the engine worker, whose forward pass runs synchronously, can
// block (Atomics.wait) on a reply while this thread's event loop keeps the socket moving.
//
// From the engine worker (its `data` port): REQUEST frames, already encoded, written as they come;
// 'drop' (a reply timed out: the connection is cut so the worker starts clean). To it: every REPLY and
// ERROR frame, posted and then signalled through the shared WAKE word (control.ts). To the main
// thread (its `events` port): log lines with the peer state. The state and byte counters are in the
// shared control words.
import { createServer, type Server, type Socket } from 'node:net';
import { workerData, type MessagePort } from 'node:worker_threads';
import {
  checkHello,
  decodeHello,
  decodeText,
  encodeHello,
  encodeReject,
  FrameReader,
  FrameType,
  MAX_FRAME,
  MAX_HANDSHAKE_FRAME,
  PROTOCOL_MAGIC,
  PROTOCOL_VERSION,
  workerCommand,
  type Hello,
  type ModelIdentity,
} from './protocol.js';
import {
  BYTES_RECEIVED,
  BYTES_SENT,
  CONNECTED,
  CONNECTIONS,
  controlViews,
  FAILED,
  GEN,
  LOST,
  peerStateName,
  REQUESTS,
  ROWS,
  STATE,
  WAKE,
} from './control.js';

export interface LinkThreadData {
  host: string;
  port: number;
  worldSize: number;
  identity: ModelIdentity;
  control: SharedArrayBuffer;
  /** The engine worker's end is the other side of this port. */
  data: MessagePort;
  /** The main thread's log; null: no events. */
  events: MessagePort | null;
  /** How long a connection has to send its HELLO. */
  handshakeTimeoutMs: number;
  /** How long the engine waits for the first connection (for the log line only). */
  connectTimeoutMs: number;
}

/** engine worker → link thread */
export type ToLink = { type: 'request'; frame: ArrayBuffer; seq: number; rows: number } | { type: 'drop'; reason: string };

/** link thread → engine worker */
export type FromLink =
  | { type: 'frame'; frameType: number; payload: ArrayBuffer }
  /** A request that could not be written: no peer. */
  | { type: 'unsent'; seq: number; message: string }
  /** The listener failed: the link will never connect. */
  | { type: 'fatal'; message: string };

/** link thread → main thread */
export interface LinkEvent {
  level: 'info' | 'warn' | 'error';
  message: string;
  peers: ReturnType<typeof peerStateName>;
}

const data = workerData as LinkThreadData;
const { words, counters } = controlViews(data.control);
const own: Hello = { magic: PROTOCOL_MAGIC, version: PROTOCOL_VERSION, rank: 0, worldSize: data.worldSize, identity: data.identity };
const endpoint = `${data.host}:${data.port}`;

interface Peer {
  socket: Socket;
  address: string;
  rank: number;
  /** Cuts the connection, saying why in the "lost" line. */
  drop(reason: string): void;
}
let peer: Peer | null = null;

function event(level: LinkEvent['level'], message: string): void {
  data.events?.postMessage({ level, message, peers: peerStateName(Atomics.load(words, STATE)) } satisfies LinkEvent);
}

/** Something for the engine worker: wake it, whatever it waits for. */
function wake(): void {
  Atomics.add(words, WAKE, 1);
  Atomics.notify(words, WAKE);
}

function setState(state: number): void {
  Atomics.store(words, STATE, state);
  Atomics.notify(words, STATE);
  wake();
}

function toEngine(msg: FromLink, transfer: ArrayBuffer[] = []): void {
  data.data.postMessage(msg, transfer);
  wake();
}

function write(socket: Socket, frame: ArrayBuffer): void {
  Atomics.add(counters, BYTES_SENT, BigInt(frame.byteLength));
  socket.write(new Uint8Array(frame));
}

function refuse(socket: Socket, address: string, reason: string): void {
  event('warn', `Expert parallel: refused the connection from ${address}: ${reason}`);
  write(socket, encodeReject(reason));
  socket.end();
  setTimeout(() => socket.destroy(), 1000).unref();
}

function onConnection(socket: Socket): void {
  const address = `${socket.remoteAddress}:${socket.remotePort}`;
  socket.setNoDelay(true);
  socket.setKeepAlive(true, 5000);
  const reader = new FrameReader(MAX_HANDSHAKE_FRAME);
  let accepted = false;
  let closeReason = 'the connection closed';
  const timer = setTimeout(() => refuse(socket, address, `no handshake within ${data.handshakeTimeoutMs} ms`), data.handshakeTimeoutMs);
  write(socket, encodeHello(own));

  socket.on('data', (chunk: Buffer) => {
    Atomics.add(counters, BYTES_RECEIVED, BigInt(chunk.length));
    let frames;
    try {
      frames = reader.push(chunk);
    } catch (err) {
      if (accepted) {
        closeReason = `a bad frame from rank 1: ${(err as Error).message}`;
        socket.destroy();
      } else {
        clearTimeout(timer);
        refuse(socket, address, `the peer is not an svc expert-parallel rank (${(err as Error).message})`);
      }
      return;
    }
    for (const frame of frames) {
      if (!accepted) {
        clearTimeout(timer);
        if (frame.type === FrameType.REJECT) {
          event('error', `Expert parallel: the rank at ${address} refused this head: ${decodeText(frame.payload)}`);
          socket.destroy();
          return;
        }
        if (frame.type !== FrameType.HELLO) {
          refuse(socket, address, `the peer is not an svc expert-parallel rank (its first frame is of type ${frame.type}, not HELLO)`);
          return;
        }
        const hello = decodeHello(frame.payload);
        const mismatch = checkHello(own, hello);
        if (mismatch !== null) {
          refuse(socket, address, mismatch);
          return;
        }
        if (peer !== null) {
          refuse(socket, address, `rank ${hello.rank} is already connected (from ${peer.address}); stop the other worker first`);
          return;
        }
        accepted = true;
        reader.maxFrame = MAX_FRAME;
        peer = {
          socket,
          address,
          rank: hello.rank,
          drop: (reason) => {
            closeReason = reason;
            socket.destroy();
          },
        };
        Atomics.add(counters, CONNECTIONS, 1n);
        Atomics.add(words, GEN, 1);
        setState(CONNECTED);
        event('info', `Expert parallel: rank ${hello.rank} connected from ${address} (${hello.identity.summary}); its experts are served`);
        continue;
      }
      if (frame.type === FrameType.REPLY || frame.type === FrameType.ERROR) {
        toEngine({ type: 'frame', frameType: frame.type, payload: frame.payload }, [frame.payload]);
      } else if (frame.type === FrameType.REJECT) {
        closeReason = `rank 1 ended the connection: ${decodeText(frame.payload)}`;
        socket.destroy();
        return;
      } else {
        closeReason = `rank 1 sent a frame of type ${frame.type}, which the head does not take`;
        socket.destroy();
        return;
      }
    }
  });
  socket.on('error', (err) => (closeReason = `socket error: ${err.message}`));
  socket.on('close', () => {
    clearTimeout(timer);
    if (peer?.socket !== socket) return;
    peer = null;
    setState(LOST);
    event(
      'warn',
      `Expert parallel: lost rank 1 (${address}): ${closeReason}; requests fail and new ones get 503 until it reconnects to ${endpoint}`,
    );
  });
}

const server: Server = createServer(onConnection);
server.on('error', (err: NodeJS.ErrnoException) => {
  const message = `cannot listen on ${endpoint} for the expert-parallel worker (--master-addr/--master-port): ${err.code ?? err.message}`;
  toEngine({ type: 'fatal', message });
  setState(FAILED);
  event('error', `Expert parallel: ${message}`);
});
server.listen(data.port, data.host, () => {
  const s = Math.round(data.connectTimeoutMs / 1000);
  event(
    'info',
    `Expert parallel: waiting for rank 1 of ${data.worldSize} on ${endpoint}${s > 0 ? ` (up to ${s} s)` : ''}; start it with ` +
      `\`${workerCommand(data.worldSize, data.host, data.port)}\``,
  );
});

data.data.on('message', (msg: ToLink) => {
  if (msg.type === 'request') {
    if (peer === null) {
      const lost = Atomics.load(words, STATE) === LOST;
      toEngine({
        type: 'unsent',
        seq: msg.seq,
        message: lost ? `rank 1 was lost; waiting for it to reconnect to ${endpoint}` : 'rank 1 is not connected',
      });
      return;
    }
    Atomics.add(counters, REQUESTS, 1n);
    Atomics.add(counters, ROWS, BigInt(msg.rows));
    write(peer.socket, msg.frame);
  } else if (msg.type === 'drop' && peer !== null) {
    peer.drop(`the head dropped the connection: ${msg.reason}`);
  }
});
