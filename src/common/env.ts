// Every environment variable svc reads, in one table (as vLLM's envs.py): its default, what it
// does, and how its value is checked. Nothing else reads process.env for SVC_* settings; the
// README's "Environment variables" section is generated from ENV_VARS and a test keeps it current.
// The native addon's variables (SVC_THREADS, SVC_SPIN_US, SVC_CPU_FEATURES) are read here and
// handed to the addon when it loads.

export interface EnvVarSpec<T> {
  readonly name: string;
  /** One line for the README and error messages. */
  readonly doc: string;
  /** The default as the README shows it. */
  readonly defaultText: string;
  readonly default: T;
  /** Raw text → value; throws EnvError naming the variable when the text is not valid. */
  parse(raw: string): T;
}

/** An environment variable holds a value it cannot take. */
export class EnvError extends Error {}

function positiveInt(name: string, max = Number.MAX_SAFE_INTEGER) {
  const expected = max === Number.MAX_SAFE_INTEGER ? 'a positive integer' : `an integer from 1 to ${max}`;
  return (raw: string): number => {
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n <= 0 || n > max) throw new EnvError(`${name}: expected ${expected}, got "${raw}"`);
    return n;
  };
}

function nonNegativeInt(name: string) {
  return (raw: string): number => {
    const n = Number(raw);
    if (!Number.isSafeInteger(n) || n < 0) throw new EnvError(`${name}: expected an integer ≥ 0, got "${raw}"`);
    return n;
  };
}

function oneOf<const V extends string>(name: string, values: readonly V[]) {
  return (raw: string): V => {
    if (!(values as readonly string[]).includes(raw)) {
      throw new EnvError(`${name}: expected one of ${values.join(', ')}, got "${raw}"`);
    }
    return raw as V;
  };
}

const text = (raw: string): string => raw;

function spec<T>(s: EnvVarSpec<T>): EnvVarSpec<T> {
  return s;
}

