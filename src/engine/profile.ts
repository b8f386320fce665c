// --profile: per-op timing in the engine worker. The native ops are synchronous (a call returns
// once the addon's threads have finished its work), so performance.now() around a call is the
// op's own wall time and no device synchronization is needed; the reference ops are plain
// TypeScript. Three groups are kept, per name: calls, total and longest time.
//   op      every Ops method (withProfile), prepareWeight included (model load);
//   matmul  matmul again, by weight dtype and by the activation rows n (n = 1 is a lone decode);
//           matmulShared likewise, named 'shared ' and its dtypes;
//           and attention again, split into calls whose rows all decode and calls with a prefill;
//   step    the step loop's parts that are not ops (timeMethod, timed): schedule, forward (the
//           whole pass: its ops and the JavaScript between them), sample, postprocess.
import type { MatmulPart, Ops } from '../kernels/ops.js';

export interface ProfileRow {
  name: string;
  calls: number;
  totalMs: number;
  maxMs: number;
}

/** The table as the engine returns it (structured-clone friendly), rows by total time, longest first. */
export interface ProfileSnapshot {
  /** Wall-clock ms since profiling started (the engine's start). */
  wallMs: number;
  ops: ProfileRow[];
  matmul: ProfileRow[];
  step: ProfileRow[];
}

export type ProfileGroup = 'ops' | 'matmul' | 'step';

class Stat {
  calls = 0;
  totalMs = 0;
  maxMs = 0;

  add(ms: number): void {
    this.calls++;
    this.totalMs += ms;
    if (ms > this.maxMs) this.maxMs = ms;
  }
}

/** Upper bounds of the activation-row buckets of the matmul breakdown (the last one is open). */
const ROW_BUCKETS = [1, 8, 64, 512];
const ROW_LABELS = ['n=1', 'n=2-8', 'n=9-64', 'n=65-512', 'n>512'];

function rowBucket(n: number): number {
  let b = 0;
  while (b < ROW_BUCKETS.length && n > ROW_BUCKETS[b]!) b++;
  return b;
}

export class OpProfile {
  private readonly started = performance.now();
  private readonly groups: Record<ProfileGroup, Map<string, Stat>> = { ops: new Map(), matmul: new Map(), step: new Map() };
  /** The matmul breakdown's stats per weight dtype, one per row bucket: no string is built per call. */
  private readonly byDtype = new Map<string, Stat[]>();

  stat(group: ProfileGroup, name: string): Stat {
    const stats = this.groups[group];
    let s = stats.get(name);
    if (!s) stats.set(name, (s = new Stat()));
    return s;
  }

  matmulStat(dtype: string, n: number): Stat {
    let stats = this.byDtype.get(dtype);
    if (!stats) {
      stats = ROW_LABELS.map((label) => this.stat('matmul', `${dtype} ${label}`));
      this.byDtype.set(dtype, stats);
    }
    return stats[rowBucket(n)]!;
  }

  /** fn, timed into `group` / `name` on every call. */
  timed<A extends unknown[], R>(group: ProfileGroup, name: string, fn: (...args: A) => R): (...args: A) => R {
    const stat = this.stat(group, name);
    return (...args: A): R => {
      const t0 = performance.now();
      const result = fn(...args);
      stat.add(performance.now() - t0);
      return result;
    };
  }

  snapshot(): ProfileSnapshot {
    const rows = (group: ProfileGroup): ProfileRow[] =>
      [...this.groups[group]]
        .filter(([, s]) => s.calls > 0)
        .map(([name, s]) => ({ name, calls: s.calls, totalMs: s.totalMs, maxMs: s.maxMs }))
        .sort((a, b) => b.totalMs - a.totalMs);
    return { wallMs: performance.now() - this.started, ops: rows('ops'), matmul: rows('matmul'), step: rows('step') };
  }
}

/** Replaces obj[key] (a method) with a timed one, in the `step` group under `name`. */
export function timeMethod<K extends string, T extends Record<K, (...args: never[]) => unknown>>(
  profile: OpProfile,
  name: string,
  obj: T,
  key: K,
): void {
  const method = obj[key] as unknown as (...args: unknown[]) => unknown;
  obj[key] = profile.timed('step', name, (...args: unknown[]) => method.apply(obj, args)) as unknown as T[K];
}

