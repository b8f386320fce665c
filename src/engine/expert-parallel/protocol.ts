// The wire protocol between the head (rank 0) and an expert worker (rank 1) of two-rank expert
// parallelism, over one TCP connection the worker opens to --master-addr:--master-port.
//
// Frames: [u32 payload length][u8 type][3 bytes zero] then the payload; little-endian throughout.
// Every array in a payload starts at a multiple of 4 bytes from the frame's start, so a frame read
// into its own ArrayBuffer is viewed in place (no copy after the socket's).
//
//   HELLO    both ways, first:  u32 magic 'SVEP', u16 protocol version, u8 rank, u8 world size,
//                               u32 n + n bytes of JSON {hash, summary} (the model identity)
//   REJECT   either way:        UTF-8 reason; the sender closes the connection after it
//   REQUEST  head → worker:     per MoE layer and step, the rows needing the worker's experts:
//                               u32 seq, u16 layer, u8 rows dtype (0 f32, 1 bf16), u8 0, u32 m, u32 k,
//                               u32 hidden, u32 0, rows [m, hidden] (padded to 4 bytes),
//                               ids i32 [m, k], weights f32 [m, k] (all k choices of each row:
//                               the worker's experts take theirs, the others contribute nothing)
//   REPLY    worker → head:     u32 seq, u32 m, u32 hidden, u32 0, f32 [m, hidden]: the weighted sum of
//                               the worker's experts for each row, added into the head's output
//   ERROR    worker → head:     u32 seq, UTF-8 message: the worker could not compute that request
//
// Each side sends HELLO on connect and checks the other's (checkHello): a different magic, protocol
// version, world size, rank or model is refused with REJECT naming the difference, on both sides.

/** 'SVEP' as the first four payload bytes of a HELLO. */
export const PROTOCOL_MAGIC = 0x50455653;
export const PROTOCOL_VERSION = 1;
export const FRAME_HEADER_BYTES = 8;
/** Largest frame accepted before the handshake is done (a stranger's bytes are not buffered). */
export const MAX_HANDSHAKE_FRAME = 64 * 1024;
/** Largest frame accepted after it. */
export const MAX_FRAME = 2 ** 31;

export const FrameType = { HELLO: 1, REJECT: 2, REQUEST: 3, REPLY: 4, ERROR: 5 } as const;
export type FrameType = (typeof FrameType)[keyof typeof FrameType];

export type RowsDtype = 'f32' | 'bf16';

/** What identifies the model each rank loaded: both must hold the same checkpoint. */
export interface ModelIdentity {
  /** sha256 of the normalized config and every tensor's name, dtype and shape. */
  readonly hash: string;
  /** For people: architecture, name, layers, experts. */
  readonly summary: string;
}

export interface Hello {
  readonly magic: number;
  readonly version: number;
  readonly rank: number;
  readonly worldSize: number;
  readonly identity: ModelIdentity;
}

/** A frame as read: its type and its payload in an ArrayBuffer of its own. */
export interface Frame {
  readonly type: number;
  readonly payload: ArrayBuffer;
}

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A whole frame (header + `payloadBytes` zeroed bytes) and a DataView over its payload. */
function allocFrame(type: FrameType, payloadBytes: number): { buffer: ArrayBuffer; view: DataView } {
  const buffer = new ArrayBuffer(FRAME_HEADER_BYTES + payloadBytes);
  const header = new DataView(buffer);
  header.setUint32(0, payloadBytes, true);
  header.setUint8(4, type);
  return { buffer, view: new DataView(buffer, FRAME_HEADER_BYTES) };
}

export function encodeHello(hello: Omit<Hello, 'magic' | 'version'> & { magic?: number; version?: number }): ArrayBuffer {
  const json = encoder.encode(JSON.stringify({ hash: hello.identity.hash, summary: hello.identity.summary }));
  const { buffer, view } = allocFrame(FrameType.HELLO, 12 + json.length);
  view.setUint32(0, hello.magic ?? PROTOCOL_MAGIC, true);
  view.setUint16(4, hello.version ?? PROTOCOL_VERSION, true);
  view.setUint8(6, hello.rank);
  view.setUint8(7, hello.worldSize);
  view.setUint32(8, json.length, true);
  new Uint8Array(buffer, FRAME_HEADER_BYTES + 12).set(json);
  return buffer;
}

