// The per-key rate limiter (src/ops/rate-limiter.ts) on a hand-driven clock: bursts, refill to
// the millisecond, Retry-After, per-key buckets, token admission and settlement (debt), the
// bounded key table, and the SVC_RATE_LIMIT_* settings.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { ApiError } from '../../src/common/api-error.js';
import { EnvError } from '../../src/common/env.js';
import { MAX_KEYS, RateLimitConfigError, RateLimiter, rateLimitsFromEnv, type RateLimits } from '../../src/ops/rate-limiter.js';

/** A limiter whose clock is `clock.t` (ms). */
function limiter(limits: Partial<RateLimits>, maxKeys?: number) {
  const clock = { t: 0 };
  const l = new RateLimiter({ rpm: 0, tpm: 0, burstRpm: 0, burstTpm: 0, ...limits }, { now: () => clock.t, maxKeys });
  return { l, clock };
}

/** The Retry-After seconds of the 429 `fn` throws (asserting its shape), or 0 when it passes. */
function retryAfter(fn: () => void): number {
  try {
    fn();
    return 0;
  } catch (err) {
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.status, 429);
    assert.equal(err.code, 'rate_limit_exceeded');
    const s = Number(err.headers['retry-after']);
    assert.ok(Number.isInteger(s) && s >= 1, `Retry-After: ${err.headers['retry-after']}`);
    return s;
  }
}

test('requests: a full burst at once, then 429 with Retry-After until one has refilled', () => {
  // 60/min = one per second; a bucket of 3.
  const { l, clock } = limiter({ rpm: 60, burstRpm: 3 });
  for (let i = 0; i < 3; i++)
    assert.equal(
      retryAfter(() => l.admitRequest('a')),
      0,
      `request ${i + 1}`,
    );
  assert.equal(
    retryAfter(() => l.admitRequest('a')),
    1,
  );
  // A refused request takes nothing: the bucket still refills on time.
  clock.t = 999;
  assert.equal(
    retryAfter(() => l.admitRequest('a')),
    1,
  );
  clock.t = 1000;
  assert.equal(
    retryAfter(() => l.admitRequest('a')),
    0,
  );
  assert.equal(
    retryAfter(() => l.admitRequest('a')),
    1,
  );
  assert.equal(l.requestsAvailable('a'), 0);
});

test('requests: refill is exact and stops at the burst', () => {
  // 6/min = one per 10 s; Retry-After counts whole seconds, rounded up.
  const { l, clock } = limiter({ rpm: 6, burstRpm: 2 });
  l.admitRequest('a');
  l.admitRequest('a');
  assert.equal(
    retryAfter(() => l.admitRequest('a')),
    10,
  );
  clock.t = 2500;
  assert.equal(
    retryAfter(() => l.admitRequest('a')),
    8,
  ); // 7.5 s left
  assert.equal(l.requestsAvailable('a'), 0.25);
  clock.t = 10_000;
  assert.equal(l.requestsAvailable('a'), 1);
  // An hour idle: still only the burst.
  clock.t = 3_600_000;
  assert.equal(l.requestsAvailable('a'), 2);
  l.admitRequest('a');
  l.admitRequest('a');
  assert.equal(
    retryAfter(() => l.admitRequest('a')),
    10,
  );
});

test('requests: the burst defaults to the cap; the 429 names the limit, never the key', () => {
  const limits = rateLimitsFromEnv({ SVC_RATE_LIMIT_RPM: '2' })!;
  assert.deepEqual(limits, { rpm: 2, tpm: 0, burstRpm: 2, burstTpm: 0 });
  const { l } = limiter(limits);
  l.admitRequest('key:secret');
  l.admitRequest('key:secret');
  assert.throws(
    () => l.admitRequest('key:secret'),
    (err: ApiError) => {
      assert.equal(err.message, 'Rate limit reached for requests per minute (2/min, burst 2); retry in 30 s.');
      assert.deepEqual(err.headers, { 'retry-after': '30' });
      return true;
    },
  );
});

