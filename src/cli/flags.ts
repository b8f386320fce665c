// THE flag table of `svc serve`: the one place that names every flag, its aliases, value
// type, default, help text and whether its capability is built. The parser (parse.ts), the
// Config type (config.ts), `--help` (help.ts) and the README reference
// (scripts/readme-flags.ts) all read this file, so a flag is added or changed here only.

/** Help and README sections, in the order of the spec's CLI tables. */
export const GROUPS = [
  'Model selection and I/O',
  'KV cache precision',
  'Speculative decoding',
  'Scheduling and caching',
  'Multi-GPU (expert parallelism)',
  'Reasoning and tools',
  'Experimental and operations',
  'Limits',
] as const;
export type Group = (typeof GROUPS)[number];

/** Outcome of parsing one raw value. `warning` means "accepted, but not as written" (spec: only
 *  --kv-high-precision-layers does this); `ok: false` is a usage error (exit 2). */
export type Parsed<T> = { readonly ok: true; readonly value: T; readonly warning?: true } | { readonly ok: false };

/** A flag that takes no value; its presence sets `whenPresent`. */
export interface SwitchValue<T> {
  readonly takesValue: false;
  readonly whenPresent: T;
}

/** A flag (or the positional) that takes one value. */
export interface ArgValue<T> {
  readonly takesValue: true;
  /** Shown in help after the flag: `--port <n>`. */
  readonly placeholder: string;
  /** What is accepted, worded to follow "expected": errors, help and README all use it. */
  readonly expected: string;
  /** Whether help and README spell out `expected` (free text says nothing worth reading). */
  readonly documented: boolean;
  parse(raw: string): Parsed<T>;
  /** How a parsed value is written back (warnings, "not implemented yet" messages). */
  format(value: T): string;
}

export type ValueType<T> = SwitchValue<T> | ArgValue<T>;

/** Whether a flag's capability exists. `false` means only the default value is accepted at
 *  start-up; a `when` predicate marks flags where some values are built (e.g. two KV dtypes).
 *  Later work flips these one by one. */
export type Built<T> = boolean | { when(value: T): boolean; readonly note: string };

export interface FlagSpec<K extends string = string, T = unknown> {
  /** Long name without the leading `--`; for the positional, its placeholder (MODEL). */
  readonly name: string;
  readonly positional?: true;
  /** The Config field this flag sets. Two flags may share one (--auto-swap / --no-auto-swap). */
  readonly key: K;
  readonly group: Group;
  /** Other long names (without `--`) meaning exactly this flag. */
  readonly aliases?: readonly string[];
  readonly value: ValueType<T>;
  readonly default: T;
  /** Default as people read it, when it is not simply the value (computed, "off", "none"). */
  readonly defaultText?: string;
  readonly help: string;
  readonly built: Built<T>;
  /** Applied after every other flag, so it wins whatever the order (spec: --no-auto-swap). */
  readonly wins?: true;
}

// ---- value types -------------------------------------------------------------------------

const INTEGER = /^-?\d+$/;
const DECIMAL = /^-?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?$/;

function ok<T>(value: T): Parsed<T> {
  return { ok: true, value };
}
const bad = { ok: false } as const;

export function switchFlag(whenPresent: boolean): SwitchValue<boolean> {
  return { takesValue: false, whenPresent };
}

/** A whole number within [min, max] (max defaults to the largest exact integer). */
export function integer(min: number, max?: number, placeholder = 'n'): ArgValue<number> {
  const expected = max === undefined ? `an integer of at least ${min}` : `an integer from ${min} to ${max}`;
  return {
    takesValue: true,
    placeholder,
    expected,
    documented: true,
    parse(raw) {
      if (!INTEGER.test(raw)) return bad;
      const n = Number(raw);
      if (!Number.isSafeInteger(n) || n < min || (max !== undefined && n > max)) return bad;
      return ok(n);
    },
    format: String,
  };
}

