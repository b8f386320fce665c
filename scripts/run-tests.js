// Runs every compiled test file (dist/test/**/*.test.js) with node's test runner.
// SVC_TEST_FILTER=substring narrows the set (e.g. SVC_TEST_FILTER=unit/).
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { spawnSync } from 'node:child_process';

function collect(dir) {
  const out = [];
  for (const name of readdirSync(dir)) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) out.push(...collect(p));
    else if (name.endsWith('.test.js')) out.push(p);
  }
  return out;
}
const filter = process.env.SVC_TEST_FILTER ?? '';
const files = collect('dist/test')
  .filter((f) => f.includes(filter))
  .sort();
const r = spawnSync(process.execPath, ['--test', '--test-concurrency=1', ...files], { stdio: 'inherit' });
process.exit(r.status ?? 1);