test('per key: each key has its own buckets', () => {
  const { l } = limiter({ rpm: 60, burstRpm: 1, tpm: 600, burstTpm: 100 });
  l.admitRequest('a');
  assert.equal(
    retryAfter(() => l.admitRequest('a')),
    1,
  );
  assert.equal(
    retryAfter(() => l.admitRequest('b')),
    0,
  );
  l.admitTokens('a', 100);
  assert.equal(
    retryAfter(() => l.admitTokens('a', 1)),
    1,
  );
  assert.equal(
    retryAfter(() => l.admitTokens('b', 100)),
    0,
  );
  assert.equal(l.tokensAvailable('c'), 100);
});

test('tokens: the prompt at admission, the generated tokens at settlement; debt delays the next admission', () => {
  // 600/min = 10 per second, a bucket of 100.
  const { l, clock } = limiter({ tpm: 600, burstTpm: 100 });
  const first = l.tokensFor('a');
  first.admit(60);
  assert.equal(l.tokensAvailable('a'), 40);
  // A second request's prompt does not fit: 10 tokens short = 1 s; nothing is taken.
  assert.equal(
    retryAfter(() => l.tokensFor('a').admit(50)),
    1,
  );
  assert.equal(l.tokensAvailable('a'), 40);
  // The first generated 70 tokens: 30 in debt.
  first.settle(70);
  assert.equal(l.tokensAvailable('a'), -30);
  first.settle(70); // only the first settlement counts
  assert.equal(l.tokensAvailable('a'), -30);
  // A 20-token prompt waits for the debt and itself: 50 tokens = 5 s.
  assert.equal(
    retryAfter(() => l.tokensFor('a').admit(20)),
    5,
  );
  clock.t = 4999;
  assert.equal(
    retryAfter(() => l.tokensFor('a').admit(20)),
    1,
  );
  clock.t = 5000;
  assert.equal(
    retryAfter(() => l.tokensFor('a').admit(20)),
    0,
  );
  assert.equal(l.tokensAvailable('a'), 0);
});

test('tokens: a refused generation (engine admission failed) gets its prompt back', () => {
  const { l } = limiter({ tpm: 600, burstTpm: 100 });
  const t = l.tokensFor('a');
  t.admit(30);
  assert.equal(l.tokensAvailable('a'), 70);
  t.refund();
  assert.equal(l.tokensAvailable('a'), 100);
  t.settle(0);
  assert.equal(l.tokensAvailable('a'), 100);
});

test('tokens: a prompt larger than the bucket is admitted only when it is full, and leaves it in debt', () => {
  const { l, clock } = limiter({ tpm: 600, burstTpm: 100 });
  l.admitTokens('a', 10);
  // 150 > 100: waits for a full bucket (10 tokens = 1 s), not forever.
  assert.equal(
    retryAfter(() => l.admitTokens('a', 150)),
    1,
  );
  clock.t = 1000;
  l.admitTokens('a', 150);
  assert.equal(l.tokensAvailable('a'), -50);
  // Back to full after 15 s (50 of debt + 100).
  assert.equal(
    retryAfter(() => l.admitTokens('a', 150)),
    15,
  );
});

test('both buckets: the request bucket and the token bucket count independently', () => {
  const { l, clock } = limiter({ rpm: 60, burstRpm: 2, tpm: 60, burstTpm: 10 });
  l.admitRequest('a');
  l.admitTokens('a', 10);
  // A request is still allowed, its prompt is not (1 token per second).
  l.admitRequest('a');
  assert.equal(
    retryAfter(() => l.admitTokens('a', 3)),
    3,
  );
  clock.t = 3000;
  l.admitTokens('a', 3);
  assert.equal(l.requestsAvailable('a'), 2);
});

