// The CLI: flag table, argv parsing into a frozen Config, usage errors (exit 2, one line),
// help, and the start-up "not implemented yet" check.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { parseArgs, type ParseResult } from '../../src/cli/parse.js';
import { checkImplemented, type Config } from '../../src/cli/config.js';
import { toExpertRankOptions, toServeOptions } from '../../src/cli/serve-options.js';
import { FLAGS, GROUPS, KV_CACHE_DTYPES, TOOL_CALL_PARSERS, type FlagSpec } from '../../src/cli/flags/index.js';
import { REPO_ROOT } from '../helpers/paths.js';

const ROWS = FLAGS as readonly FlagSpec<string, unknown>[];

function config(...argv: string[]): Config {
  const r = parseArgs(argv);
  assert.equal(r.kind, 'serve', JSON.stringify(r));
  return (r as Extract<ParseResult, { kind: 'serve' }>).config;
}

function error(...argv: string[]): string {
  const r = parseArgs(argv);
  assert.equal(r.kind, 'error', `expected a usage error for ${argv.join(' ')}`);
  const e = r as Extract<ParseResult, { kind: 'error' }>;
  assert.equal(e.exitCode, 2);
  assert.ok(!e.message.includes('\n'), `one line: ${e.message}`);
  return e.message;
}

function warnings(...argv: string[]): readonly string[] {
  const r = parseArgs(argv);
  assert.equal(r.kind, 'serve');
  return (r as Extract<ParseResult, { kind: 'serve' }>).warnings;
}

const camel = (s: string) => s.replace(/-([a-z0-9])/g, (_, c: string) => c.toUpperCase());

test('table: every field is the camelCase of its flag, unique names, every group used', () => {
  const names = new Set<string>();
  for (const row of ROWS) {
    for (const n of [row.name, ...(row.aliases ?? [])]) {
      assert.ok(!names.has(n), `duplicate flag name ${n}`);
      names.add(n);
    }
    if (row.positional) continue;
    // A negated flag (--no-x) sets the positive field x to false.
    assert.equal(row.key, camel(row.name.replace(/^no-/, '')), row.name);
  }
  for (const g of GROUPS)
    assert.ok(
      ROWS.some((r) => r.group === g),
      `group ${g} has no flag`,
    );
});

test('table: rows come group by group, in GROUPS order (each group file holds only its own group)', () => {
  const order = ROWS.map((r) => GROUPS.indexOf(r.group));
  assert.deepEqual(
    order,
    [...order].sort((a, b) => a - b),
  );
});

test('table: every written default is itself an accepted value', () => {
  for (const row of ROWS) {
    if (row.default === undefined || !row.value.takesValue) continue;
    const parsed = row.value.parse(row.value.format(row.default));
    assert.ok(parsed.ok && !parsed.warning && Object.is(parsed.value, row.default), `${row.name} default`);
  }
});

test('defaults: serve MODEL gives the spec defaults in a frozen Config', () => {
  const c = config('serve', 'org/model');
  assert.ok(Object.isFrozen(c));
  assert.throws(() => {
    (c as { port: number }).port = 1;
  }, TypeError);
  const expected: Partial<Record<keyof Config, unknown>> = {
    model: 'org/model',
    modelFromPath: undefined,
    modelName: undefined,
    port: 8888,
    bind: '127.0.0.1',
    fastLoad: true,
    kvCacheDtype: 'fp8',
    kvHighPrecisionLayers: 0,
    numDrafts: 1,
    mtpQuantization: 'bf16',
    mtpVocab: 100000,
    schedulingPolicy: 'fifo',
    tbtDeadlineMs: 100,
    autoCompact: undefined,
    masterPort: 29500,
    maxThinkingBudget: undefined,
    toolCallParser: undefined,
    toolMaxTokens: 8192,
    defaultTopNSigma: 1,
    defaultMinP: 0.08,
    swapSpaceGb: 3,
    requestTimeout: 300,
    autoSwap: false,
    demo: false,
    dump: undefined,
    gpuMemoryUtilization: 0.9,
    maxSeqLen: undefined,
    maxBatchSize: 8,
    maxPrefillTokens: 8192,
    maxNumSeqs: 128,
    oomGuardMb: 4096,
  };
  for (const [k, v] of Object.entries(expected)) assert.equal(c[k as keyof Config], v, k);
  assert.equal(checkImplemented(c), undefined);
});

