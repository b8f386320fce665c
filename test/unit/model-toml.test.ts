import { test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { isToolCallParserName } from '../../src/chat/tool-formats/registry.js';
import type { RunningEngine } from '../../src/engine/engine-client.js';
import { findModelToml, loadRegistry, parseModelToml } from '../../src/model/model-toml.js';
import { createModelRuntime } from '../../src/server/runtime.js';
import { ARCHITECTURES } from '../../src/model/architectures/index.js';
import { TINY_CHAT } from '../helpers/paths.js';

test('registry entries all parse and name a tool-call parser', () => {
  const reg = loadRegistry();
  assert.ok(reg.length >= 6);
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

test("SmolLM2 (a Llama checkpoint) finds its entry by the served name, or else by the checkpoint's own name", () => {
  assert.equal(findModelToml('/nowhere/x', 'llama', 'HuggingFaceTB/SmolLM2-135M-Instruct')?.model.family, 'smollm2');
  assert.equal(findModelToml('/models/SmolLM2-360M-Instruct-Q8_0.gguf', 'llama', 'bot')?.model.family, 'smollm2');
  // --served-model-name bot: the checkpoint's _name_or_path / general.name still says what it is.
  assert.equal(findModelToml('/nowhere/x', 'llama', 'bot', { checkpointName: 'SmolLM2 135M Instruct' })?.model.family, 'smollm2');
  // The served name comes first; the architecture last.
  assert.equal(findModelToml('/nowhere/x', 'llama', 'llama-3-bot', { checkpointName: 'SmolLM2 135M' })?.model.family, 'llama');
  assert.equal(findModelToml('/nowhere/x', 'llama', 'bot', { checkpointName: null })?.model.family, 'llama');
});

test('registry entries match only architectures svc runs', () => {
  // An entry matches by architecture (one the loader runs) or by name; names alone are enough for
  // families of a supported architecture (qwen3-coder, smollm2).
  const supported = new Set(ARCHITECTURES.map((a) => a.name));
  for (const e of loadRegistry()) {
    for (const a of e.match.architectures) assert.ok(supported.has(a), `${e.source}: architecture ${a} is not one svc runs`);
  }
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

test('every MODEL.toml key is known and every value has its type: errors name the file and the key', () => {
  const bad: [string, RegExp][] = [
    ['[model]\ntool_call_parser = 3\n', /X.toml: \[model\]: tool_call_parser must be a string/],
    ['[model]\nreasonning = true\n', /X.toml: \[model\]: unknown key reasonning/],
    ['[model]\ndefault_num_drafts = 1.5\n', /X.toml: \[model\]: default_num_drafts must be a positive integer/],
    ['[model]\nmax_thinking_budget = -1\n', /X.toml: \[model\]: max_thinking_budget must be a non-negative integer/],
    ['[model]\nreasoning_format = "channels"\n', /X.toml: \[model\]: reasoning_format must be one of think, mistral, gemma4, harmony/],
    ['[model]\nreasoning_format = true\n', /X.toml: \[model\]: reasoning_format must be one of think, mistral, gemma4, harmony/],
    ['[sampling]\ntemprature = 0.6\n', /X.toml: \[sampling\]: unknown key temprature/],
    ['[sampling]\ntemperature = "hot"\n', /X.toml: \[sampling\] temperature must be a number/],
    ['[match]\nname_pattern = ["x"]\n', /X.toml: \[match\]: unknown key name_pattern/],
    ['[modle]\nfamily = "x"\n', /X.toml: unknown table \[modle\]/],
    ['[recipes.fast]\nmax-batch-size = [4]\n', /X.toml: \[recipes.fast\] max-batch-size must be a string, number or boolean/],
  ];
  for (const [text, error] of bad) assert.throws(() => parseModelToml(text, 'X.toml'), error, text);
});

test('reasoning_format: think by default, else the format the file names; the registry gives Magistral [THINK]', () => {
  assert.equal(parseModelToml('[model]\nreasoning = true\n', 'X.toml').model.reasoningFormat, 'think');
  for (const name of ['think', 'mistral', 'gemma4'])
    assert.equal(parseModelToml(`[model]\nreasoning_format = "${name}"\n`, 'X.toml').model.reasoningFormat, name);
  const magistral = findModelToml('/nowhere/x', 'mistral', 'mistralai/Magistral-Small-2507');
  assert.equal(magistral?.model.family, 'magistral');
  assert.equal(magistral?.model.reasoning, true);
  assert.equal(magistral?.model.reasoningFormat, 'mistral');
  assert.equal(findModelToml(TINY_CHAT, 'qwen3', 'svc-tiny-chat')?.model.reasoningFormat, 'think');
});

test('registry entries name tool-call parsers that exist', () => {
  for (const e of loadRegistry()) assert.ok(isToolCallParserName(e.model.toolCallParser ?? ''), `${e.source}: ${e.model.toolCallParser}`);
});

test('a tool_call_parser no format has is a start-up error naming the file and key, not a 500 per request', () => {
  const dir = mkdtempSync(join(tmpdir(), 'svc-modeltoml-'));
  writeFileSync(join(dir, 'MODEL.toml'), '[model]\ntool_call_parser = "hermez"\n');
  // Only the engine's model config is read before the parser is checked.
  const engine = { info: { config: { architecture: 'qwen3', eosTokenIds: [] } } } as unknown as RunningEngine;
  const settings = { disableThinking: false };
  const named = `${join(dir, 'MODEL.toml')}: [model]: tool_call_parser: unknown tool-call parser 'hermez' (known: hermes, fam1_coder, `;
  assert.throws(
    () => createModelRuntime(dir, 'm', engine, settings),
    (err: Error) => err.message.startsWith(named),
  );
  // The flag does not hide a typo in the file.
  assert.throws(() => createModelRuntime(dir, 'm', engine, { ...settings, toolCallParser: 'hermes' }), /tool_call_parser: unknown/);
  writeFileSync(join(dir, 'MODEL.toml'), '[model]\nfamily = "x"\n');
  assert.throws(
    () => createModelRuntime(dir, 'm', engine, { ...settings, toolCallParser: 'nope' }),
    /--tool-call-parser: unknown tool-call parser 'nope'/,
  );
});
