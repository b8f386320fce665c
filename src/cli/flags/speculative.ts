// The "Speculative decoding" group of the flag table, in help and README order.
import { flag } from './spec.js';
import { choice, integer, switchFlag } from './values.js';

export const MTP_QUANTIZATIONS = ['nvfp4', 'fp8', 'bf16'] as const;

export const SPECULATIVE_FLAGS = [
  flag({
    name: 'speculative',
    key: 'speculative',
    group: 'Speculative decoding',
    value: switchFlag(true),
    default: false,
    help: 'Multi-token-prediction drafting; needs the prediction weights in the checkpoint.',
    built: true,
  }),
  flag({
    name: 'num-drafts',
    key: 'numDrafts',
    group: 'Speculative decoding',
    value: integer(1),
    default: 1,
    help: "Draft tokens per verify step (K = num-drafts + 1); while 1, MODEL.toml's default_num_drafts replaces it.",
    built: true,
  }),
  flag({
    name: 'mtp-quantization',
    key: 'mtpQuantization',
    group: 'Speculative decoding',
    value: choice(MTP_QUANTIZATIONS, 'dtype'),
    default: 'bf16',
    help: 'Precision of the prediction heads; must match the main checkpoint.',
    built: true,
  }),
  flag({
    name: 'mtp-vocab',
    key: 'mtpVocab',
    group: 'Speculative decoding',
    value: integer(0),
    default: 100000,
    help: 'The draft head scores only the first N token ids (clamped to the vocabulary); 0 means all.',
    built: true,
  }),
  flag({
    name: 'self-speculative',
    key: 'selfSpeculative',
    group: 'Speculative decoding',
    value: switchFlag(true),
    default: false,
    help: 'Layer-skipping drafter; needs no extra weights.',
    built: true,
  }),
  flag({
    name: 'ngram-speculative',
    key: 'ngramSpeculative',
    group: 'Speculative decoding',
    value: switchFlag(true),
    default: false,
    help: 'CPU n-gram (prompt lookup) drafter. Precedence when several are on: n-gram, self, MTP.',
    built: true,
  }),
  flag({
    name: 'dflash',
    key: 'dflash',
    group: 'Speculative decoding',
    value: switchFlag(true),
    default: false,
    defaultText: 'not set',
    help: 'DFlash drafting (needs a DFlash draft model, which svc cannot run: refused at start-up); conflicts with --speculative.',
    built: true,
  }),
] as const;
