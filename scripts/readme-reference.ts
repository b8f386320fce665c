// Renders the README's generated reference sections: the flags (from the flag table,
// src/cli/flags/, one Markdown table per group) and the environment variables (from ENV_VARS,
// src/common/env.ts). `node dist/scripts/readme-reference.js` prints them; with `--write` it
// replaces the text between each section's markers in README.md. The unit test
// readme-reference.test.ts fails when the README and the tables disagree.
import { readFileSync, writeFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { FLAGS, GROUPS, builtLabel, defaultLabel, flagLabel, type FlagSpec } from '../src/cli/flags/index.js';
import { ENV_VARS, type EnvVarSpec } from '../src/common/env.js';

/** dist/scripts/readme-reference.js → the repository's README.md. */
export const README_PATH = resolve(fileURLToPath(import.meta.url), '..', '..', '..', 'README.md');

/** A generated part of the README: the text between `begin` and `end`. */
export interface ReadmeSection {
  readonly begin: string;
  readonly end: string;
  /** What sits between the markers, ending with a newline. */
  render(): string;
}

const REGENERATE = 'run `node dist/scripts/readme-reference.js --write`; do not edit by hand.';

/** A table cell: pipes escaped, and `<...>` outside code spans escaped so Markdown shows it. */
function cell(text: string): string {
  return text
    .split(/(`[^`]*`)/)
    .map((part) => (part.startsWith('`') ? part : part.replace(/</g, '&lt;').replace(/>/g, '&gt;')))
    .join('')
    .replace(/\|/g, '\\|');
}

function flagRow(r: FlagSpec<string, unknown>): string {
  const value = r.value.takesValue && !r.positional ? ` <${r.value.placeholder}>` : '';
  const flag = `\`${flagLabel(r)}${value}\`${r.positional ? ' (positional)' : ''}`;
  const aliases = (r.aliases ?? []).map((a) => `\`--${a}\``).join(', ');
  const meaning = r.value.takesValue && r.value.documented ? `${r.help} Value: ${r.value.expected}.` : r.help;
  return `| ${[flag, aliases, defaultLabel(r), meaning, builtLabel(r)].map(cell).join(' | ')} |`;
}

/** The flag reference: one table per group, in GROUPS order. */
export function renderFlagReference(): string {
  const out = ['', `<!-- Generated from src/cli/flags/: ${REGENERATE} -->`];
  for (const group of GROUPS) {
    out.push('', `### ${group}`, '', '| Flag | Aliases | Default | Meaning | Status |', '|---|---|---|---|---|');
    for (const r of FLAGS as readonly FlagSpec<string, unknown>[]) if (r.group === group) out.push(flagRow(r));
  }
  out.push('');
  return `${out.join('\n')}\n`;
}

/** The environment-variable reference: one row per ENV_VARS entry, in table order. */
export function renderEnvReference(): string {
  const out = ['', `<!-- Generated from src/common/env.ts: ${REGENERATE} -->`, '', '| Variable | Default | Meaning |', '|---|---|---|'];
  for (const v of Object.values(ENV_VARS) as EnvVarSpec<unknown>[]) {
    out.push(`| ${[`\`${v.name}\``, v.defaultText, v.doc].map(cell).join(' | ')} |`);
  }
  out.push('');
  return `${out.join('\n')}\n`;
}

export const FLAG_SECTION: ReadmeSection = { begin: '<!-- flags:begin -->', end: '<!-- flags:end -->', render: renderFlagReference };
export const ENV_SECTION: ReadmeSection = { begin: '<!-- env:begin -->', end: '<!-- env:end -->', render: renderEnvReference };
export const SECTIONS: readonly ReadmeSection[] = [ENV_SECTION, FLAG_SECTION];

/** The text between the section's markers, or undefined when the README lacks them. */
export function extractSection(readme: string, section: ReadmeSection): string | undefined {
  const begin = readme.indexOf(section.begin);
  const end = readme.indexOf(section.end, begin);
  if (begin < 0 || end < 0) return undefined;
  return readme.slice(begin + section.begin.length, end);
}

/** The README with the section's text replaced by `text`; throws when the markers are missing. */
export function replaceSection(readme: string, section: ReadmeSection, text: string): string {
  const begin = readme.indexOf(section.begin);
  const end = readme.indexOf(section.end, begin);
  if (begin < 0 || end < 0) throw new Error(`README has no ${section.begin} ... ${section.end} section`);
  return readme.slice(0, begin + section.begin.length) + text + readme.slice(end);
}

function main(args: readonly string[]): void {
  if (!args.includes('--write')) {
    for (const section of SECTIONS) process.stdout.write(section.render());
    return;
  }
  let readme = readFileSync(README_PATH, 'utf8');
  for (const section of SECTIONS) readme = replaceSection(readme, section, section.render());
  writeFileSync(README_PATH, readme);
  process.stdout.write(`updated the environment-variable and flag references in ${README_PATH}\n`);
}

// Run only as a script, not when the test imports the functions above.
if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  main(process.argv.slice(2));
}