/** A decimal number; `min` may be exclusive (fractions like --gpu-memory-utilization are > 0). */
export function decimal(range: { min: number; minExclusive?: boolean; max?: number }, placeholder = 'x'): ArgValue<number> {
  const { min, minExclusive = false, max } = range;
  const low = minExclusive ? `greater than ${min}` : `of at least ${min}`;
  const expected =
    max === undefined
      ? `a number ${low}`
      : minExclusive
        ? `a number greater than ${min} and at most ${max}`
        : `a number from ${min} to ${max}`;
  return {
    takesValue: true,
    placeholder,
    expected,
    documented: true,
    parse(raw) {
      if (!DECIMAL.test(raw)) return bad;
      const n = Number(raw);
      if (!Number.isFinite(n)) return bad;
      if (minExclusive ? n <= min : n < min) return bad;
      if (max !== undefined && n > max) return bad;
      return ok(n);
    },
    format: String,
  };
}

/** One of a fixed set of words. */
export function choice<const V extends string>(values: readonly V[], placeholder: string): ArgValue<V> {
  return {
    takesValue: true,
    placeholder,
    expected: `one of ${values.join(', ')}`,
    documented: true,
    parse(raw) {
      return (values as readonly string[]).includes(raw) ? ok(raw as V) : bad;
    },
    format: String,
  };
}

/** Free text (a name, a path, an address); only the empty string is refused. */
export function text(placeholder: string, what: string): ArgValue<string> {
  return {
    takesValue: true,
    placeholder,
    expected: `a non-empty ${what}`,
    documented: false,
    parse(raw) {
      return raw === '' ? bad : ok(raw);
    },
    format: String,
  };
}

/** --kv-high-precision-layers: a count, `auto` (= 2) or `max`/`all` (every attention layer).
 *  Per the spec anything else is not an error: it warns and becomes 0. */
export const highPrecisionLayers: ArgValue<number | 'all'> = {
  takesValue: true,
  placeholder: 'n|auto|max|all',
  expected: 'an integer of at least 0, auto (= 2), max or all',
  documented: true,
  parse(raw) {
    if (raw === 'auto') return ok(2);
    if (raw === 'max' || raw === 'all') return ok('all');
    const n = Number(raw);
    if (/^\d+$/.test(raw) && Number.isSafeInteger(n)) return ok(n);
    return { ok: true, value: 0, warning: true };
  },
  format: String,
};

// ---- allowed words -----------------------------------------------------------------------

/** The spec lists nine asymmetric K/V pairings but names only bf16k_turbo3v; only named values
 *  are accepted. */
export const KV_CACHE_DTYPES = ['bf16', 'fp8', 'nvfp4', 'turbo2', 'turbo3', 'turbo4', 'turbo8', 'bf16k_turbo3v'] as const;
export type KvCacheDtype = (typeof KV_CACHE_DTYPES)[number];

export const TOOL_CALL_PARSERS = [
  'hermes',
  'fam1_coder',
  'fam1_xml',
  'fam2',
  'fam3',
  'fam4_xml',
  'bare_json',
  'llama3_json',
  'glm4',
  'pythonic',
] as const;
export type ToolCallParser = (typeof TOOL_CALL_PARSERS)[number];

export const MTP_QUANTIZATIONS = ['nvfp4', 'fp8', 'bf16'] as const;
export const SCHEDULING_POLICIES = ['fifo', 'slai'] as const;

/** `svc serve` with neither MODEL nor --model-from-path opens the dashboard Library (spec
 *  state NoModelLoaded). Flip when the Library exists. */
export const SERVE_WITHOUT_MODEL_BUILT = false;

// ---- the table ---------------------------------------------------------------------------

/** Identity helper: lets TypeScript infer each row's key and value type for Config. */
function flag<const K extends string, const T>(spec: FlagSpec<K, T>): FlagSpec<K, T> {
  return spec;
}

const PORT = integer(1, 65535, 'port');

