// Two-rank expert parallelism's transport (src/engine/expert-parallel/): the wire protocol's frames
// and handshake checks, and the head's link — its own thread owning a real socket on 127.0.0.1 — with
// an expert worker (rank 1) in a thread of this process computing ops.moe over its half of a random
// expert set. The head's blocking side (RemoteExperts.start/finish) runs on this test's main thread,
// as it does on the engine worker.
//
// Exactness: every expert sees exactly the rows it sees on one rank (a row goes to rank 1 whole, in
// step order), so each expert's output y is the same to the bit. What differs is the order of the
// sum: one rank adds w·y expert by expert into the row (each addition rounded to f32, the product
// not); two ranks add the head's experts, then rank 1's sum (itself rounded) in one more f32
// addition. So a row with a single expert (k = 1) is bitwise equal to one rank, and rows mixing
// experts of both ranks are equal within f32 rounding of the sum (checked: ≤ 4 ulp of the row's
// largest magnitude; in practice 0 or 1).
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { MessageChannel, Worker, type MessagePort } from 'node:worker_threads';
import { nativeOps } from '../../src/kernels/index.js';
import { expertRange } from '../../src/model/architectures/expert-placement.js';
import { HeadLink, readStatus } from '../../src/engine/expert-parallel/index.js';
import {
  checkHello,
  decodeHello,
  decodeReply,
  decodeRequest,
  encodeHello,
  encodeReply,
  encodeRequest,
  FRAME_HEADER_BYTES,
  FrameReader,
  FrameType,
  fromBf16,
  PROTOCOL_MAGIC,
  PROTOCOL_VERSION,
  toBf16,
  type Hello,
  type ModelIdentity,
} from '../../src/engine/expert-parallel/protocol.js';
import type { LinkEvent } from '../../src/engine/expert-parallel/link-thread.js';
import { freePort } from '../helpers/svc-cli.js';
import { randomExperts, randomRouting, rng, shardOf, type ExpertSetShape } from '../../bench/moe-experts.js';
import type { RankWorkerData } from '../helpers/ep-rank-worker.js';

const IDENTITY: ModelIdentity = { hash: 'a'.repeat(64), summary: 'qwen3moe "test" (8 experts)' };
const OTHER: ModelIdentity = { hash: 'b'.repeat(64), summary: 'qwen3moe "other" (8 experts)' };

const hello = (over: Partial<Hello> = {}): Hello => ({
  magic: PROTOCOL_MAGIC,
  version: PROTOCOL_VERSION,
  rank: 0,
  worldSize: 2,
  identity: IDENTITY,
  ...over,
});

/** The frames of `buffers` as one stream, cut into chunks of `size` bytes. */
function reassemble(buffers: ArrayBuffer[], size: number) {
  const all = Buffer.concat(buffers.map((b) => new Uint8Array(b)));
  const reader = new FrameReader(1 << 30);
  const frames = [];
  for (let at = 0; at < all.length; at += size) frames.push(...reader.push(all.subarray(at, at + size)));
  return frames;
}

