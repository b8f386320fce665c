// Resolving hub ids against a Hugging Face cache tree built in a temp directory
// (blobs + symlinked snapshot files, like huggingface_hub writes them).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import { homedir, tmpdir } from 'node:os';
import { join } from 'node:path';
import { hubCacheRoot, resolveModel, resolveModelSource } from '../../src/model/hub-cache.js';

/** Cache root with models--org--name: two snapshots, files linked to blobs, optional refs/main. */
function makeCache(opts: { refMain?: string }): string {
  const root = mkdtempSync(join(tmpdir(), 'svc-hub-'));
  const repo = join(root, 'models--acme--tiny-llm');
  mkdirSync(join(repo, 'blobs'), { recursive: true });
  writeFileSync(join(repo, 'blobs', 'cfgblob'), '{"model_type":"llama"}');
  for (const rev of ['1111aaaa', '2222bbbb']) {
    const snap = join(repo, 'snapshots', rev);
    mkdirSync(snap, { recursive: true });
    symlinkSync(join('..', '..', 'blobs', 'cfgblob'), join(snap, 'config.json'));
  }
  // Make 1111aaaa the newest by modification time.
  utimesSync(join(repo, 'snapshots', '2222bbbb'), new Date(1_000_000), new Date(1_000_000));
  if (opts.refMain !== undefined) {
    mkdirSync(join(repo, 'refs'), { recursive: true });
    writeFileSync(join(repo, 'refs', 'main'), opts.refMain);
  }
  return root;
}

test('refs/main picks the snapshot; files are readable through the blob symlinks', () => {
  const root = makeCache({ refMain: '2222bbbb\n' });
  try {
    const dir = resolveModel('acme/tiny-llm', root, {});
    assert.equal(dir, join(root, 'models--acme--tiny-llm', 'snapshots', '2222bbbb'));
    assert.equal(JSON.parse(readFileSync(join(dir, 'config.json'), 'utf8')).model_type, 'llama');
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('without refs/main (or with a stale one) the newest snapshot is used', () => {
  const root = makeCache({});
  try {
    assert.equal(resolveModel('acme/tiny-llm', root, {}), join(root, 'models--acme--tiny-llm', 'snapshots', '1111aaaa'));
    mkdirSync(join(root, 'models--acme--tiny-llm', 'refs'));
    writeFileSync(join(root, 'models--acme--tiny-llm', 'refs', 'main'), 'deadbeef');
    assert.equal(resolveModel('acme/tiny-llm', root, {}), join(root, 'models--acme--tiny-llm', 'snapshots', '1111aaaa'));
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('cache root precedence: explicit dir, HF_HUB_CACHE, HF_HOME/hub, ~/.cache/huggingface/hub', () => {
  assert.equal(hubCacheRoot('/x/cache', { HF_HUB_CACHE: '/y', HF_HOME: '/z' }), '/x/cache');
  assert.equal(hubCacheRoot(undefined, { HF_HUB_CACHE: '/y', HF_HOME: '/z' }), '/y');
  assert.equal(hubCacheRoot(undefined, { HF_HOME: '/z' }), '/z/hub');
  assert.equal(hubCacheRoot(undefined, {}), join(homedir(), '.cache', 'huggingface', 'hub'));
  const root = makeCache({ refMain: '1111aaaa' });
  try {
    const home = mkdtempSync(join(tmpdir(), 'svc-hfhome-'));
    try {
      // HF_HOME points at a cache whose hub/ is our tree (via a symlink).
      symlinkSync(root, join(home, 'hub'));
      assert.equal(
        resolveModel('acme/tiny-llm', undefined, { HF_HOME: home }),
        join(home, 'hub', 'models--acme--tiny-llm', 'snapshots', '1111aaaa'),
      );
      assert.equal(
        resolveModel('acme/tiny-llm', undefined, { HF_HUB_CACHE: root, HF_HOME: '/nonexistent' }),
        join(root, 'models--acme--tiny-llm', 'snapshots', '1111aaaa'),
      );
    } finally {
      rmSync(home, { recursive: true, force: true });
    }
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('a missing model lists every path searched; malformed ids are rejected', () => {
  const root = makeCache({});
  try {
    assert.throws(
      () => resolveModel('acme/other', root, {}),
      (err: Error) => {
        assert.match(err.message, /model "acme\/other" not found/);
        assert.ok(err.message.includes(join(root, 'models--acme--other', 'refs', 'main')));
        assert.ok(err.message.includes(join(root, 'models--acme--other', 'snapshots')));
        return true;
      },
    );
    assert.throws(() => resolveModel('no-slash', root, {}), /not of the form org\/name/);
    assert.throws(() => resolveModel('../etc', root, {}), /not of the form org\/name/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});

test('resolveModelSource: --model-from-path wins, else the id via the cache, else an error', () => {
  const root = makeCache({ refMain: '2222bbbb' });
  try {
    const file = join(root, 'm.gguf');
    writeFileSync(file, 'x');
    assert.equal(resolveModelSource('acme/tiny-llm', file, root, {}), file);
    assert.equal(resolveModelSource(undefined, root, undefined, {}), root);
    assert.equal(resolveModelSource('acme/tiny-llm', undefined, root, {}), join(root, 'models--acme--tiny-llm', 'snapshots', '2222bbbb'));
    assert.throws(() => resolveModelSource(undefined, join(root, 'missing.gguf'), root, {}), /missing\.gguf: no such file/);
    assert.throws(() => resolveModelSource(undefined, undefined, root, {}), /no model given/);
  } finally {
    rmSync(root, { recursive: true, force: true });
  }
});
