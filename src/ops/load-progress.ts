// The "Loading weights" progress of `svc serve`: on a terminal one line rewritten in place (as
// llama.cpp and Ollama show it), otherwise an info record at every tenth of the bytes, so logs
// collected from a pipe get a few lines, not hundreds.
import type { Logger } from 'pino';
import type { LoadProgress } from '../model/types.js';

export interface ProgressOutput {
  isTTY?: boolean;
  write(s: string): unknown;
}

export interface LoadProgressReporter {
  update(p: LoadProgress): void;
  /** Ends the in-place line (the records that follow start on a line of their own). */
  done(): void;
}

const MIB = 2 ** 20;

export function describeProgress(p: LoadProgress): string {
  const pct = p.totalBytes > 0 ? Math.floor((100 * p.bytes) / p.totalBytes) : 100;
  return `Loading weights: ${p.tensors}/${p.totalTensors} tensors, ${(p.bytes / MIB).toFixed(0)}/${(p.totalBytes / MIB).toFixed(0)} MiB (${pct}%)`;
}

/** Reports to `out` when it is a terminal, else through `log`; silent below the info level. */
export function loadProgressReporter(log: Logger, out: ProgressOutput = process.stderr): LoadProgressReporter {
  const enabled = log.isLevelEnabled('info');
  let lineOpen = false;
  let tenth = -1;
  return {
    update(p) {
      if (!enabled) return;
      if (out.isTTY) {
        out.write(`\r${describeProgress(p)}\x1b[K`);
        lineOpen = true;
        return;
      }
      const t = p.totalBytes > 0 ? Math.floor((10 * p.bytes) / p.totalBytes) : 10;
      if (t === tenth) return;
      tenth = t;
      log.info(describeProgress(p));
    },
    done() {
      if (lineOpen) out.write('\n');
      lineOpen = false;
    },
  };
}