/** A HELLO payload; what cannot be read comes back with magic 0 (checkHello then refuses it). */
export function decodeHello(payload: ArrayBuffer): Hello {
  const bad: Hello = { magic: 0, version: 0, rank: -1, worldSize: 0, identity: { hash: '', summary: '' } };
  if (payload.byteLength < 12) return bad;
  const view = new DataView(payload);
  const magic = view.getUint32(0, true);
  const version = view.getUint16(4, true);
  const rank = view.getUint8(6);
  const worldSize = view.getUint8(7);
  const n = view.getUint32(8, true);
  let identity = bad.identity;
  if (12 + n <= payload.byteLength) {
    try {
      const parsed = JSON.parse(decoder.decode(new Uint8Array(payload, 12, n))) as Partial<ModelIdentity>;
      identity = { hash: String(parsed.hash ?? ''), summary: String(parsed.summary ?? '') };
    } catch {
      // left empty: refused as a model mismatch
    }
  }
  return { magic, version, rank, worldSize, identity };
}

const rankName = (rank: number) => (rank === 0 ? 'the head (rank 0)' : `rank ${rank}`);

/**
 * Why `own` refuses the peer's HELLO, in words naming the difference; null when they fit.
 * The head (rank 0) accepts a worker of a rank below the world size; a worker accepts only the head.
 */
export function checkHello(own: Hello, peer: Hello): string | null {
  if (peer.magic !== PROTOCOL_MAGIC)
    return `the peer is not an svc expert-parallel rank (handshake magic 0x${peer.magic.toString(16).padStart(8, '0')}, expected 0x${PROTOCOL_MAGIC.toString(16)})`;
  if (peer.version !== own.version)
    return `protocol version mismatch: ${rankName(peer.rank)} speaks version ${peer.version}, this rank version ${own.version}; run the same svc version on every rank`;
  if (peer.worldSize !== own.worldSize)
    return `world size mismatch: ${rankName(peer.rank)} was started with --world-size ${peer.worldSize}, this rank (${own.rank}) with --world-size ${own.worldSize}`;
  if (own.rank === 0) {
    if (peer.rank === 0) return 'rank mismatch: the peer is rank 0 too; start the expert worker with --rank 1';
    if (peer.rank >= own.worldSize) return `rank mismatch: the peer is rank ${peer.rank}, not below --world-size ${own.worldSize}`;
  } else if (peer.rank !== 0) {
    return `rank mismatch: the peer is rank ${peer.rank}, not the head (rank 0)`;
  }
  if (peer.identity.hash !== own.identity.hash) {
    const [head, worker] = own.rank === 0 ? [own, peer] : [peer, own];
    return (
      `model mismatch: the head serves ${head.identity.summary} [${head.identity.hash.slice(0, 12)}], ` +
      `rank ${worker.rank} loaded ${worker.identity.summary} [${worker.identity.hash.slice(0, 12)}]; start every rank with the same checkpoint`
    );
  }
  return null;
}

export function encodeReject(reason: string): ArrayBuffer {
  const bytes = encoder.encode(reason);
  const { buffer } = allocFrame(FrameType.REJECT, bytes.length);
  new Uint8Array(buffer, FRAME_HEADER_BYTES).set(bytes);
  return buffer;
}

export function decodeText(payload: ArrayBuffer, offset = 0): string {
  return decoder.decode(new Uint8Array(payload, offset));
}

/** The command that starts the expert worker of a head listening on host:port (for log lines and errors). */
export function workerCommand(worldSize: number, host: string, port: number): string {
  // A head listening on every interface is reached at an address of its own, which it cannot know.
  const addr = host === '0.0.0.0' || host === '::' || host === '' ? 'HEAD_ADDRESS' : host;
  return `svc serve MODEL --rank 1 --world-size ${worldSize} --master-addr ${addr} --master-port ${port}`;
}