export const ENV_VARS = {
  SVC_THREADS: spec<number | null>({
    name: 'SVC_THREADS',
    doc: 'kernel threads, the calling thread included',
    defaultText: 'one per core',
    default: null,
    parse: positiveInt('SVC_THREADS', 1024),
  }),
  SVC_MAX_BODY_BYTES: spec<number>({
    name: 'SVC_MAX_BODY_BYTES',
    doc: 'largest request body in bytes',
    defaultText: '33554432 (32 MiB)',
    default: 32 * 1024 * 1024,
    parse: positiveInt('SVC_MAX_BODY_BYTES'),
  }),
  SVC_HEADERS_TIMEOUT_S: spec<number>({
    name: 'SVC_HEADERS_TIMEOUT_S',
    doc: 'seconds a client has to send the request line and headers (408 after); 0 = no limit',
    defaultText: '30',
    default: 30,
    parse: nonNegativeInt('SVC_HEADERS_TIMEOUT_S'),
  }),
  SVC_REQUEST_RECEIVE_TIMEOUT_S: spec<number>({
    name: 'SVC_REQUEST_RECEIVE_TIMEOUT_S',
    doc: 'seconds a client has to send the whole request, headers and body (408 after); the response is not covered (`--request-timeout` limits generation); 0 = no limit',
    defaultText: '120',
    default: 120,
    parse: nonNegativeInt('SVC_REQUEST_RECEIVE_TIMEOUT_S'),
  }),
  SVC_BODY_IDLE_TIMEOUT_S: spec<number>({
    name: 'SVC_BODY_IDLE_TIMEOUT_S',
    doc: 'seconds without a byte while a request body is being received before the request is cut (408); 0 = no limit',
    defaultText: '15',
    default: 15,
    parse: nonNegativeInt('SVC_BODY_IDLE_TIMEOUT_S'),
  }),
  SVC_KEEP_ALIVE_TIMEOUT_S: spec<number>({
    name: 'SVC_KEEP_ALIVE_TIMEOUT_S',
    doc: 'seconds an idle keep-alive connection is kept open between requests',
    defaultText: '5',
    default: 5,
    parse: positiveInt('SVC_KEEP_ALIVE_TIMEOUT_S'),
  }),
  SVC_MAX_REQUESTS_PER_SOCKET: spec<number>({
    name: 'SVC_MAX_REQUESTS_PER_SOCKET',
    doc: 'requests one keep-alive connection may carry before it is closed; 0 = no limit',
    defaultText: '1000',
    default: 1000,
    parse: nonNegativeInt('SVC_MAX_REQUESTS_PER_SOCKET'),
  }),
  SVC_MAX_CONNECTIONS: spec<number>({
    name: 'SVC_MAX_CONNECTIONS',
    doc: 'open HTTP connections at most; more are closed at once (a warning is logged, at most one every 10 s); 0 = no limit',
    defaultText: '1024',
    default: 1024,
    parse: nonNegativeInt('SVC_MAX_CONNECTIONS'),
  }),
  SVC_LOG_LEVEL: spec<'trace' | 'debug' | 'info' | 'warn' | 'error' | 'fatal' | 'silent'>({
    name: 'SVC_LOG_LEVEL',
    doc: 'log level; `info` logs one line per request, `debug` adds the routine answers of `/health` and `/metrics`',
    defaultText: 'info',
    default: 'info',
    parse: oneOf('SVC_LOG_LEVEL', ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent']),
  }),
  SVC_KERNELS: spec<'native' | 'reference'>({
    name: 'SVC_KERNELS',
    doc: '`reference` runs the plain-TypeScript ops instead of the native ones (debugging; slow)',
    defaultText: 'native',
    default: 'native',
    parse: oneOf('SVC_KERNELS', ['native', 'reference']),
  }),
  SVC_CPU_FEATURES: spec<'scalar' | 'avx2' | 'avx512' | 'amx' | null>({
    name: 'SVC_CPU_FEATURES',
    doc: 'force a kernel path below the best one the CPU has: `scalar`, `avx2`, `avx512` or `amx` (testing)',
    defaultText: 'the best the CPU supports',
    default: null,
    parse: oneOf('SVC_CPU_FEATURES', ['scalar', 'avx2', 'avx512', 'amx']),
  }),
  SVC_SPIN_US: spec<number | null>({
    name: 'SVC_SPIN_US',
    doc: 'microseconds kernel threads spin waiting for work before they sleep',
    defaultText: 'the addon’s built-in value',
    default: null,
    parse: nonNegativeInt('SVC_SPIN_US'),
  }),
  SVC_RATE_LIMIT_RPM: spec<number>({
    name: 'SVC_RATE_LIMIT_RPM',
    doc: 'requests per minute per key (the API key; the client address when auth is off); 0 = no request limit',
    defaultText: '0 (off)',
    default: 0,
    parse: nonNegativeInt('SVC_RATE_LIMIT_RPM'),
  }),
  SVC_RATE_LIMIT_TPM: spec<number>({
    name: 'SVC_RATE_LIMIT_TPM',
    doc: 'tokens (prompt + generated) per minute per key; 0 = no token limit',
    defaultText: '0 (off)',
    default: 0,
    parse: nonNegativeInt('SVC_RATE_LIMIT_TPM'),
  }),
  SVC_RATE_LIMIT_BURST_RPM: spec<number | null>({
    name: 'SVC_RATE_LIMIT_BURST_RPM',
    doc: 'requests a key may make at once (its request bucket holds this many); needs `SVC_RATE_LIMIT_RPM`',
    defaultText: '`SVC_RATE_LIMIT_RPM`',
    default: null,
    parse: positiveInt('SVC_RATE_LIMIT_BURST_RPM'),
  }),
  SVC_RATE_LIMIT_BURST_TPM: spec<number | null>({
    name: 'SVC_RATE_LIMIT_BURST_TPM',
    doc: 'tokens a key may use at once (its token bucket holds this many); needs `SVC_RATE_LIMIT_TPM`',
    defaultText: '`SVC_RATE_LIMIT_TPM`',
    default: null,
    parse: positiveInt('SVC_RATE_LIMIT_BURST_TPM'),
  }),
  SVC_RESPONSES_STORE_MAX: spec<number>({
    name: 'SVC_RESPONSES_STORE_MAX',
    doc: 'stored responses and conversations the process keeps (Responses API); past it the oldest is evicted and its id answers 404',
    defaultText: '10000',
    default: 10_000,
    parse: positiveInt('SVC_RESPONSES_STORE_MAX'),
  }),
  SVC_RESPONSES_STORE_MAX_BYTES: spec<number>({
    name: 'SVC_RESPONSES_STORE_MAX_BYTES',
    doc: 'bytes of stored items (as JSON) the Responses store keeps, over every response and conversation; past it the least recently written record is evicted',
    defaultText: '1073741824 (1 GiB)',
    default: 1 << 30,
    parse: positiveInt('SVC_RESPONSES_STORE_MAX_BYTES'),
  }),
  SVC_EP_CONNECT_TIMEOUT_S: spec<number>({
    name: 'SVC_EP_CONNECT_TIMEOUT_S',
    doc: 'expert parallelism (`--world-size 2`): seconds the head waits at start-up for rank 1 to connect before start-up fails',
    defaultText: '600',
    default: 600,
    parse: positiveInt('SVC_EP_CONNECT_TIMEOUT_S'),
  }),
  SVC_EP_REPLY_TIMEOUT_S: spec<number>({
    name: 'SVC_EP_REPLY_TIMEOUT_S',
    doc: "expert parallelism: seconds the head waits for rank 1's answer for one MoE layer before the step fails and the connection is dropped",
    defaultText: '120',
    default: 120,
    parse: positiveInt('SVC_EP_REPLY_TIMEOUT_S'),
  }),
  SVC_EP_ROWS_DTYPE: spec<'f32' | 'bf16'>({
    name: 'SVC_EP_ROWS_DTYPE',
    doc: 'expert parallelism: how the head sends activation rows to rank 1; `f32` gives outputs identical to one rank, `bf16` halves those bytes (replies stay f32)',
    defaultText: 'f32',
    default: 'f32',
    parse: oneOf('SVC_EP_ROWS_DTYPE', ['f32', 'bf16']),
  }),
  HF_HUB_CACHE: spec<string | null>({
    name: 'HF_HUB_CACHE',
    doc: 'hub cache searched for `svc serve ORG/NAME` (after `--cache-dir`)',
    defaultText: '`$HF_HOME/hub`',
    default: null,
    parse: text,
  }),
  HF_HOME: spec<string | null>({
    name: 'HF_HOME',
    doc: 'Hugging Face home; its `hub/` folder is the hub cache when `HF_HUB_CACHE` is unset',
    defaultText: '`~/.cache/huggingface`',
    default: null,
    parse: text,
  }),
  XDG_CACHE_HOME: spec<string | null>({
    name: 'XDG_CACHE_HOME',
    doc: 'user cache directory; the packed-weights cache lives in its `svc/packed/` unless `--packed-cache-dir` says otherwise',
    defaultText: '`~/.cache`',
    default: null,
    parse: text,
  }),
} as const;

export type EnvName = keyof typeof ENV_VARS;
type EnvValue<K extends EnvName> = ReturnType<(typeof ENV_VARS)[K]['parse']> | (typeof ENV_VARS)[K]['default'];

/**
 * The variable's value from `env` (default process.env): unset or empty → its default; otherwise
 * parsed, and an invalid value throws EnvError naming the variable.
 */
export function readEnv<K extends EnvName>(name: K, env: NodeJS.ProcessEnv = process.env): EnvValue<K> {
  const s = ENV_VARS[name] as EnvVarSpec<EnvValue<K>>;
  const raw = env[name];
  if (raw === undefined || raw === '') return s.default;
  return s.parse(raw);
}