test('values: every kind of flag lands in its field', () => {
  const c = config(
    'serve',
    '--model-from-path',
    '/m',
    '--port=9000',
    '--bind',
    '0.0.0.0',
    '--no-fast-load',
    '--kv-cache-dtype',
    'bf16',
    '--max-batch-size',
    '1',
    '--gpu-memory-utilization',
    '1',
    '--default-min-p',
    '0',
    '--auto-compact',
    '0.85',
    '--tool-call-parser',
    'pythonic',
    '--speculative',
  );
  assert.equal(c.model, undefined);
  assert.equal(c.modelFromPath, '/m');
  assert.equal(c.port, 9000);
  assert.equal(c.bind, '0.0.0.0');
  assert.equal(c.fastLoad, false);
  assert.equal(c.kvCacheDtype, 'bf16');
  assert.equal(c.maxBatchSize, 1);
  assert.equal(c.gpuMemoryUtilization, 1);
  assert.equal(c.defaultMinP, 0);
  assert.equal(c.autoCompact, 0.85);
  assert.equal(c.toolCallParser, 'pythonic');
  assert.equal(c.speculative, true);
  for (const d of KV_CACHE_DTYPES) assert.equal(config('serve', 'm', '--kv-cache-dtype', d).kvCacheDtype, d);
  for (const p of TOOL_CALL_PARSERS) assert.equal(config('serve', 'm', '--tool-call-parser', p).toolCallParser, p);
});

test('alias: --served-model-name is --model-name, the last one given wins', () => {
  assert.equal(config('serve', 'm', '--served-model-name', 'a').modelName, 'a');
  assert.equal(config('serve', 'm', '--served-model-name', 'a', '--model-name', 'b').modelName, 'b');
  assert.equal(config('serve', 'm', '--model-name', 'b', '--served-model-name', 'a').modelName, 'a');
});

test('--no-auto-swap wins over --auto-swap in any order', () => {
  assert.equal(config('serve', 'm', '--auto-swap').autoSwap, true);
  assert.equal(config('serve', 'm', '--auto-swap', '--no-auto-swap').autoSwap, false);
  assert.equal(config('serve', 'm', '--no-auto-swap', '--auto-swap').autoSwap, false);
});

test('--kv-high-precision-layers: count, auto, max/all; anything else warns and becomes 0', () => {
  assert.equal(config('serve', 'm', '--kv-high-precision-layers', '3').kvHighPrecisionLayers, 3);
  assert.equal(config('serve', 'm', '--kv-high-precision-layers', 'auto').kvHighPrecisionLayers, 2);
  assert.equal(config('serve', 'm', '--kv-high-precision-layers', 'max').kvHighPrecisionLayers, 'all');
  assert.equal(config('serve', 'm', '--kv-high-precision-layers', 'all').kvHighPrecisionLayers, 'all');
  assert.deepEqual(warnings('serve', 'm', '--kv-high-precision-layers', '3'), []);
  for (const bad of ['lots', '-1', '1.5', '']) {
    assert.equal(config('serve', 'm', '--kv-high-precision-layers', bad).kvHighPrecisionLayers, 0);
    const w = warnings('serve', 'm', '--kv-high-precision-layers', bad);
    assert.equal(w.length, 1);
    assert.match(w[0]!, /^svc: warning: --kv-high-precision-layers: .*got ".*"; using 0$/);
  }
});

