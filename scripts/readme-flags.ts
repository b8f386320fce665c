// Renders the README's flag reference from the flag table (src/cli/flags.ts), one Markdown
// table per spec group. `node dist/scripts/readme-flags.js` prints it; with `--write` it
// replaces the text between the README's flags markers in place. The unit test
// readme-flags.test.ts fails when the README and the table disagree.
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { FLAGS, GROUPS, builtLabel, defaultLabel, flagLabel, type FlagSpec } from '../src/cli/flags/index.js';

export const BEGIN = '<!-- flags:begin -->';
export const END = '<!-- flags:end -->';
/** dist/scripts/readme-flags.js → the repository's README.md. */
export const README_PATH = resolve(fileURLToPath(import.meta.url), '..', '..', '..', 'README.md');

/** A table cell: pipes escaped, and `<...>` outside code spans escaped so Markdown shows it. */
function cell(text: string): string {
  return text
    .split(/(`[^`]*`)/)
    .map((part) => (part.startsWith('`') ? part : part.replace(/</g, '&lt;').replace(/>/g, '&gt;')))
    .join('')
    .replace(/\|/g, '\\|');
}

function row(r: FlagSpec<string, unknown>): string {
  const value = r.value.takesValue && !r.positional ? ` <${r.value.placeholder}>` : '';
  const flag = `\`${flagLabel(r)}${value}\`${r.positional ? ' (positional)' : ''}`;
  const aliases = (r.aliases ?? []).map((a) => `\`--${a}\``).join(', ');
  const meaning = r.value.takesValue && r.value.documented ? `${r.help} Value: ${r.value.expected}.` : r.help;
  return `| ${[flag, aliases, defaultLabel(r), meaning, builtLabel(r)].map(cell).join(' | ')} |`;
}

/** The whole generated section (what sits between BEGIN and END), ending with a newline. */
export function renderFlagReference(): string {
  const out = ['', '<!-- Generated from src/cli/flags.ts: run `node dist/scripts/readme-flags.js --write`; do not edit by hand. -->'];
  for (const group of GROUPS) {
    out.push('', `### ${group}`, '', '| Flag | Aliases | Default | Meaning | Status |', '|---|---|---|---|---|');
    for (const r of FLAGS as readonly FlagSpec<string, unknown>[]) if (r.group === group) out.push(row(r));
  }
  out.push('');
  return `${out.join('\n')}\n`;
}

/** The text between the markers, or undefined when the README lacks them. */
export function extractFlagSection(readme: string): string | undefined {
  const begin = readme.indexOf(BEGIN);
  const end = readme.indexOf(END, begin);
  if (begin < 0 || end < 0) return undefined;
  return readme.slice(begin + BEGIN.length, end);
}

/** The README with its section replaced by `section`; throws when the markers are missing. */
export function replaceFlagSection(readme: string, section: string): string {
  const begin = readme.indexOf(BEGIN);
  const end = readme.indexOf(END, begin);
  if (begin < 0 || end < 0) throw new Error(`README has no ${BEGIN} ... ${END} section`);
  return readme.slice(0, begin + BEGIN.length) + section + readme.slice(end);
}

function main(args: readonly string[]): void {
  const reference = renderFlagReference();
  if (!args.includes('--write')) {
    process.stdout.write(reference);
    return;
  }
  const readme = readFileSync(README_PATH, 'utf8');
  writeFileSync(README_PATH, replaceFlagSection(readme, reference));
  process.stdout.write(`updated the flag reference in ${README_PATH}\n`);
}

// Run only as a script, not when the test imports the functions above.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main(process.argv.slice(2));
}
