// `svc` as a user runs it, for end-to-end tests: a child process of bin/svc.js whose stderr is
// collected, ready when a pattern shows up there (or when it exits), and a free loopback port.
import { spawn } from 'node:child_process';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { REPO_ROOT } from './paths.js';

export const BIN = join(REPO_ROOT, 'bin', 'svc.js');

export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer();
    s.once('error', reject);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => resolve(port));
    });
  });
}

/** Runs svc with args; `ready` resolves when `until` matches stderr (or on exit). */
export function runSvc(args: string[], until?: RegExp, env?: NodeJS.ProcessEnv) {
  const child = spawn(process.execPath, [BIN, ...args], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...env } });
  let stderr = '';
  let stdout = '';
  child.stdout.on('data', (d) => (stdout += d));
  const exited = new Promise<number | null>((resolve) => child.on('exit', (code) => resolve(code)));
  const ready = new Promise<void>((resolve) => {
    child.stderr.on('data', (d) => {
      stderr += d;
      if (until && until.test(stderr)) resolve();
    });
    void exited.then(() => resolve());
  });
  return { child, ready, exited, output: () => ({ stderr, stdout }) };
}
