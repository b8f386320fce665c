// The "Limits" group of the flag table, in help and README order.
import { flag } from './spec.js';
import { decimal, integer } from './values.js';

export const LIMITS_FLAGS = [
  flag({
    name: 'gpu-memory-utilization',
    key: 'gpuMemoryUtilization',
    group: 'Limits',
    value: decimal({ min: 0, minExclusive: true, max: 1 }, 'fraction'),
    default: 0.9,
    defaultText: '0.90',
    help: 'Fraction of accelerator memory claimed; lower it (e.g. 0.85) if start-up runs out of memory.',
    built: true,
  }),
  flag({
    name: 'max-seq-len',
    key: 'maxSeqLen',
    group: 'Limits',
    value: integer(1, undefined, 'tokens'),
    default: undefined,
    defaultText: "the model's max_position_embeddings",
    help: "Maximum sequence length in tokens (prompt + completion); sizes the KV pool. Above the model's own limit start-up warns.",
    built: true,
  }),
  flag({
    name: 'max-batch-size',
    key: 'maxBatchSize',
    group: 'Limits',
    value: integer(1),
    default: 8,
    help: 'Concurrent sequences per decode step.',
    built: true,
  }),
  flag({
    name: 'max-prefill-tokens',
    key: 'maxPrefillTokens',
    group: 'Limits',
    value: integer(1, undefined, 'tokens'),
    default: 8192,
    help: 'Chunked-prefill budget per iteration; sizes scratch, not the KV pool.',
    built: true,
  }),
  flag({
    name: 'max-num-seqs',
    key: 'maxNumSeqs',
    group: 'Limits',
    value: integer(1),
    default: 128,
    help: 'Maximum queued sequences.',
    built: true,
  }),
  flag({
    name: 'oom-guard-mb',
    key: 'oomGuardMb',
    group: 'Limits',
    value: integer(0, undefined, 'mb'),
    default: 4096,
    help: 'Runtime reserve in MiB held back from the KV pool.',
    built: true,
  }),
] as const;
