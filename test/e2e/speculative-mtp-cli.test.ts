// `svc serve --speculative` as a user runs it: a checkpoint without multi-token-prediction weights
// is a one-line start-up error (exit 1) saying so, before the server listens.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { freePort, runSvc } from '../helpers/svc-cli.js';
import { TINY_CHAT } from '../helpers/paths.js';

test('--speculative on a checkpoint without MTP weights: exit 1 naming what is missing', async () => {
  const svc = runSvc(['serve', '--model-from-path', TINY_CHAT, '--port', String(await freePort()), '--speculative']);
  assert.equal(await svc.exited, 1);
  const { stderr } = svc.output();
  assert.match(
    stderr,
    /has no multi-token-prediction weights \(num_nextn_predict_layers in config\.json \/ model\.layers\.\d+\.eh_proj\.weight\)/,
  );
  assert.doesNotMatch(stderr, /^Listening on/m);
});