test('protocol: frames survive any chunking; REQUEST and REPLY round trip with their arrays in place', () => {
  const header = { seq: 7, layer: 3, dtype: 'f32' as const, m: 3, k: 2, hidden: 5 };
  const req = encodeRequest(header);
  req.rows.set(Float32Array.from({ length: 15 }, (_, i) => i / 3));
  req.ids.set([0, 5, 1, 6, 2, 7]);
  req.weights.set([0.5, 0.5, 0.25, 0.75, 1, 0]);
  const reply = encodeReply(9, 2, 4);
  reply.out.set([1, 2, 3, 4, 5, 6, 7, 8]);
  const helloFrame = encodeHello(hello());
  for (const size of [1, 3, 7, 64, 1 << 20]) {
    const frames = reassemble([helloFrame, req.frame, reply.frame], size);
    assert.deepEqual(
      frames.map((f) => f.type),
      [FrameType.HELLO, FrameType.REQUEST, FrameType.REPLY],
    );
    assert.deepEqual(decodeHello(frames[0].payload), hello());
    const r = decodeRequest(frames[1].payload);
    assert.deepEqual(r.header, header);
    assert.deepEqual([...r.rows], [...req.rows]);
    assert.deepEqual([...r.ids], [0, 5, 1, 6, 2, 7]);
    assert.deepEqual([...r.weights], [0.5, 0.5, 0.25, 0.75, 1, 0]);
    const p = decodeReply(frames[2].payload);
    assert.deepEqual({ seq: p.seq, m: p.m, hidden: p.hidden, out: [...p.out] }, { seq: 9, m: 2, hidden: 4, out: [1, 2, 3, 4, 5, 6, 7, 8] });
  }
  // bf16 rows: half the bytes (padded to 4), rounded to nearest even.
  const b = encodeRequest({ ...header, dtype: 'bf16', hidden: 3, m: 1, k: 1 });
  assert.equal(b.frame.byteLength, FRAME_HEADER_BYTES + 24 + 8 + 8);
  const src = Float32Array.of(1, 1 + 2 ** -8, 1 + 3 * 2 ** -8);
  toBf16(src, b.rows as Uint16Array);
  const back = new Float32Array(3);
  fromBf16(decodeRequest(b.frame.slice(FRAME_HEADER_BYTES)).rows as Uint16Array, back);
  assert.deepEqual([...back], [1, 1, 1 + 2 ** -6]);
  // A stranger's bytes (an HTTP request) are refused before anything is buffered.
  assert.throws(() => new FrameReader(64 * 1024).push(Buffer.from('GET / HTTP/1.1\r\n\r\n')), /at most 65536 accepted/);
});

