// --profile's table as people read it: printed to stderr at shutdown and served by
// GET /debug/profile?format=text. Op and matmul shares are of the time spent in forward passes
// (what is left of it is the JavaScript between ops); step parts' shares are of their sum.
import type { ProfileRow, ProfileSnapshot } from '../engine/profile.js';

/** Ops that run at model load, not in forward passes: no share of forward time. */
const LOAD_OPS = new Set(['prepareWeight']);

const HEAD = ['calls', 'total ms', 'share', 'mean µs', 'max ms'];

function percent(part: number, whole: number): string {
  return whole > 0 ? `${((100 * part) / whole).toFixed(1)}%` : '—';
}

function section(title: string, rows: ProfileRow[], whole: (r: ProfileRow) => number): string[][] {
  return [
    [title, ...HEAD],
    ...rows.map((r) => [
      r.name,
      String(r.calls),
      r.totalMs.toFixed(1),
      percent(r.totalMs, whole(r)),
      ((1000 * r.totalMs) / r.calls).toFixed(1),
      r.maxMs.toFixed(2),
    ]),
  ];
}

/** The snapshot as an aligned plain-text table, ending with a newline. */
export function formatProfileTable(p: ProfileSnapshot): string {
  const forward = p.step.find((r) => r.name === 'forward')?.totalMs ?? 0;
  const inOps = p.ops.filter((r) => !LOAD_OPS.has(r.name)).reduce((sum, r) => sum + r.totalMs, 0);
  const stepSum = p.step.reduce((sum, r) => sum + r.totalMs, 0);
  const blocks = [
    section('op', p.ops, (r) => (LOAD_OPS.has(r.name) ? 0 : forward)),
    section('matmul by weight dtype, rows; attention by rows', p.matmul, () => forward),
    section('step part', p.step, () => stepSum),
  ];
  const lines = blocks.flat();
  const widths = HEAD.map((_, i) => Math.max(...lines.map((l) => l[i + 1]!.length)));
  const first = Math.max(...lines.map((l) => l[0]!.length));
  const render = (l: string[]) => [l[0]!.padEnd(first), ...l.slice(1).map((cell, i) => cell.padStart(widths[i]!))].join('  ');
  const out = [
    `Profile (--profile): ${(p.wallMs / 1000).toFixed(1)} s since the engine started; ` +
      `ops ${inOps.toFixed(1)} ms of ${forward.toFixed(1)} ms in forward passes (${percent(inOps, forward)})`,
  ];
  for (const block of blocks) out.push('', ...block.map(render));
  return `${out.join('\n')}\n`;
}