test('usage errors name the flag in one line with exit code 2', () => {
  assert.equal(error('serve', 'm', '--port', 'abc'), 'svc: --port: expected an integer from 1 to 65535, got "abc"');
  assert.equal(error('serve', 'm', '--port', '0'), 'svc: --port: expected an integer from 1 to 65535, got "0"');
  assert.equal(error('serve', 'm', '--port', '65536'), 'svc: --port: expected an integer from 1 to 65535, got "65536"');
  assert.equal(error('serve', 'm', '--max-batch-size', '2.5'), 'svc: --max-batch-size: expected an integer of at least 1, got "2.5"');
  assert.equal(error('serve', 'm', '--max-seq-len', '1e99999'), 'svc: --max-seq-len: expected an integer of at least 1, got "1e99999"');
  assert.equal(
    error('serve', 'm', '--gpu-memory-utilization', '0'),
    'svc: --gpu-memory-utilization: expected a number greater than 0 and at most 1, got "0"',
  );
  assert.match(error('serve', 'm', '--gpu-memory-utilization', '1.01'), /^svc: --gpu-memory-utilization: /);
  assert.match(error('serve', 'm', '--auto-compact', 'NaN'), /^svc: --auto-compact: expected a number/);
  assert.match(error('serve', 'm', '--default-min-p', 'Infinity'), /^svc: --default-min-p: /);
  assert.equal(error('serve', 'm', '--scheduling-policy', 'lifo'), 'svc: --scheduling-policy: expected one of fifo, slai, got "lifo"');
  assert.match(error('serve', 'm', '--kv-cache-dtype', 'fp16'), /^svc: --kv-cache-dtype: expected one of bf16, fp8, .*got "fp16"$/);
  assert.equal(error('serve', 'm', '--bind', ''), 'svc: --bind: expected a non-empty address, got ""');
  // An alias is named as typed.
  assert.match(error('serve', 'm', '--served-model-name='), /^svc: --served-model-name: /);
});

test('usage errors from argv structure: unknown, missing value, value on a switch, extras', () => {
  assert.equal(error('serve', 'm', '--nope'), 'svc: --nope: unknown flag');
  assert.equal(error('serve', 'm', '--prot', '1'), 'svc: --prot: unknown flag (did you mean --port?)');
  assert.equal(error('serve', 'm', '--port'), 'svc: --port: missing value (expected an integer from 1 to 65535)');
  assert.match(error('serve', 'm', '--served-model-name'), /^svc: --served-model-name: missing value/);
  assert.equal(error('serve', 'm', '--profile=yes'), 'svc: --profile: takes no value, got "yes"');
  assert.equal(error('serve', 'a', 'b'), 'svc: serve: unexpected argument "b" (only one MODEL is accepted)');
  assert.match(error('frobnicate'), /^svc: frobnicate: unknown command/);
  assert.match(error(), /^svc: missing command/);
  assert.match(error('--port', '1', 'serve', 'm'), /^svc: --port: unknown flag/);
});

test('cross-flag rules', () => {
  assert.equal(error('serve', 'm', '--dflash', '--speculative'), 'svc: --dflash: cannot be combined with --speculative');
  assert.match(error('serve', 'm', '--dflash'), /^svc: --dflash: DFlash drafting needs a DFlash draft model, which svc cannot run/);
  assert.match(error('serve', 'm', '--model-from-path', '/x'), /^svc: --model-from-path: cannot be combined/);
  assert.match(error('serve', 'm', '--rank', '1'), /^svc: --rank: must be below --world-size \(1\)/);
  assert.equal(config('serve', 'm', '--rank', '1', '--world-size', '2', '--master-addr', 'h').rank, 1);
  assert.match(error('serve', 'm', '--require-auth'), /^svc: --require-auth: needs --auth-token/);
  assert.deepEqual(config('serve', 'm', '--require-auth', '--auth-token', 'k').authToken, ['k']);
  assert.equal(config('serve', 'm', '--require-auth', '--auth-tokens-file', '/k').authTokensFile, '/k');
  assert.equal(warnings('serve', 'm', '--auth-token', 'k').length, 1);
  // A setting of a feature that is off is said, not silently dropped.
  assert.match(warnings('serve', 'm', '--num-drafts', '3')[0], /--num-drafts has no effect without/);
  assert.deepEqual(warnings('serve', 'm', '--num-drafts', '3', '--ngram-speculative'), []);
  assert.match(warnings('serve', 'm', '--mtp-vocab', '0')[0], /no effect without --speculative/);
  assert.match(warnings('serve', 'm', '--tbt-deadline-ms', '50')[0], /no effect without --scheduling-policy slai/);
  assert.deepEqual(warnings('serve', 'm', '--tbt-deadline-ms', '50', '--scheduling-policy', 'slai'), []);
  assert.ok(!warnings('serve', 'm', '--auth-token', 'k').some((w) => w.includes('k ') || w.endsWith('k')), 'no key in warnings');
});