/** Wraps every op of `ops` so that each call is timed into `profile`. */
export function withProfile(ops: Ops, profile: OpProfile): Ops {
  const t = <A extends unknown[], R>(name: string, fn: (...args: A) => R) => profile.timed('ops', name, fn);
  const matmul = profile.stat('ops', 'matmul');
  const shared = profile.stat('ops', 'matmulShared');
  const attention = profile.stat('ops', 'attention');
  const attentionDecode = profile.stat('matmul', 'attention, decode rows only');
  const attentionPrefill = profile.stat('matmul', 'attention, with prefill rows');
  return {
    name: ops.name,
    prepareWeight: t('prepareWeight', (w) => ops.prepareWeight(w)),
    ...(ops.packedLayout ? { packedLayout: ops.packedLayout } : {}),
    ...(ops.allocateLarge ? { allocateLarge: ops.allocateLarge } : {}),
    matmul: (x, n, w, y, bias) => {
      const t0 = performance.now();
      ops.matmul(x, n, w, y, bias);
      const ms = performance.now() - t0;
      matmul.add(ms);
      profile.matmulStat(w.dtype, n).add(ms);
    },
    ...(ops.matmulShared
      ? {
          matmulShared: (x: Float32Array, n: number, parts: readonly MatmulPart[]) => {
            const t0 = performance.now();
            ops.matmulShared!(x, n, parts);
            const ms = performance.now() - t0;
            shared.add(ms);
            profile.matmulStat(`shared ${parts.map((p) => p.w.dtype).join('+')}`, n).add(ms);
          },
        }
      : {}),
    embed: t('embed', (ids, table, out) => ops.embed(ids, table, out)),
    rmsnorm: t('rmsnorm', (x, rows, dim, weight, eps, out) => ops.rmsnorm(x, rows, dim, weight, eps, out)),
    rope: t('rope', (x, n, numHeads, headDim, positions, theta, style, freqs) =>
      ops.rope(x, n, numHeads, headDim, positions, theta, style, freqs),
    ),
    ropeMulti: t('ropeMulti', (x, n, numHeads, headDim, positions, sections, theta) =>
      ops.ropeMulti(x, n, numHeads, headDim, positions, sections, theta),
    ),
    siluMul: t('siluMul', (gate, up, out, len) => ops.siluMul(gate, up, out, len)),
    add: t('add', (a, b, out, len) => ops.add(a, b, out, len)),
    layerNorm: t('layerNorm', (x, rows, dim, weight, bias, eps, out) => ops.layerNorm(x, rows, dim, weight, bias, eps, out)),
    gelu: t('gelu', (x, out, len, kind) => ops.gelu(x, out, len, kind)),
    geluMul: t('geluMul', (gate, up, out, len, kind) => ops.geluMul(gate, up, out, len, kind)),
    softcap: t('softcap', (x, out, len, cap) => ops.softcap(x, out, len, cap)),
    bidirectionalAttention: t('bidirectionalAttention', (q, nq, k, v, nk, numHeads, headDim, scale, out) =>
      ops.bidirectionalAttention(q, nq, k, v, nk, numHeads, headDim, scale, out),
    ),
    storeKv: t('storeKv', (layer, k, v, n, slots) => ops.storeKv(layer, k, v, n, slots)),
    attention: (q, layer, seqs, params, out) => {
      const t0 = performance.now();
      ops.attention(q, layer, seqs, params, out);
      const ms = performance.now() - t0;
      attention.add(ms);
      (seqs.every((s) => s.qLen === 1) ? attentionDecode : attentionPrefill).add(ms);
    },
    storeLatentKv: t('storeLatentKv', (layer, latent, n, slots) => ops.storeLatentKv(layer, latent, n, slots)),
    mlaAttention: t('mlaAttention', (q, layer, seqs, params, out) => ops.mlaAttention(q, layer, seqs, params, out)),
    moe: t('moe', (x, n, experts, ids, weights, k, out) => ops.moe(x, n, experts, ids, weights, k, out)),
    causalConv1d: t('causalConv1d', (x, channels, kernel, weight, seqs, state, out, bias) =>
      ops.causalConv1d(x, channels, kernel, weight, seqs, state, out, bias),
    ),
    ssdScan: t('ssdScan', (x, dt, b, c, seqs, params, state, out) => ops.ssdScan(x, dt, b, c, seqs, params, state, out)),
    gatedDeltaRule: t('gatedDeltaRule', (q, k, v, g, beta, seqs, params, state, out) =>
      ops.gatedDeltaRule(q, k, v, g, beta, seqs, params, state, out),
    ),
  };
}