test('protocol: the handshake check names every mismatch, from both sides', () => {
  const head = hello();
  const worker = hello({ rank: 1 });
  assert.equal(checkHello(head, worker), null);
  assert.equal(checkHello(worker, head), null);
  assert.match(checkHello(head, hello({ rank: 1, magic: 0x12345678 }))!, /not an svc expert-parallel rank \(handshake magic 0x12345678/);
  assert.match(
    checkHello(head, hello({ rank: 1, version: 99 }))!,
    /protocol version mismatch: rank 1 speaks version 99, this rank version 1/,
  );
  assert.match(checkHello(worker, hello({ version: 99 }))!, /protocol version mismatch: the head \(rank 0\) speaks version 99/);
  assert.match(
    checkHello(head, hello({ rank: 1, worldSize: 3 }))!,
    /world size mismatch: rank 1 was started with --world-size 3, this rank \(0\) with --world-size 2/,
  );
  assert.match(checkHello(head, hello({ rank: 0 }))!, /rank mismatch: the peer is rank 0 too; start the expert worker with --rank 1/);
  assert.match(checkHello(worker, hello({ rank: 1 }))!, /rank mismatch: the peer is rank 1, not the head/);
  const model = checkHello(head, hello({ rank: 1, identity: OTHER }))!;
  assert.match(model, /^model mismatch: the head serves qwen3moe "test" \(8 experts\) \[aaaaaaaaaaaa\], rank 1 loaded qwen3moe "other"/);
  assert.equal(checkHello(hello({ rank: 1, identity: OTHER }), head), model, 'the worker words it the same way');
});

// ---- the link, with real sockets ----

const SHAPE: ExpertSetShape = { numLayers: 2, numExperts: 8, hidden: 64, inter: 96, dtype: 'f32', seed: 11 };
const ALL = randomExperts(SHAPE, nativeOps);
const LOCAL = shardOf(ALL, expertRange(SHAPE.numExperts, { rank: 0, worldSize: 2 }));

const workers = new Set<Worker>();
const links = new Set<HeadLink>();
after(async () => {
  for (const w of workers) await w.terminate();
  for (const l of links) await l.close();
});

interface Rank {
  worker: Worker;
  logs: string[];
  done: Promise<string | null>;
}

function startRank(port: number, over: Partial<RankWorkerData> = {}): Rank {
  const data: RankWorkerData = { host: '127.0.0.1', port, rank: 1, worldSize: 2, identity: IDENTITY, shape: SHAPE, ...over };
  const worker = new Worker(new URL('../helpers/ep-rank-worker.js', import.meta.url), { workerData: data });
  workers.add(worker);
  const logs: string[] = [];
  const done = new Promise<string | null>((resolve) => {
    worker.on('message', (m: { type: string; message?: string; error?: string | null }) => {
      if (m.type === 'log') logs.push(m.message!);
      else if (m.type === 'done') resolve(m.error ?? null);
    });
    worker.on('exit', () => resolve('exited'));
  });
  return { worker, logs, done };
}

async function startHead(over: { replyTimeoutMs?: number; rowsDtype?: 'f32' | 'bf16' } = {}) {
  const port = await freePort();
  const { port1, port2 } = new MessageChannel();
  const events: LinkEvent[] = [];
  port1.on('message', (e: LinkEvent) => events.push(e));
  port1.unref();
  const link = new HeadLink({
    worldSize: 2,
    host: '127.0.0.1',
    port,
    identity: IDENTITY,
    events: port2 as MessagePort,
    replyTimeoutMs: over.replyTimeoutMs ?? 10_000,
    rowsDtype: over.rowsDtype,
    handshakeTimeoutMs: 2000,
  });
  links.add(link);
  return { link, port, events, remote: link.remoteExperts(SHAPE.numExperts, SHAPE.hidden) };
}

const until = async (cond: () => boolean, ms = 10_000) => {
  const t0 = Date.now();
  while (!cond()) {
    if (Date.now() - t0 > ms) throw new Error('timed out waiting');
    await new Promise((r) => setTimeout(r, 10));
  }
};

/** max |a - b| over a row, in ulps of the row's largest |b|. */
function ulpError(a: Float32Array, b: Float32Array, hidden: number): number {
  let worst = 0;
  for (let i = 0; i < a.length / hidden; i++) {
    let scale = 0,
      diff = 0;
    for (let h = 0; h < hidden; h++) {
      scale = Math.max(scale, Math.abs(b[i * hidden + h]));
      diff = Math.max(diff, Math.abs(a[i * hidden + h] - b[i * hidden + h]));
    }
    const ulp = scale === 0 ? Number.MIN_VALUE : 2 ** (Math.floor(Math.log2(scale)) - 23);
    worst = Math.max(worst, diff / ulp);
  }
  return worst;
}

test('link: head (local half) + rank 1 over TCP (remote half) = ops.moe over every expert; only rows needing rank 1 travel', async () => {
  const head = await startHead();
  const rank = startRank(head.port);
  head.link.waitForPeer(20_000);
  assert.equal(readStatus(head.link.control, 2, '').peers, 'connected');
  const rand = rng(5);
  let expectedRows = 0,
    expectedRequests = 0;
  for (const k of [1, 2, 4]) {
    for (const n of [1, 7, 33]) {
      const layer = (n + k) % SHAPE.numLayers;
      const { x, ids, weights } = randomRouting(rand, n, k, SHAPE.numExperts, SHAPE.hidden);
      const want = new Float32Array(n * SHAPE.hidden);
      nativeOps.moe(x, n, ALL[layer], ids, weights, k, want);
      const got = new Float32Array(n * SHAPE.hidden);
      head.remote.start(layer, x, n, ids, weights, k);
      nativeOps.moe(x, n, LOCAL[layer], ids, weights, k, got);
      head.remote.finish(got, n);
      if (k === 1) assert.deepEqual(got, want, `k=1 n=${n}: bitwise`);
      else
        assert.ok(ulpError(got, want, SHAPE.hidden) <= 4, `k=${k} n=${n}: within f32 rounding (${ulpError(got, want, SHAPE.hidden)} ulp)`);
      let remoteRows = 0;
      for (let i = 0; i < n; i++) if ([...ids.subarray(i * k, (i + 1) * k)].some((e) => e >= 4)) remoteRows++;
      expectedRows += remoteRows;
      if (remoteRows > 0) expectedRequests++;
    }
  }
  // A step whose rows all stay on the head sends nothing.
  const { x, weights } = randomRouting(rand, 5, 2, SHAPE.numExperts, SHAPE.hidden);
  const localIds = Int32Array.from({ length: 10 }, (_, i) => i % 4);
  const before = readStatus(head.link.control, 2, '');
  const out = new Float32Array(5 * SHAPE.hidden);
  head.remote.start(0, x, 5, localIds, weights, 2);
  nativeOps.moe(x, 5, LOCAL[0], localIds, weights, 2, out);
  head.remote.finish(out, 5);
  const s = readStatus(head.link.control, 2, '');
  assert.equal(s.bytesSent, before.bytesSent, 'nothing sent for local-only rows');
  assert.equal(s.requests, expectedRequests);
  assert.equal(s.rowsSent, expectedRows);
  assert.ok(s.bytesReceived > expectedRows * SHAPE.hidden * 4, 'replies are f32 rows');
  assert.ok(s.bytesSent > expectedRows * SHAPE.hidden * 4, 'requests carry f32 rows');
  await until(() => head.events.some((e) => /rank 1 connected from 127\.0\.0\.1/.test(e.message)));
  assert.ok(head.events.some((e) => /waiting for rank 1 of 2 on 127\.0\.0\.1:\d+/.test(e.message)));
  assert.ok(rank.logs.some((l) => /connected to the head at 127\.0\.0\.1:\d+/.test(l)));
});

test('link: bf16 rows halve the request bytes and stay within bf16 rounding', async () => {
  const head = await startHead({ rowsDtype: 'bf16' });
  startRank(head.port);
  head.link.waitForPeer(20_000);
  const n = 16,
    k = 2;
  const { x, ids, weights } = randomRouting(rng(9), n, k, SHAPE.numExperts, SHAPE.hidden);
  for (let i = 0; i < n; i++) ids[i * k + 1] = 4 + (i % 4); // every row needs rank 1
  const want = new Float32Array(n * SHAPE.hidden);
  nativeOps.moe(x, n, ALL[1], ids, weights, k, want);
  const got = new Float32Array(n * SHAPE.hidden);
  head.remote.start(1, x, n, ids, weights, k);
  nativeOps.moe(x, n, LOCAL[1], ids, weights, k, got);
  head.remote.finish(got, n);
  let worst = 0;
  for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i] - want[i]));
  assert.ok(worst > 0 && worst < 2e-2, `bf16 rows: max |Δ| ${worst}`);
  const s = readStatus(head.link.control, 2, '');
  // Handshake aside, the request is rows (n·hidden·2) + ids and weights (n·k·8) + headers.
  assert.ok(s.bytesSent < n * SHAPE.hidden * 2 + n * k * 8 + 1024, `sent ${s.bytesSent} bytes`);
});