test('expert parallelism: supported combinations, and clear refusals of the others', () => {
  // The head: --world-size 2 with a MODEL; it listens on --master-addr, else its --bind address.
  const head = config('serve', 'org/moe', '--world-size', '2');
  assert.deepEqual([head.rank, head.worldSize, head.masterAddr, head.masterPort], [0, 2, undefined, 29500]);
  assert.deepEqual(warnings('serve', 'org/moe', '--world-size', '2', '--master-port', '29600'), []);
  // The worker: rank 1 with the same MODEL and the head's address.
  const worker = config('serve', 'org/moe', '--rank', '1', '--world-size', '2', '--master-addr', '10.0.0.1', '--master-port', '29600');
  assert.deepEqual([worker.rank, worker.masterAddr, worker.masterPort], [1, '10.0.0.1', 29600]);
  assert.deepEqual(warnings('serve', 'org/moe', '--rank', '1', '--world-size', '2', '--master-addr', 'h', '--no-fast-load'), []);
  assert.equal(
    error('serve', 'org/moe', '--world-size', '3'),
    'svc: --world-size: at most 2 ranks are supported (two-way expert parallelism: --rank 0 the head, --rank 1 the expert worker), got 3',
  );
  assert.equal(error('serve', 'org/moe', '--world-size', '2', '--rank', '2'), 'svc: --rank: must be below --world-size (2), got 2');
  assert.match(error('serve', 'org/moe', '--rank', '1', '--master-addr', 'h'), /^svc: --rank: must be below --world-size \(1\), got 1/);
  assert.match(
    error('serve', '--rank', '1', '--world-size', '2', '--master-addr', 'h'),
    /^svc: --world-size 2: needs the MODEL on the command line/,
  );
  assert.match(error('serve', '--world-size', '2'), /^svc: --world-size 2: needs the MODEL on the command line, the same on every rank/);
  assert.equal(
    error('serve', 'org/moe', '--rank', '1', '--world-size', '2'),
    "svc: --rank 1: needs --master-addr, the head's address (and --master-port when it is not 29500)",
  );
  assert.match(error('serve', 'org/moe', '--world-size', '0'), /^svc: --world-size: /);
  // What each rank starts with: the head listens on --master-addr, else its --bind address.
  assert.deepEqual(toServeOptions(head).engine.expertParallel, { worldSize: 2, host: '127.0.0.1', port: 29500 });
  assert.deepEqual(toServeOptions(config('serve', 'org/moe', '--world-size', '2', '--bind', '0.0.0.0')).engine.expertParallel, {
    worldSize: 2,
    host: '0.0.0.0',
    port: 29500,
  });
  assert.equal(toServeOptions(config('serve', 'org/moe')).engine.expertParallel, null);
  assert.deepEqual(toExpertRankOptions(worker), {
    model: { id: 'org/moe', path: undefined, cacheDir: undefined, demo: false },
    rank: 1,
    worldSize: 2,
    master: { host: '10.0.0.1', port: 29600 },
    fastLoad: true,
  });
  // Settings that cannot matter are said.
  assert.deepEqual(warnings('serve', 'org/moe', '--master-addr', 'h'), [
    'svc: warning: --master-addr/--master-port have no effect without --world-size 2',
  ]);
  assert.deepEqual(
    warnings('serve', 'org/moe', '--rank', '1', '--world-size', '2', '--master-addr', 'h', '--port', '9000', '--enable-prefix-caching'),
    ['svc: warning: rank 1 is an expert worker (no HTTP, no scheduler): --port, --enable-prefix-caching have no effect there'],
  );
});

test('--auth-token is repeatable: every key is kept, in order (other valued flags: the last wins)', () => {
  const c = config('serve', 'm', '--require-auth', '--auth-token', 'a', '--port', '1', '--auth-token=b', '--auth-token', 'c');
  assert.deepEqual(c.authToken, ['a', 'b', 'c']);
  assert.ok(Object.isFrozen(c.authToken));
  assert.equal(error('serve', 'm', '--require-auth', '--auth-token', ''), 'svc: --auth-token: expected a non-empty API key, got ""');
  // The value type never writes a key back (warnings, "not implemented yet" lines).
  const row = ROWS.find((r) => r.name === 'auth-token')!;
  assert.ok(row.value.takesValue);
  if (row.value.takesValue) assert.equal(row.value.format(['secret-1', 'secret-2']), '(2 keys)');
});