test('key table: bounded; the least recently used key is dropped and comes back with full buckets', () => {
  assert.ok(MAX_KEYS >= 1000, 'the default bound leaves room for many clients');
  const { l } = limiter({ rpm: 60, burstRpm: 1 }, 3);
  for (const k of ['a', 'b', 'c']) l.admitRequest(k);
  assert.equal(l.size, 3);
  // Touching a (even a refused request) makes it the most recent; d then drops b.
  assert.equal(
    retryAfter(() => l.admitRequest('a')),
    1,
  );
  l.admitRequest('d');
  assert.equal(l.size, 3);
  assert.deepEqual(
    ['a', 'b', 'c', 'd'].map((k) => l.has(k)),
    [true, false, true, true],
  );
  // b starts over; that pushes out c, the least recent now.
  assert.equal(
    retryAfter(() => l.admitRequest('b')),
    0,
  );
  assert.deepEqual(
    ['a', 'b', 'c', 'd'].map((k) => l.has(k)),
    [true, true, false, true],
  );
  assert.equal(l.size, 3);
});

test('key table: the default bound is MAX_KEYS', () => {
  const { l } = limiter({ rpm: 60 });
  for (let i = 0; i < MAX_KEYS + 5; i++) l.admitRequest(`ip:10.0.${i >> 8}.${i & 255}`);
  assert.equal(l.size, MAX_KEYS);
  assert.ok(!l.has('ip:10.0.0.0') && l.has(`ip:10.0.${(MAX_KEYS + 4) >> 8}.${(MAX_KEYS + 4) & 255}`));
});

test('settings: off unless a cap is above 0; bursts default to the caps; contradictions and bad values are errors', () => {
  assert.equal(rateLimitsFromEnv({}), null);
  assert.equal(rateLimitsFromEnv({ SVC_RATE_LIMIT_RPM: '0', SVC_RATE_LIMIT_TPM: '0' }), null);
  assert.deepEqual(rateLimitsFromEnv({ SVC_RATE_LIMIT_TPM: '1000' }), { rpm: 0, tpm: 1000, burstRpm: 0, burstTpm: 1000 });
  assert.deepEqual(
    rateLimitsFromEnv({
      SVC_RATE_LIMIT_RPM: '60',
      SVC_RATE_LIMIT_TPM: '1000',
      SVC_RATE_LIMIT_BURST_RPM: '5',
      SVC_RATE_LIMIT_BURST_TPM: '4000',
    }),
    { rpm: 60, tpm: 1000, burstRpm: 5, burstTpm: 4000 },
  );
  assert.throws(() => rateLimitsFromEnv({ SVC_RATE_LIMIT_BURST_RPM: '5' }), RateLimitConfigError);
  assert.throws(() => rateLimitsFromEnv({ SVC_RATE_LIMIT_RPM: '60', SVC_RATE_LIMIT_BURST_TPM: '5' }), /SVC_RATE_LIMIT_BURST_TPM/);
  assert.throws(() => rateLimitsFromEnv({ SVC_RATE_LIMIT_RPM: '-1' }), EnvError);
  assert.throws(() => rateLimitsFromEnv({ SVC_RATE_LIMIT_RPM: '60', SVC_RATE_LIMIT_BURST_RPM: '0' }), EnvError);
});

test('a limiter with only tokens on admits every request; with only requests on, every prompt', () => {
  const tokensOnly = limiter({ tpm: 60, burstTpm: 1 }).l;
  for (let i = 0; i < 100; i++) tokensOnly.admitRequest('a');
  assert.equal(tokensOnly.requestsAvailable('a'), Infinity);
  const requestsOnly = limiter({ rpm: 1, burstRpm: 1 }).l;
  requestsOnly.admitTokens('a', 1e9);
  requestsOnly.tokensFor('a').settle(1e9);
  assert.equal(requestsOnly.tokensAvailable('a'), Infinity);
});
