// The environment-variable table (src/common/env.ts): defaults, parsing, and errors that name
// the variable.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ENV_VARS, EnvError, readEnv, type EnvName } from '../../src/common/env.js';

const NAMES = Object.keys(ENV_VARS) as EnvName[];

test('table: each entry is named by its key and documented', () => {
  for (const name of NAMES) {
    assert.equal(ENV_VARS[name].name, name);
    assert.ok(ENV_VARS[name].doc.length > 0, name);
    assert.ok(ENV_VARS[name].defaultText.length > 0, name);
  }
});

test('unset or empty: the default', () => {
  for (const name of NAMES) {
    assert.equal(readEnv(name, {}), ENV_VARS[name].default, name);
    assert.equal(readEnv(name, { [name]: '' }), ENV_VARS[name].default, name);
  }
  assert.equal(readEnv('SVC_MAX_BODY_BYTES', {}), 32 * 1024 * 1024);
  assert.equal(readEnv('SVC_LOG_LEVEL', {}), 'info');
  assert.equal(readEnv('SVC_KERNELS', {}), 'native');
  assert.equal(readEnv('SVC_THREADS', {}), null);
});

test('set: parsed into its type', () => {
  assert.equal(readEnv('SVC_THREADS', { SVC_THREADS: '4' }), 4);
  assert.equal(readEnv('SVC_MAX_BODY_BYTES', { SVC_MAX_BODY_BYTES: '1024' }), 1024);
  assert.equal(readEnv('SVC_LOG_LEVEL', { SVC_LOG_LEVEL: 'debug' }), 'debug');
  assert.equal(readEnv('SVC_KERNELS', { SVC_KERNELS: 'reference' }), 'reference');
  assert.equal(readEnv('SVC_CPU_FEATURES', { SVC_CPU_FEATURES: 'avx2' }), 'avx2');
  assert.equal(readEnv('SVC_SPIN_US', { SVC_SPIN_US: '0' }), 0);
  assert.equal(readEnv('HF_HOME', { HF_HOME: '/x/hf' }), '/x/hf');
  assert.equal(readEnv('HF_HUB_CACHE', { HF_HUB_CACHE: '/x/hub' }), '/x/hub');
});

test('invalid: EnvError naming the variable, what it expects and what it got', () => {
  const invalid: [EnvName, string, RegExp][] = [
    ['SVC_MAX_BODY_BYTES', 'abc', /^SVC_MAX_BODY_BYTES: expected a positive integer, got "abc"$/],
    ['SVC_MAX_BODY_BYTES', '0', /^SVC_MAX_BODY_BYTES: expected a positive integer, got "0"$/],
    ['SVC_THREADS', '1.5', /^SVC_THREADS: expected an integer from 1 to 1024, got "1.5"$/],
    ['SVC_THREADS', '2000', /^SVC_THREADS: expected an integer from 1 to 1024, got "2000"$/],
    ['SVC_SPIN_US', '-1', /^SVC_SPIN_US: expected an integer ≥ 0, got "-1"$/],
    ['SVC_LOG_LEVEL', 'loud', /^SVC_LOG_LEVEL: expected one of trace, debug, info, warn, error, fatal, silent, got "loud"$/],
    ['SVC_KERNELS', 'fast', /^SVC_KERNELS: expected one of native, reference, got "fast"$/],
    ['SVC_CPU_FEATURES', 'sse', /^SVC_CPU_FEATURES: expected one of scalar, avx2, avx512, amx, got "sse"$/],
  ];
  for (const [name, raw, message] of invalid) {
    assert.throws(
      () => readEnv(name, { [name]: raw }),
      (err: unknown) => err instanceof EnvError && message.test(err.message),
      `${name}=${raw}`,
    );
  }
});

test('process.env is the default environment', () => {
  const before = process.env.SVC_LOG_LEVEL;
  process.env.SVC_LOG_LEVEL = 'warn';
  try {
    assert.equal(readEnv('SVC_LOG_LEVEL'), 'warn');
  } finally {
    if (before === undefined) delete process.env.SVC_LOG_LEVEL;
    else process.env.SVC_LOG_LEVEL = before;
  }
});