test('help: both forms list every flag, alias and group from the table', () => {
  for (const argv of [['--help'], ['serve', '--help'], ['serve', '-h'], ['serve', 'm', '--port', 'abc', '--help']]) {
    const r = parseArgs(argv);
    assert.equal(r.kind, 'help', argv.join(' '));
    // Wrapping may break a line anywhere between words.
    const text = (r as Extract<ParseResult, { kind: 'help' }>).text.replace(/\s+/g, ' ');
    for (const g of GROUPS) assert.ok(text.includes(` ${g}: `), g);
    for (const row of ROWS) {
      const spelled = row.positional ? row.name : `--${row.name}`;
      assert.ok(text.includes(spelled), spelled);
      for (const a of row.aliases ?? []) assert.ok(text.includes(`--${a}`), a);
    }
    assert.ok(text.includes('--port <port>'));
    assert.ok(text.includes('[default: 8888]'));
  }
  assert.equal(parseArgs(['--version']).kind, 'version');
});

test('checkImplemented: unbuilt flags at non-default values refuse to start', () => {
  // Built: serve without a model (the Library), --demo, --auto-swap.
  assert.equal(checkImplemented(config('serve')), undefined);
  assert.equal(checkImplemented(config('serve', '--demo')), undefined);
  assert.equal(checkImplemented(config('serve', 'm', '--auto-swap')), undefined);
  assert.equal(checkImplemented(config('serve', 'm', '--world-size', '2')), undefined);
  assert.equal(checkImplemented(config('serve', 'm', '--ssm-cache-slots', '3', '--ssm-checkpoint-interval', '8')), undefined);
  assert.equal(checkImplemented(config('serve', 'm', '--num-drafts', '3', '--ngram-speculative')), undefined);
  assert.equal(checkImplemented(config('serve', 'm', '--kv-cache-dtype', 'nvfp4')), undefined);
  assert.equal(checkImplemented(config('serve', 'm', '--auto-compact', '0.85')), undefined);
  assert.equal(checkImplemented(config('serve', 'm', '--kv-cache-dtype', 'bf16')), undefined);
  // Every flag of the table is built today; a row marked unbuilt refuses a non-default value, and its
  // default spelled out is fine (a table with the ssm rows marked unbuilt, as they were).
  const unbuiltSsm = ROWS.map((row) => (row.name.startsWith('ssm-') ? { ...row, built: false as const } : row));
  assert.equal(
    checkImplemented(config('serve', 'm', '--ssm-cache-slots', '3', '--ssm-checkpoint-interval', '8'), unbuiltSsm),
    'svc: not implemented yet: --ssm-cache-slots 3, --ssm-checkpoint-interval 8',
  );
  assert.equal(checkImplemented(config('serve', 'm', '--ssm-cache-slots', '16', '--rank', '0'), unbuiltSsm), undefined);
  assert.match(checkImplemented(config('serve', 'm', '--ssm-cache-slots', '50'), unbuiltSsm) ?? '', /--ssm-cache-slots 50/);
  assert.equal(checkImplemented(config('serve', 'm', '--scheduling-policy', 'slai', '--tbt-deadline-ms', '50')), undefined);
  assert.equal(
    checkImplemented(config('serve', '--model-from-path', '/m', '--port', '1', '--max-seq-len', '4096', '--no-fast-load')),
    undefined,
  );
});

test('bin/svc.js: --version prints the package version; a bad flag exits 2 with one line', () => {
  const bin = join(REPO_ROOT, 'bin', 'svc.js');
  const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as { version: string };
  const version = spawnSync(process.execPath, [bin, '--version'], { encoding: 'utf8' });
  assert.equal(version.status, 0, version.stderr);
  assert.equal(version.stdout, `${pkg.version}\n`);

  const bad = spawnSync(process.execPath, [bin, 'serve', 'm', '--port', 'abc'], { encoding: 'utf8' });
  assert.equal(bad.status, 2);
  assert.equal(bad.stdout, '');
  assert.equal(bad.stderr, 'svc: --port: expected an integer from 1 to 65535, got "abc"\n');
});
