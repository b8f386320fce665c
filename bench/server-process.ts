// What the two HTTP engines (svc, llama-server) share as child processes: a free port, the tail
// of their output for error messages, the load measurements (spawn → ready, peak RSS while
// loading), a streamed POST and a clean stop.
import type { ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { request, type IncomingMessage } from 'node:http';
import { createServer } from 'node:net';

export async function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const srv = createServer();
    srv.once('error', fail);
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      const port = typeof addr === 'object' && addr ? addr.port : 0;
      srv.close(() => ok(port));
    });
  });
}

/** Keeps the last few KB of the child's output for error messages. */
export class OutputTail {
  private text = '';
  add(chunk: string): void {
    this.text = (this.text + chunk).slice(-8192);
  }
  toString(): string {
    return this.text.trim();
  }
}

/** How long a server took from spawn to serving, and its resident-memory high-water mark then. */
export interface LoadStats {
  ms: number;
  /** VmHWM of the process right after it became ready: the peak RSS of loading (NaN if unreadable). */
  peakRssBytes: number;
}

/** VmHWM (peak resident set) of a live process, from /proc (Linux); NaN elsewhere. */
export function peakRssBytes(pid: number | undefined): number {
  if (pid === undefined) return NaN;
  try {
    const m = /^VmHWM:\s+(\d+) kB$/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : NaN;
  } catch {
    return NaN;
  }
}

export function hasExited(child: ChildProcess): boolean {
  return child.exitCode !== null || child.signalCode !== null;
}

export async function stopServer(child: ChildProcess): Promise<void> {
  if (hasExited(child)) return;
  const exited = new Promise<void>((ok) => child.once('exit', () => ok()));
  child.kill('SIGTERM');
  const timer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(timer);
}

/**
 * POSTs JSON on a fresh connection and resolves with the 200 response (anything else rejects with
 * its body). No keep-alive pool: a pooled socket that llama-server's HTTP library has just closed
 * fails the next request. Node's http client has no response timeout, unlike fetch (undici: 300 s
 * to the headers and between body chunks), which a 32k-token prefill can outlast.
 */
export async function postJson(url: string, body: string, server: string): Promise<IncomingMessage> {
  return new Promise((ok, fail) => {
    const req = request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json' } }, (res) => {
      if (res.statusCode === 200) return ok(res);
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (c: string) => (text += c));
      res.on('end', () => fail(new Error(`${server} ${new URL(url).pathname}: HTTP ${res.statusCode}: ${text}`)));
    });
    req.once('error', (err) => fail(new Error(`${server} ${new URL(url).pathname}: ${err.message}`, { cause: err })));
    req.end(body);
  });
}
