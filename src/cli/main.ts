// Process entry of `svc` (bin/svc.js imports this): maps a ParseResult to stdout, stderr and
// an exit code, refuses unbuilt capabilities, then hands the Config, as ServeOptions, to the server.
import { readFileSync } from 'node:fs';
import { parseArgs, USAGE_EXIT_CODE } from './parse.js';
import { checkImplemented } from './config.js';
import { toExpertRankOptions, toServeOptions } from './serve-options.js';

/** The version of the package this file ships in (dist/src/cli/main.js → package.json). */
function packageVersion(): string {
  const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8')) as {
    version: string;
  };
  return pkg.version;
}

async function main(argv: readonly string[]): Promise<number> {
  const result = parseArgs(argv);
  if (result.kind === 'help') {
    process.stdout.write(result.text);
    return 0;
  }
  if (result.kind === 'version') {
    process.stdout.write(`${packageVersion()}\n`);
    return 0;
  }
  if (result.kind === 'parse') {
    const { runParse } = await import('./parse-command.js');
    return runParse(
      result.options,
      readFileSync(0, 'utf8'),
      (line) => process.stdout.write(`${line}\n`),
      (line) => process.stderr.write(`${line}\n`),
    );
  }

  for (const warning of result.warnings) process.stderr.write(`${warning}\n`);
  if (result.kind === 'error') {
    process.stderr.write(`${result.message}\n`);
    return result.exitCode;
  }

  const unbuilt = checkImplemented(result.config);
  if (unbuilt !== undefined) {
    process.stderr.write(`${unbuilt}\n`);
    return USAGE_EXIT_CODE;
  }

  // --rank 1: an expert worker, no HTTP server (src/server/expert-rank.ts).
  if (result.config.rank > 0) {
    const { serveExpertRank } = await import('../server/expert-rank.js');
    await serveExpertRank(toExpertRankOptions(result.config));
    return 0;
  }

  // Loaded only now so that --help, --version and usage errors never pay for the server.
  const { serve } = await import('../server/serve.js');
  await serve(toServeOptions(result.config, argv));
  return 0;
}

try {
  process.exitCode = await main(process.argv.slice(2));
} catch (err) {
  process.stderr.write(`svc: ${err instanceof Error ? (err.stack ?? err.message) : String(err)}\n`);
  process.exitCode = 1;
}
