// The CLI's Config → the server's ServeOptions: which flag feeds which part of start-up.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { parseArgs, type ParseResult } from '../../src/cli/parse.js';
import { checkImplemented, type Config } from '../../src/cli/config.js';
import { toServeOptions } from '../../src/cli/serve-options.js';
import type { ServeOptions } from '../../src/server/serve.js';
import { packedCacheRoot } from '../../src/model/loaders/packed-cache.js';

function config(...argv: string[]): Config {
  const r = parseArgs(['serve', ...argv]);
  assert.equal(r.kind, 'serve', JSON.stringify(r));
  return (r as Extract<ParseResult, { kind: 'serve' }>).config;
}

test('defaults: a hub id, loopback:8888, the table defaults in app, engine and runtime', () => {
  const expected: ServeOptions = {
    model: { id: 'acme/tiny', path: undefined, cacheDir: undefined, servedName: undefined, demo: false },
    listen: { host: '127.0.0.1', port: 8888 },
    app: {
      defaultMinP: 0.08,
      defaultTopNSigma: 1,
      toolMaxTokens: 8192,
      requestTimeoutSec: 300,
      disableThinking: false,
      autoCompact: null,
      allowedHosts: [],
      allowedOrigins: [],
      profile: false,
      images: { allowPrivateUrls: false, maxBytes: 20 * 1024 * 1024, maxPixels: 32 * 1024 * 1024, maxImages: 16, fetchTimeoutSec: 10 },
    },
    engine: {
      fastLoad: true,
      packedCacheDir: packedCacheRoot(),
      kvCacheDtype: 'fp8',
      kvHighPrecisionLayers: 0,
      fp8KvCalibrationTokens: 0,
      maxSeqLen: undefined,
      maxBatchSize: 8,
      maxPrefillTokens: 8192,
      maxNumSeqs: 128,
      gpuMemoryUtilization: 0.9,
      oomGuardMb: 4096,
      enablePrefixCaching: false,
      ssmCacheSlots: 16,
      ssmCheckpointInterval: 256,
      swapSpaceBytes: 3 * 1024 ** 3,
      speculative: null,
      profile: false,
      adaptiveSampling: false,
      schedulingPolicy: 'fifo',
      tbtDeadlineMs: 100,
      expertParallel: null,
    },
    runtime: { toolCallParser: undefined, disableThinking: false, maxThinkingBudget: undefined },
    auth: null,
    dump: null,
    autoSwap: false,
  };
  // recipeSettings is a function (a Library recipe's flags parsed over the command line).
  const actual = toServeOptions(config('acme/tiny'));
  assert.equal(typeof actual.recipeSettings, 'function');
  assert.deepStrictEqual(actual, { ...expected, recipeSettings: actual.recipeSettings });
});

test('packed-weights cache: on by default in $XDG_CACHE_HOME/svc/packed; --packed-cache-dir moves it; --no-packed-cache and --no-fast-load turn it off', () => {
  assert.equal(toServeOptions(config('acme/tiny')).engine.packedCacheDir, packedCacheRoot());
  assert.equal(packedCacheRoot(undefined, { XDG_CACHE_HOME: '/xdg' }), '/xdg/svc/packed');
  assert.match(packedCacheRoot(undefined, {}), /\/\.cache\/svc\/packed$/);
  assert.equal(toServeOptions(config('acme/tiny', '--packed-cache-dir', '/pc')).engine.packedCacheDir, '/pc');
  assert.equal(toServeOptions(config('acme/tiny', '--packed-cache-dir', '/pc', '--no-packed-cache')).engine.packedCacheDir, null);
  assert.equal(toServeOptions(config('acme/tiny', '--no-fast-load')).engine.packedCacheDir, null);
});

test('model source, name and listen address', () => {
  const o = toServeOptions(
    config('--model-from-path', '/m/tiny.gguf', '--served-model-name', 'tiny', '--cache-dir', '/c', '--bind', '0.0.0.0', '--port', '9000'),
  );
  assert.deepStrictEqual(o.model, { id: undefined, path: '/m/tiny.gguf', cacheDir: '/c', servedName: 'tiny', demo: false });
  assert.deepStrictEqual(o.listen, { host: '0.0.0.0', port: 9000 });
});

