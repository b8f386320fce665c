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
    help: 'This process: 0 is the head (HTTP and scheduler), N > 0 a worker. Must be below --world-size.',
    built: false,
  }),
  flag({
    name: 'world-size',
    key: 'worldSize',
    group: 'Multi-GPU (expert parallelism)',
    value: integer(1),
    default: 1,
    help: 'Total ranks; 2 enables two-way expert parallelism.',
    built: false,
  }),
  flag({
    name: 'master-addr',
    key: 'masterAddr',
    group: 'Multi-GPU (expert parallelism)',
    value: text('host', 'host'),
    default: undefined,
    defaultText: 'none',
    help: 'Rendezvous host of rank 0.',
    built: false,
  }),
  flag({
    name: 'master-port',
    key: 'masterPort',
    group: 'Multi-GPU (expert parallelism)',
    value: PORT,
    default: 29500,
    help: 'Rendezvous port.',
    built: false,
  }),
] as const;