// ---- REQUEST ----

const REQUEST_HEADER = 24;
const REPLY_HEADER = 16;

export interface RequestHeader {
  readonly seq: number;
  readonly layer: number;
  readonly dtype: RowsDtype;
  /** Rows sent. */
  readonly m: number;
  readonly k: number;
  readonly hidden: number;
}

/** A request's arrays, as views into its frame (encodeRequest) or payload (decodeRequest). */
export interface RequestViews {
  readonly header: RequestHeader;
  /** f32: Float32Array [m, hidden]; bf16: the upper halves of the f32 values, Uint16Array [m, hidden]. */
  readonly rows: Float32Array | Uint16Array;
  readonly ids: Int32Array;
  readonly weights: Float32Array;
}

const pad4 = (n: number) => (n + 3) & ~3;

function requestLayout(h: RequestHeader): { rowsBytes: number; total: number } {
  const rowsBytes = pad4(h.m * h.hidden * (h.dtype === 'f32' ? 4 : 2));
  return { rowsBytes, total: REQUEST_HEADER + rowsBytes + h.m * h.k * 8 };
}

function requestViews(buffer: ArrayBuffer, base: number, header: RequestHeader, rowsBytes: number): RequestViews {
  const { m, k, hidden } = header;
  const at = base + REQUEST_HEADER;
  const rows = header.dtype === 'f32' ? new Float32Array(buffer, at, m * hidden) : new Uint16Array(buffer, at, m * hidden);
  const ids = new Int32Array(buffer, at + rowsBytes, m * k);
  const weights = new Float32Array(buffer, at + rowsBytes + m * k * 4, m * k);
  return { header, rows, ids, weights };
}

/** A REQUEST frame with its header written; the caller fills the views. */
export function encodeRequest(header: RequestHeader): { frame: ArrayBuffer } & RequestViews {
  const { rowsBytes, total } = requestLayout(header);
  const { buffer, view } = allocFrame(FrameType.REQUEST, total);
  view.setUint32(0, header.seq, true);
  view.setUint16(4, header.layer, true);
  view.setUint8(6, header.dtype === 'f32' ? 0 : 1);
  view.setUint32(8, header.m, true);
  view.setUint32(12, header.k, true);
  view.setUint32(16, header.hidden, true);
  return { frame: buffer, ...requestViews(buffer, FRAME_HEADER_BYTES, header, rowsBytes) };
}

export function decodeRequest(payload: ArrayBuffer): RequestViews {
  if (payload.byteLength < REQUEST_HEADER) throw new RangeError(`short REQUEST frame (${payload.byteLength} bytes)`);
  const view = new DataView(payload);
  const dtypeCode = view.getUint8(6);
  if (dtypeCode > 1) throw new RangeError(`REQUEST rows dtype ${dtypeCode} unknown`);
  const header: RequestHeader = {
    seq: view.getUint32(0, true),
    layer: view.getUint16(4, true),
    dtype: dtypeCode === 0 ? 'f32' : 'bf16',
    m: view.getUint32(8, true),
    k: view.getUint32(12, true),
    hidden: view.getUint32(16, true),
  };
  const { rowsBytes, total } = requestLayout(header);
  if (total !== payload.byteLength) throw new RangeError(`REQUEST frame of ${payload.byteLength} bytes, its header says ${total}`);
  return requestViews(payload, 0, header, rowsBytes);
}

// ---- REPLY / ERROR ----

/** A REPLY frame with its header written and its output rows (zeroed) to fill. */
export function encodeReply(seq: number, m: number, hidden: number): { frame: ArrayBuffer; out: Float32Array } {
  const { buffer, view } = allocFrame(FrameType.REPLY, REPLY_HEADER + m * hidden * 4);
  view.setUint32(0, seq, true);
  view.setUint32(4, m, true);
  view.setUint32(8, hidden, true);
  return { frame: buffer, out: new Float32Array(buffer, FRAME_HEADER_BYTES + REPLY_HEADER, m * hidden) };
}

