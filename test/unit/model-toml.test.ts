import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { findModelToml, loadRegistry, parseModelToml } from '../../src/model/model-toml.js';
import { TINY_CHAT } from '../helpers/paths.js';

test('registry entries all parse and name a tool-call parser', () => {
  const reg = loadRegistry();
  assert.ok(reg.length >= 8);
  for (const e of reg) assert.ok(e.model.toolCallParser, `${e.source} has a parser`);
});

test('svc-tiny-chat resolves to the qwen3 entry: hermes + reasoning', () => {
  const t = findModelToml(TINY_CHAT, 'qwen3', 'svc-tiny-chat');
  assert.ok(t);
  assert.equal(t.model.toolCallParser, 'hermes');
  assert.equal(t.model.reasoning, true);
  assert.equal(t.sampling.temperature, 0.6);
});

test('longest name pattern wins over architecture', () => {
  const t = findModelToml('/nowhere/Qwen3-Coder-30B', 'qwen3', 'Qwen/Qwen3-Coder-30B-A3B-Instruct');
  assert.equal(t?.model.toolCallParser, 'fam1_coder');
  const byArch = findModelToml('/nowhere/x', 'mistral', 'some-finetune');
  assert.equal(byArch?.model.family, 'mistral');
  assert.equal(findModelToml('/nowhere/x', 'unknown-arch', 'nothing'), null);
});

test('a MODEL.toml beside the checkpoint wins and is validated', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-modeltoml-'));
  writeFileSync(
    join(dir, 'MODEL.toml'),
    '[model]\nfamily = "custom"\ntool_call_parser = "pythonic"\nreasoning = false\n[recipes.fast]\nmax-batch-size = 4\n',
  );
  const t = findModelToml(dir, 'qwen3', 'Qwen3-8B');
  assert.equal(t?.model.family, 'custom');
  assert.equal(t?.model.toolCallParser, 'pythonic');
  assert.deepEqual(t?.recipes.fast, { 'max-batch-size': 4 });
  assert.throws(() => parseModelToml('[model]\nreasoning = "yes"\n', 'X.toml'), /X.toml: \[model\]: reasoning must be a boolean/);
  assert.throws(() => parseModelToml('[model\n', 'Y.toml'), /Y.toml: invalid TOML/);
});
