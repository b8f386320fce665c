// The process logger: pino, written to stderr as one line per record that begins with the
// message (so the readiness marker is a line beginning "Listening on"), followed by the
// record's fields as JSON when it has any.
import { pino, type Logger } from 'pino';
import { readEnv } from '../common/env.js';

const LEVELS: Record<number, string> = { 10: 'trace', 20: 'debug', 30: 'info', 40: 'warn', 50: 'error', 60: 'fatal' };

/** Formats pino's JSON record as `message {fields}`; warnings and errors are prefixed. */
export function formatRecord(json: string): string {
  const rec = JSON.parse(json) as Record<string, unknown>;
  const { level, msg, time: _time, ...fields } = rec;
  const levelName = LEVELS[level as number] ?? 'info';
  const prefix = levelName === 'warn' ? 'warning: ' : levelName === 'error' || levelName === 'fatal' ? 'error: ' : '';
  const rest = Object.keys(fields).length > 0 ? ` ${JSON.stringify(fields)}` : '';
  return `${prefix}${String(msg ?? '')}${rest}\n`;
}

/** The logger at `level` (default SVC_LOG_LEVEL), writing formatted records to `write` (default stderr). */
export function createLogger(
  level: string = readEnv('SVC_LOG_LEVEL'),
  write: (s: string) => unknown = (s) => process.stderr.write(s),
): Logger {
  return pino({ level, base: null, timestamp: false }, { write: (line: string) => void write(formatRecord(line)) });
}