export function decodeReply(payload: ArrayBuffer): { seq: number; m: number; hidden: number; out: Float32Array } {
  if (payload.byteLength < REPLY_HEADER) throw new RangeError(`short REPLY frame (${payload.byteLength} bytes)`);
  const view = new DataView(payload);
  const seq = view.getUint32(0, true);
  const m = view.getUint32(4, true);
  const hidden = view.getUint32(8, true);
  if (REPLY_HEADER + m * hidden * 4 !== payload.byteLength)
    throw new RangeError(`REPLY frame of ${payload.byteLength} bytes for ${m} rows of ${hidden}`);
  return { seq, m, hidden, out: new Float32Array(payload, REPLY_HEADER, m * hidden) };
}

export function encodeError(seq: number, message: string): ArrayBuffer {
  const bytes = encoder.encode(message);
  const { buffer, view } = allocFrame(FrameType.ERROR, 4 + bytes.length);
  view.setUint32(0, seq, true);
  new Uint8Array(buffer, FRAME_HEADER_BYTES + 4).set(bytes);
  return buffer;
}

/** The seq of a REPLY or ERROR payload (both start with it). */
export function payloadSeq(payload: ArrayBuffer): number {
  return payload.byteLength >= 4 ? new DataView(payload).getUint32(0, true) : -1;
}

// ---- bf16 rows ----

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

/** f32 → bf16, rounding to nearest even (NaN stays NaN). */
export function toBf16(src: Float32Array, dst: Uint16Array, len = src.length): void {
  for (let i = 0; i < len; i++) {
    f32[0] = src[i];
    const bits = u32[0];
    if ((bits & 0x7f800000) === 0x7f800000 && (bits & 0x7fffff) !== 0) dst[i] = (bits >>> 16) | 0x40;
    else dst[i] = (bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16;
  }
}

export function fromBf16(src: Uint16Array, dst: Float32Array, len = src.length): void {
  const out = new Uint32Array(dst.buffer, dst.byteOffset, len);
  for (let i = 0; i < len; i++) out[i] = src[i] << 16;
}

// ---- reading frames off a stream ----

/**
 * Cuts a byte stream into frames, each copied once into an ArrayBuffer of its own (so its arrays
 * are viewed in place). A frame longer than `maxFrame` is an error (thrown from push).
 */
export class FrameReader {
  private readonly header = new Uint8Array(FRAME_HEADER_BYTES);
  private headerFill = 0;
  private body: Uint8Array | null = null;
  private bodyFill = 0;
  private type = 0;

  constructor(public maxFrame: number) {}

  /** The frames completed by `chunk`, in order. */
  push(chunk: Uint8Array): Frame[] {
    const frames: Frame[] = [];
    let at = 0;
    while (at < chunk.length) {
      if (this.body === null) {
        const take = Math.min(FRAME_HEADER_BYTES - this.headerFill, chunk.length - at);
        this.header.set(chunk.subarray(at, at + take), this.headerFill);
        this.headerFill += take;
        at += take;
        if (this.headerFill < FRAME_HEADER_BYTES) break;
        const view = new DataView(this.header.buffer);
        const length = view.getUint32(0, true);
        this.type = view.getUint8(4);
        if (length > this.maxFrame) throw new RangeError(`a frame of ${length} bytes (at most ${this.maxFrame} accepted here)`);
        this.body = new Uint8Array(length);
        this.bodyFill = 0;
        this.headerFill = 0;
      }
      const take = Math.min(this.body.length - this.bodyFill, chunk.length - at);
      this.body.set(chunk.subarray(at, at + take), this.bodyFill);
      this.bodyFill += take;
      at += take;
      if (this.bodyFill === this.body.length) {
        frames.push({ type: this.type, payload: this.body.buffer as ArrayBuffer });
        this.body = null;
      }
    }
    return frames;
  }
}