test("limits reach the engine (the context length the app serves is the engine's, from the runtime)", () => {
  const o = toServeOptions(
    config(
      'acme/tiny',
      '--no-fast-load',
      '--kv-cache-dtype',
      'bf16',
      '--max-seq-len',
      '4096',
      '--max-batch-size',
      '4',
      '--max-prefill-tokens',
      '512',
      '--max-num-seqs',
      '16',
      '--gpu-memory-utilization',
      '0.5',
      '--oom-guard-mb',
      '0',
      '--enable-prefix-caching',
      '--swap-space-gb',
      '0.5',
      '--kv-high-precision-layers',
      'auto',
      '--scheduling-policy',
      'slai',
      '--tbt-deadline-ms',
      '40',
    ),
  );
  assert.deepStrictEqual(o.engine, {
    fastLoad: false,
    packedCacheDir: null,
    kvCacheDtype: 'bf16',
    kvHighPrecisionLayers: 2,
    fp8KvCalibrationTokens: 0,
    maxSeqLen: 4096,
    maxBatchSize: 4,
    maxPrefillTokens: 512,
    maxNumSeqs: 16,
    gpuMemoryUtilization: 0.5,
    oomGuardMb: 0,
    enablePrefixCaching: true,
    ssmCacheSlots: 16,
    ssmCheckpointInterval: 256,
    swapSpaceBytes: 512 * 1024 ** 2,
    speculative: null,
    profile: false,
    adaptiveSampling: false,
    schedulingPolicy: 'slai',
    tbtDeadlineMs: 40,
    expertParallel: null,
  });
  assert.equal('maxSeqLen' in o.app, false);
});

test('sampling defaults and timeouts go to the app; reasoning and tool settings to the app and runtime', () => {
  const o = toServeOptions(
    config(
      'acme/tiny',
      '--default-min-p',
      '0',
      '--default-top-n-sigma',
      '2.5',
      '--tool-max-tokens',
      '100',
      '--request-timeout',
      '0',
      '--disable-thinking',
      '--tool-call-parser',
      'llama3_json',
      '--max-thinking-budget',
      '64',
    ),
  );
  assert.deepStrictEqual(o.app, {
    defaultMinP: 0,
    defaultTopNSigma: 2.5,
    toolMaxTokens: 100,
    requestTimeoutSec: 0,
    disableThinking: true,
    autoCompact: null,
    allowedHosts: [],
    allowedOrigins: [],
    profile: false,
    images: { allowPrivateUrls: false, maxBytes: 20 * 1024 * 1024, maxPixels: 32 * 1024 * 1024, maxImages: 16, fetchTimeoutSec: 10 },
  });
  assert.deepStrictEqual(o.runtime, { toolCallParser: 'llama3_json', disableThinking: true, maxThinkingBudget: 64 });
});

test('--auto-compact: the fraction goes to the app (off: null)', () => {
  assert.equal(toServeOptions(config('acme/tiny', '--auto-compact', '0.8')).app.autoCompact, 0.8);
  assert.equal(toServeOptions(config('acme/tiny')).app.autoCompact, null);
});

test('image input flags go to the app', () => {
  const o = toServeOptions(
    config(
      'acme/tiny',
      '--allow-private-image-urls',
      '--max-image-bytes',
      '1000',
      '--max-image-pixels',
      '4096',
      '--max-images-per-request',
      '2',
      '--image-fetch-timeout',
      '3',
    ),
  );
  assert.deepStrictEqual(o.app.images, { allowPrivateUrls: true, maxBytes: 1000, maxPixels: 4096, maxImages: 2, fetchTimeoutSec: 3 });
  assert.equal(parseArgs(['serve', 'acme/tiny', '--max-image-bytes', '0']).kind, 'error');
});