export const FLAGS = [
  // Model selection and I/O
  flag({
    name: 'MODEL',
    positional: true,
    key: 'model',
    group: 'Model selection and I/O',
    value: text('MODEL', 'model repository id'),
    default: undefined,
    defaultText: 'none',
    help: 'Model repository id (org/name), resolved against the local hub cache.',
    built: true,
  }),
  flag({
    name: 'model-from-path',
    key: 'modelFromPath',
    group: 'Model selection and I/O',
    value: text('path', 'path'),
    default: undefined,
    defaultText: 'none',
    help: 'Local model directory (Hugging Face layout) or .gguf file; skips repository resolution.',
    built: true,
  }),
  flag({
    name: 'model-name',
    aliases: ['served-model-name'],
    key: 'modelName',
    group: 'Model selection and I/O',
    value: text('name', 'name'),
    default: undefined,
    defaultText: "the model config's `_name_or_path`, else MODEL",
    help: 'Name reported by GET /v1/models.',
    built: true,
  }),
  flag({
    name: 'cache-dir',
    key: 'cacheDir',
    group: 'Model selection and I/O',
    value: text('dir', 'directory'),
    default: undefined,
    defaultText: '`$HF_HUB_CACHE`, else `$HF_HOME/hub`, else `~/.cache/huggingface/hub`',
    help: 'Root of the local hub cache that MODEL is resolved against.',
    built: true,
  }),
  flag({
    name: 'port',
    key: 'port',
    group: 'Model selection and I/O',
    value: PORT,
    default: 8888,
    help: 'HTTP listen port.',
    built: true,
  }),
  flag({
    name: 'bind',
    key: 'bind',
    group: 'Model selection and I/O',
    value: text('addr', 'address'),
    default: '127.0.0.1',
    help: 'Listen address; 127.0.0.1 is loopback only, 0.0.0.0 exposes the server on every interface.',
    built: true,
  }),
  flag({
    name: 'no-fast-load',
    key: 'fastLoad',
    group: 'Model selection and I/O',
    value: switchFlag(false),
    default: true,
    defaultText: 'off (fast loader on)',
    help: 'Load weights through the memory-mapped loader instead of the fast direct-I/O loader.',
    built: true,
  }),

  // KV cache precision
  flag({
    name: 'kv-cache-dtype',
    key: 'kvCacheDtype',
    group: 'KV cache precision',
    value: choice(KV_CACHE_DTYPES, 'dtype'),
    default: 'fp8',
    help: 'Storage precision of the KV cache (bf16k_turbo3v: BF16 keys, turbo3 values).',
    built: { when: (v) => v === 'fp8' || v === 'bf16', note: 'fp8 and bf16 built; the others not implemented yet' },
  }),
  flag({
    name: 'kv-high-precision-layers',
    key: 'kvHighPrecisionLayers',
    group: 'KV cache precision',
    value: highPrecisionLayers,
    default: 0,
    help:
      'Keep the first and last N attention layers at BF16 (all: every layer); 0 applies the ' +
      "dtype's automatic value. An unparsable value warns and becomes 0.",
    built: false,
  }),
  flag({
    name: 'fp8-kv-calibration-tokens',
    key: 'fp8KvCalibrationTokens',
    group: 'KV cache precision',
    value: integer(0),
    default: 0,
    help: 'Online max-norm calibration over the first N tokens (fp8 only).',
    built: false,
  }),

  // Speculative decoding
  flag({
    name: 'speculative',
    key: 'speculative',
    group: 'Speculative decoding',
    value: switchFlag(true),
    default: false,
    help: 'Multi-token-prediction drafting; needs the prediction weights in the checkpoint.',
    built: false,
  }),
  flag({
    name: 'num-drafts',
    key: 'numDrafts',
    group: 'Speculative decoding',
    value: integer(1),
    default: 1,
    help: "Draft tokens per verify step (K = num-drafts + 1); while 1, MODEL.toml's default_num_drafts replaces it.",
    built: false,
  }),
  flag({
    name: 'mtp-quantization',
    key: 'mtpQuantization',
    group: 'Speculative decoding',
    value: choice(MTP_QUANTIZATIONS, 'dtype'),
    default: 'bf16',
    help: 'Precision of the prediction heads; must match the main checkpoint.',
    built: false,
  }),
  flag({
    name: 'mtp-vocab',
    key: 'mtpVocab',
    group: 'Speculative decoding',
    value: integer(0),
    default: 100000,
    help: 'The draft head scores only the first N token ids (clamped to the vocabulary); 0 means all.',
    built: false,
  }),
  flag({
    name: 'self-speculative',
    key: 'selfSpeculative',
    group: 'Speculative decoding',
    value: switchFlag(true),
    default: false,
    help: 'Layer-skipping drafter; needs no extra weights.',
    built: false,
  }),
  flag({
    name: 'ngram-speculative',
    key: 'ngramSpeculative',
    group: 'Speculative decoding',
    value: switchFlag(true),
    default: false,
    help: 'CPU n-gram (prompt lookup) drafter. Precedence when several are on: n-gram, self, MTP.',
    built: false,
  }),
  flag({
    name: 'dflash',
    key: 'dflash',
    group: 'Speculative decoding',
    value: switchFlag(true),
    default: false,
    defaultText: 'not set',
    help: 'DFlash drafting; cannot be combined with --speculative.',
    built: false,
  }),

  // Scheduling and caching
  flag({
    name: 'enable-prefix-caching',
    key: 'enablePrefixCaching',
    group: 'Scheduling and caching',
    value: switchFlag(true),
    default: false,
    help: 'Radix prefix cache plus state-space snapshot cache.',
    built: false,
  }),
  flag({
    name: 'ssm-cache-slots',
    key: 'ssmCacheSlots',
    group: 'Scheduling and caching',
    value: integer(1),
    default: 16,
    help: 'Concurrent state-space snapshot slots.',
    built: false,
  }),
  flag({
    name: 'ssm-checkpoint-interval',
    key: 'ssmCheckpointInterval',
    group: 'Scheduling and caching',
    value: integer(1),
    default: 256,
    help: 'Blocks between state-space snapshot checkpoints.',
    built: false,
  }),
  flag({
    name: 'scheduling-policy',
    key: 'schedulingPolicy',
    group: 'Scheduling and caching',
    value: choice(SCHEDULING_POLICIES, 'policy'),
    default: 'fifo',
    help: 'fifo, or slai (SLO-aware: keeps each decode step under --tbt-deadline-ms).',
    built: false,
  }),
  flag({
    name: 'tbt-deadline-ms',
    key: 'tbtDeadlineMs',
    group: 'Scheduling and caching',
    value: integer(1, undefined, 'ms'),
    default: 100,
    help: 'Decode-step deadline in milliseconds for --scheduling-policy slai.',
    built: false,
  }),
  flag({
    name: 'auto-compact',
    key: 'autoCompact',
    group: 'Scheduling and caching',
    value: decimal({ min: 0, minExclusive: true, max: 1 }, 'fraction'),
    default: undefined,
    defaultText: 'off',
    help: 'Compress the context once it passes this fraction of --max-seq-len (e.g. 0.85).',
    built: false,
  }),

  // Multi-GPU (expert parallelism)
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

  // Reasoning and tools
  flag({
    name: 'disable-thinking',
    key: 'disableThinking',
    group: 'Reasoning and tools',
    value: switchFlag(true),
    default: false,
    help: 'Kill-switch for `<think>` blocks: no reasoning is generated.',
    built: true,
  }),
  flag({
    name: 'max-thinking-budget',
    key: 'maxThinkingBudget',
    group: 'Reasoning and tools',
    value: integer(0, undefined, 'tokens'),
    default: undefined,
    defaultText: 'from MODEL.toml',
    help: 'Per-request ceiling on reasoning tokens.',
    built: true,
  }),
  flag({
    name: 'tool-call-parser',
    key: 'toolCallParser',
    group: 'Reasoning and tools',
    value: choice(TOOL_CALL_PARSERS, 'parser'),
    default: undefined,
    defaultText: 'automatic from the model type (MODEL.toml)',
    help: "Wire format of the model's tool calls.",
    built: true,
  }),
  flag({
    name: 'tool-max-tokens',
    key: 'toolMaxTokens',
    group: 'Reasoning and tools',
    value: integer(1, undefined, 'tokens'),
    default: 8192,
    help: 'Hard cap on the whole completion (prose, reasoning, tool arguments) when tools are present.',
    built: true,
  }),

  // Experimental and operations
  flag({
    name: 'profile',
    key: 'profile',
    group: 'Experimental and operations',
    value: switchFlag(true),
    default: false,
    help: 'Per-kernel sync and timing; disables graph capture (about 10% overhead).',
    built: false,
  }),
  flag({
    name: 'adaptive-sampling',
    key: 'adaptiveSampling',
    group: 'Experimental and operations',
    value: switchFlag(true),
    default: false,
    help: 'Entropy-gated greedy sampling path.',
    built: false,
  }),
  flag({
    name: 'default-top-n-sigma',
    key: 'defaultTopNSigma',
    group: 'Experimental and operations',
    value: decimal({ min: 0 }),
    default: 1.0,
    defaultText: '1.0',
    help: 'Sigma of the top-n-sigma sampler when a request sets none.',
    built: true,
  }),
  flag({
    name: 'default-min-p',
    key: 'defaultMinP',
    group: 'Experimental and operations',
    value: decimal({ min: 0, max: 1 }),
    default: 0.08,
    help: 'min-p when a request sets none.',
    built: true,
  }),
  flag({
    name: 'swap-space-gb',
    key: 'swapSpaceGb',
    group: 'Experimental and operations',
    value: decimal({ min: 0 }, 'gb'),
    default: 3,
    help: 'Disk-backed KV swap under /tmp/svc-swap/, in GB.',
    built: false,
  }),
  flag({
    name: 'request-timeout',
    key: 'requestTimeout',
    group: 'Experimental and operations',
    value: integer(0, undefined, 'seconds'),
    default: 300,
    help: 'Per-request time limit in seconds; 0 disables it.',
    built: true,
  }),
  flag({
    name: 'require-auth',
    key: 'requireAuth',
    group: 'Experimental and operations',
    value: switchFlag(true),
    default: false,
    help: 'Require `Authorization: Bearer <key>` on write endpoints and /tokenize, /detokenize.',
    built: false,
  }),
  flag({
    name: 'auth-token',
    key: 'authToken',
    group: 'Experimental and operations',
    value: text('key', 'API key'),
    default: undefined,
    defaultText: 'none',
    help: 'An accepted API key (with --require-auth).',
    built: false,
  }),
  flag({
    name: 'auth-tokens-file',
    key: 'authTokensFile',
    group: 'Experimental and operations',
    value: text('path', 'path'),
    default: undefined,
    defaultText: 'none',
    help: 'File of accepted API keys (with --require-auth).',
    built: false,
  }),
  flag({
    name: 'auto-swap',
    key: 'autoSwap',
    group: 'Experimental and operations',
    value: switchFlag(true),
    default: false,
    defaultText: 'off',
    help: "Swap in another model when a request's `model` names one with a known recipe.",
    built: false,
  }),
  flag({
    name: 'no-auto-swap',
    key: 'autoSwap',
    group: 'Experimental and operations',
    value: switchFlag(false),
    default: false,
    defaultText: 'not set',
    help: 'Forbid request-triggered model swaps; wins over --auto-swap in any order.',
    built: true,
    wins: true,
  }),
  flag({
    name: 'dump',
    key: 'dump',
    group: 'Experimental and operations',
    value: text('dir', 'directory'),
    default: undefined,
    defaultText: 'not set',
    help: 'Directory to write every request and its response to, as JSON; process-level, survives model swaps.',
    built: false,
  }),

  // Limits
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
    default: 32768,
    help: 'Maximum sequence length in tokens; sizes the KV pool.',
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

export type FlagRow = (typeof FLAGS)[number];

/** `--name` as typed on the command line (the positional keeps its bare placeholder). */
export function flagLabel(row: FlagSpec<string, unknown>): string {
  return row.positional ? row.name : `--${row.name}`;
}

/** How a row's default reads in help and README. */
export function defaultLabel(row: FlagSpec<string, unknown>): string {
  if (row.defaultText !== undefined) return row.defaultText;
  if (row.default === undefined) return 'none';
  if (!row.value.takesValue) return row.default === row.value.whenPresent ? 'on' : 'off';
  return row.value.format(row.default);
}

/** Built status as people read it. */
export function builtLabel(row: FlagSpec<string, unknown>): string {
  if (row.built === true) return 'built';
  if (row.built === false) return 'not implemented yet';
  return row.built.note;
}
