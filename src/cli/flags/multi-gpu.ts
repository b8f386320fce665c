// The "Multi-GPU (expert parallelism)" group of the flag table, in help and README order.
import { flag } from './spec.js';
import { integer, PORT, text } from './values.js';

export const MULTI_GPU_FLAGS = [
  flag({
    name: 'rank',
    key: 'rank',
    group: 'Multi-GPU (expert parallelism)',
    value: integer(0),
    default: 0,
    help:
      'This process: 0 is the head (HTTP, scheduler, attention and its share of the experts), 1 the expert worker ' +
      '(its share of the experts, no HTTP). Must be below --world-size.',
    built: true,
  }),
  flag({
    name: 'world-size',
    key: 'worldSize',
    group: 'Multi-GPU (expert parallelism)',
    value: integer(1),
    default: 1,
    help: 'Total ranks; 2 enables two-way expert parallelism (a mixture-of-experts MODEL, named at start-up; at most 2).',
    built: true,
  }),
  flag({
    name: 'master-addr',
    key: 'masterAddr',
    group: 'Multi-GPU (expert parallelism)',
    value: text('host', 'host'),
    default: undefined,
    defaultText: 'none',
    help: 'Rendezvous host: where the head listens for rank 1 (default: the --bind address) and where rank 1 connects (required there).',
    built: true,
  }),
  flag({
    name: 'master-port',
    key: 'masterPort',
    group: 'Multi-GPU (expert parallelism)',
    value: PORT,
    default: 29500,
    help: 'Rendezvous port: the head listens on it, rank 1 connects to it.',
    built: true,
  }),
] as const;