test('--allowed-hosts and --allowed-origins: comma lists, repeatable, in order; malformed entries refused', () => {
  const o = toServeOptions(
    config(
      'acme/tiny',
      '--allowed-hosts',
      'my.box,.corp.example',
      '--allowed-hosts',
      'proxy:8080',
      '--allowed-origins',
      'http://localhost:3000',
    ),
  );
  assert.deepStrictEqual(o.app.allowedHosts, ['my.box', '.corp.example', 'proxy:8080']);
  assert.deepStrictEqual(o.app.allowedOrigins, ['http://localhost:3000']);
  assert.deepStrictEqual(toServeOptions(config('acme/tiny', '--allowed-origins', '*')).app.allowedOrigins, ['*']);
  for (const [flag, value] of [
    ['--allowed-hosts', 'a,,b'],
    ['--allowed-hosts', 'http://x'],
    ['--allowed-origins', 'localhost:3000'],
    ['--allowed-origins', 'http://x/path'],
  ]) {
    assert.equal(parseArgs(['serve', 'acme/tiny', flag!, value!]).kind, 'error', `${flag} ${value}`);
  }
});

test('every KV dtype name reaches the engine as it is, with the high-precision layers and calibration', () => {
  const o = toServeOptions(
    config('acme/tiny', '--kv-cache-dtype', 'bf16k_turbo3v', '--kv-high-precision-layers', 'max', '--fp8-kv-calibration-tokens', '512'),
  );
  assert.equal(o.engine.kvCacheDtype, 'bf16k_turbo3v');
  assert.equal(o.engine.kvHighPrecisionLayers, 'all');
  assert.equal(o.engine.fp8KvCalibrationTokens, 512);
});

test('auth: --require-auth gives every --auth-token in order and the tokens file (read later, by serve); off: null', () => {
  const o = toServeOptions(
    config('acme/tiny', '--require-auth', '--auth-token', 'k1', '--auth-tokens-file', '/etc/svc/keys', '--auth-token', 'k2'),
  );
  assert.deepStrictEqual(o.auth, { tokens: ['k1', 'k2'], tokensFile: '/etc/svc/keys' });
  assert.deepStrictEqual(toServeOptions(config('acme/tiny', '--require-auth', '--auth-tokens-file', '/k')).auth, {
    tokens: [],
    tokensFile: '/k',
  });
  // Keys without --require-auth do nothing (the parser warns).
  assert.equal(toServeOptions(config('acme/tiny', '--auth-token', 'k1')).auth, null);
});

test('speculative decoding: the drafter by precedence (n-gram, self, MTP) with its draft count and MTP settings', () => {
  const engine = (...flags: string[]) => toServeOptions(config('m', ...flags)).engine.speculative;
  assert.equal(engine(), null);
  assert.deepEqual(engine('--ngram-speculative', '--num-drafts', '4'), {
    mode: 'ngram',
    numDrafts: 4,
    mtpQuantization: 'bf16',
    mtpVocab: 100000,
  });
  assert.equal(engine('--speculative', '--self-speculative', '--ngram-speculative')?.mode, 'ngram');
  assert.equal(engine('--speculative', '--self-speculative')?.mode, 'self');
  assert.deepEqual(engine('--speculative', '--mtp-vocab', '0', '--mtp-quantization', 'fp8'), {
    mode: 'mtp',
    numDrafts: 1,
    mtpQuantization: 'fp8',
    mtpVocab: 0,
  });
});

test('operations: --profile reaches the engine and the app (its route), --adaptive-sampling the engine, --dump the server', () => {
  const o = toServeOptions(config('acme/tiny', '--profile', '--adaptive-sampling', '--dump', '/var/tmp/svc-dump'));
  assert.equal(o.engine.profile, true);
  assert.equal(o.app.profile, true);
  assert.equal(o.engine.adaptiveSampling, true);
  assert.equal(o.dump, '/var/tmp/svc-dump');
  // Built: they start (no "not implemented yet").
  assert.equal(checkImplemented(config('acme/tiny', '--profile', '--adaptive-sampling', '--dump', '/tmp/d')), undefined);
});
