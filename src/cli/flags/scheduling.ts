// The "Scheduling and caching" group of the flag table, in help and README order.
import { flag } from './spec.js';
import { choice, decimal, integer, switchFlag } from './values.js';

export const SCHEDULING_POLICIES = ['fifo', 'slai'] as const;

export const SCHEDULING_FLAGS = [
  flag({
    name: 'enable-prefix-caching',
    key: 'enablePrefixCaching',
    group: 'Scheduling and caching',
    value: switchFlag(true),
    default: false,
    help: 'Radix prefix cache plus state-space snapshot cache.',
    built: true,
  }),
  flag({
    name: 'ssm-cache-slots',
    key: 'ssmCacheSlots',
    group: 'Scheduling and caching',
    value: integer(1),
    default: 16,
    help: 'Recurrent-state snapshots kept for hybrid models (Qwen3.5) under --enable-prefix-caching: a prefix hit resumes from the latest one at or before it.',
    built: true,
  }),
  flag({
    name: 'ssm-checkpoint-interval',
    key: 'ssmCheckpointInterval',
    group: 'Scheduling and caching',
    value: integer(1),
    default: 256,
    help: "Blocks between recurrent-state snapshot checkpoints along a hybrid model's prompt (the prompt's last whole block is one too).",
    built: true,
  }),
  flag({
    name: 'scheduling-policy',
    key: 'schedulingPolicy',
    group: 'Scheduling and caching',
    value: choice(SCHEDULING_POLICIES, 'policy'),
    default: 'fifo',
    help: 'fifo, or slai (SLO-aware: keeps each decode step under --tbt-deadline-ms).',
    built: true,
  }),
  flag({
    name: 'tbt-deadline-ms',
    key: 'tbtDeadlineMs',
    group: 'Scheduling and caching',
    value: integer(1, undefined, 'ms'),
    default: 100,
    help: 'Decode-step deadline in milliseconds for --scheduling-policy slai.',
    built: true,
  }),
  flag({
    name: 'auto-compact',
    key: 'autoCompact',
    group: 'Scheduling and caching',
    value: decimal({ min: 0, minExclusive: true, max: 1 }, 'fraction'),
    default: undefined,
    defaultText: 'off',
    help: 'Compress the context once it passes this fraction of --max-seq-len (e.g. 0.85).',
    built: true,
  }),
] as const;
