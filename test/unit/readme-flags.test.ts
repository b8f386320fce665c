// The README's flag reference must be exactly what the flag table renders.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { BEGIN, END, README_PATH, extractFlagSection, renderFlagReference, replaceFlagSection } from '../../scripts/readme-flags.js';
import { FLAGS, type FlagSpec } from '../../src/cli/flags/index.js';

test('README flag reference matches the flag table', () => {
  const section = extractFlagSection(readFileSync(README_PATH, 'utf8'));
  assert.notEqual(section, undefined, `README.md lacks the ${BEGIN} ... ${END} markers`);
  assert.ok(
    section === renderFlagReference(),
    'README.md flag reference is out of date: run `npx tsc -p . && node dist/scripts/readme-flags.js --write`',
  );
});

test('rendering: one row per flag, pipes escaped; replace keeps the text around the markers', () => {
  const md = renderFlagReference();
  for (const row of FLAGS as readonly FlagSpec<string, unknown>[]) {
    // The flag cell is `--name` or `--name <value>`, so --auth-token never matches --auth-tokens-file.
    const flagCell = new RegExp(`^\\| \`${row.positional ? row.name : `--${row.name}`}[\` ]`);
    assert.equal(md.split('\n').filter((l) => flagCell.test(l)).length, 1, row.name);
  }
  assert.ok(md.includes('<n\\|auto\\|max\\|all>'));

  const readme = `# t\n\nbefore\n${BEGIN}\nstale\n${END}\nafter\n`;
  const updated = replaceFlagSection(readme, md);
  assert.equal(updated, `# t\n\nbefore\n${BEGIN}${md}${END}\nafter\n`);
  assert.equal(extractFlagSection(updated), md);
  assert.throws(() => replaceFlagSection('# no markers\n', md), /no <!-- flags:begin -->/);
});