test('handshake: another model, world size, rank or protocol version is refused with the reason on both sides', async () => {
  const head = await startHead();
  const cases: [Partial<RankWorkerData>, RegExp][] = [
    [{ identity: OTHER }, /model mismatch: the head serves qwen3moe "test".*rank 1 loaded qwen3moe "other"/],
    [{ worldSize: 3 }, /world size mismatch/],
    [{ rank: 0 }, /rank mismatch: the peer is rank 0 too/],
    [{ hello: { version: 99 } }, /protocol version mismatch/],
  ];
  for (const [over, reason] of cases) {
    const rank = startRank(head.port, over);
    const error = await rank.done;
    assert.match(error ?? '', reason, `worker side, ${JSON.stringify(over)}`);
    await until(() => head.events.some((e) => e.level === 'warn' && reason.test(e.message)));
    await rank.worker.terminate();
  }
  assert.equal(readStatus(head.link.control, 2, '').peers, 'waiting', 'never connected');
  assert.throws(
    () => head.link.waitForPeer(50),
    /rank 1 of 2 did not connect to 127\.0\.0\.1:\d+ within 0 s \(start it with `svc serve MODEL --rank 1/,
  );
  // A second worker while one is connected is refused too.
  startRank(head.port);
  head.link.waitForPeer(20_000);
  const second = startRank(head.port);
  assert.match((await second.done) ?? '', /rank 1 is already connected/);
});

test('peer death: finish() throws at once, new steps are refused, and a new worker is served again', async () => {
  const release = new SharedArrayBuffer(4);
  const head = await startHead({ replyTimeoutMs: 30_000 });
  const rank = startRank(head.port, { stall: release });
  head.link.waitForPeer(20_000);
  const { x, ids, weights } = randomRouting(rng(3), 4, 2, SHAPE.numExperts, SHAPE.hidden);
  ids.set([0, 5, 1, 6, 2, 7, 3, 4]);
  const out = new Float32Array(4 * SHAPE.hidden);
  head.remote.start(0, x, 4, ids, weights, 2);
  await rank.worker.terminate(); // dies mid-request
  const t0 = Date.now();
  assert.throws(() => head.remote.finish(out, 4), /expert-parallel rank 1 was lost while computing layer 0; waiting for it to reconnect/);
  assert.ok(Date.now() - t0 < 5000, 'well before the reply timeout');
  assert.equal(readStatus(head.link.control, 2, '').peers, 'lost');
  assert.throws(
    () => head.remote.start(0, x, 4, ids, weights, 2),
    /expert-parallel rank 1 was lost; waiting for it to reconnect to 127\.0\.0\.1/,
  );
  await until(() => head.events.some((e) => e.level === 'warn' && /lost rank 1/.test(e.message)));

  startRank(head.port);
  head.link.waitForPeer(20_000);
  const want = new Float32Array(4 * SHAPE.hidden);
  nativeOps.moe(x, 4, ALL[0], ids, weights, 2, want);
  head.remote.start(0, x, 4, ids, weights, 2);
  nativeOps.moe(x, 4, LOCAL[0], ids, weights, 2, out);
  head.remote.finish(out, 4);
  assert.ok(ulpError(out, want, SHAPE.hidden) <= 4);
  assert.equal(readStatus(head.link.control, 2, '').connections, 2);
});

test('a hung worker: finish() throws after the reply timeout, the connection is dropped, and the worker reconnects', async () => {
  const release = new SharedArrayBuffer(4);
  const head = await startHead({ replyTimeoutMs: 300 });
  const rank = startRank(head.port, { stall: release });
  head.link.waitForPeer(20_000);
  const { x, ids, weights } = randomRouting(rng(4), 2, 1, SHAPE.numExperts, SHAPE.hidden);
  ids.set([5, 6]);
  const out = new Float32Array(2 * SHAPE.hidden);
  head.remote.start(1, x, 2, ids, weights, 1);
  const t0 = Date.now();
  assert.throws(
    () => head.remote.finish(out, 2),
    /rank 1 did not answer layer 1 within 300 ms \(SVC_EP_REPLY_TIMEOUT_S\); the connection was dropped/,
  );
  assert.ok(Date.now() - t0 >= 290);
  await until(() => readStatus(head.link.control, 2, '').peers === 'lost');
  // Released, the worker finds its connection gone and connects again.
  Atomics.store(new Int32Array(release), 0, 1);
  Atomics.notify(new Int32Array(release), 0);
  head.link.waitForPeer(20_000);
  await until(() => rank.logs.some((l) => /lost the head/.test(l)));
  const want = new Float32Array(2 * SHAPE.hidden);
  nativeOps.moe(x, 2, ALL[1], ids, weights, 1, want);
  out.fill(0);
  head.remote.start(1, x, 2, ids, weights, 1);
  nativeOps.moe(x, 2, LOCAL[1], ids, weights, 1, out);
  head.remote.finish(out, 2);
  assert.deepEqual(out, want);
});

test('the listener cannot start (port taken): waitForPeer fails with the reason', async () => {
  const head = await startHead();
  await until(() => head.events.some((e) => /waiting for rank 1/.test(e.message))); // listening
  const clash = new HeadLink({ worldSize: 2, host: '127.0.0.1', port: head.port, identity: IDENTITY, replyTimeoutMs: 1000 });
  links.add(clash);
  assert.throws(
    () => clash.waitForPeer(10_000),
    /expert parallelism: cannot listen on 127\.0\.0\.1:\d+ for the expert-parallel worker .*EADDRINUSE/,
  );
});
