// The README's generated sections must be exactly what the flag table and the
// environment-variable table render.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import {
  ENV_SECTION,
  FLAG_SECTION,
  README_PATH,
  SECTIONS,
  extractSection,
  renderEnvReference,
  renderFlagReference,
  replaceSection,
} from '../../scripts/readme-reference.js';
import { FLAGS, type FlagSpec } from '../../src/cli/flags/index.js';
import { ENV_VARS } from '../../src/common/env.js';

test('README flag and environment-variable references match their tables', () => {
  const readme = readFileSync(README_PATH, 'utf8');
  for (const section of SECTIONS) {
    const text = extractSection(readme, section);
    assert.notEqual(text, undefined, `README.md lacks the ${section.begin} ... ${section.end} markers`);
    assert.ok(
      text === section.render(),
      `README.md ${section.begin} section is out of date: run \`npx tsc -p . && node dist/scripts/readme-reference.js --write\``,
    );
  }
});

test('flag rendering: one row per flag, pipes escaped; replace keeps the text around the markers', () => {
  const md = renderFlagReference();
  for (const row of FLAGS as readonly FlagSpec<string, unknown>[]) {
    // The flag cell is `--name` or `--name <value>`, so --auth-token never matches --auth-tokens-file.
    const flagCell = new RegExp(`^\\| \`${row.positional ? row.name : `--${row.name}`}[\` ]`);
    assert.equal(md.split('\n').filter((l) => flagCell.test(l)).length, 1, row.name);
  }
  assert.ok(md.includes('<n\\|auto\\|max\\|all>'));

  const { begin, end } = FLAG_SECTION;
  const readme = `# t\n\nbefore\n${begin}\nstale\n${end}\nafter\n`;
  const updated = replaceSection(readme, FLAG_SECTION, md);
  assert.equal(updated, `# t\n\nbefore\n${begin}${md}${end}\nafter\n`);
  assert.equal(extractSection(updated, FLAG_SECTION), md);
  assert.throws(() => replaceSection('# no markers\n', FLAG_SECTION, md), /no <!-- flags:begin -->/);
});

test('environment rendering: one row per variable with its default and meaning', () => {
  const md = renderEnvReference();
  for (const v of Object.values(ENV_VARS)) {
    const rows = md.split('\n').filter((l) => l.startsWith(`| \`${v.name}\` |`));
    assert.equal(rows.length, 1, v.name);
    assert.ok(rows[0].includes(v.doc.replace(/\|/g, '\\|')), v.name);
  }
  // Both sections live in one README and are replaced independently.
  const readme = `${ENV_SECTION.begin}\nold env\n${ENV_SECTION.end}\n${FLAG_SECTION.begin}\nold flags\n${FLAG_SECTION.end}\n`;
  const updated = replaceSection(readme, ENV_SECTION, md);
  assert.equal(extractSection(updated, ENV_SECTION), md);
  assert.equal(extractSection(updated, FLAG_SECTION), '\nold flags\n');
});
