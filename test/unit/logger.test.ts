// The process logger (src/ops/logger.ts): one line per record, message first, level from
// SVC_LOG_LEVEL unless given.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { createLogger, formatRecord } from '../../src/ops/logger.js';

test('formatRecord: message, then fields as JSON; warnings and errors prefixed', () => {
  assert.equal(formatRecord('{"level":30,"time":1,"msg":"Listening on 127.0.0.1:8888"}'), 'Listening on 127.0.0.1:8888\n');
  assert.equal(formatRecord('{"level":40,"msg":"careful","a":1}'), 'warning: careful {"a":1}\n');
  assert.equal(formatRecord('{"level":50,"msg":"broken"}'), 'error: broken\n');
});

test('createLogger: records below the level are dropped', () => {
  const lines: string[] = [];
  const log = createLogger('warn', (s) => void lines.push(s));
  log.info('quiet');
  log.warn('loud');
  assert.deepEqual(lines, ['warning: loud\n']);
});

test('createLogger: the level defaults to SVC_LOG_LEVEL', () => {
  const before = process.env.SVC_LOG_LEVEL;
  process.env.SVC_LOG_LEVEL = 'debug';
  try {
    const lines: string[] = [];
    createLogger(undefined, (s) => void lines.push(s)).debug('seen');
    assert.deepEqual(lines, ['seen\n']);
  } finally {
    if (before === undefined) delete process.env.SVC_LOG_LEVEL;
    else process.env.SVC_LOG_LEVEL = before;
  }
});
