// THE flag table of `svc serve`: the one place that names every flag, its aliases, value
// type, default, help text and whether its capability is built. The parser (parse.ts), the
// Config type (config.ts), `--help` (help.ts) and the README reference
// (scripts/readme-reference.ts) all read FLAGS, so a flag is added or changed here only: a row
// in its group's file (one file per entry of GROUPS, assembled below in GROUPS order).
import { KV_CACHE_FLAGS } from './kv-cache.js';
import { LIMITS_FLAGS } from './limits.js';
import { MODEL_IO_FLAGS } from './model-io.js';
import { MULTI_GPU_FLAGS } from './multi-gpu.js';
import { OPERATIONS_FLAGS } from './operations.js';
import { REASONING_TOOLS_FLAGS } from './reasoning-tools.js';
import { SCHEDULING_FLAGS } from './scheduling.js';
import { SPECULATIVE_FLAGS } from './speculative.js';

export * from './spec.js';
export * from './values.js';
export { SERVE_WITHOUT_MODEL_BUILT } from './model-io.js';
export { KV_CACHE_DTYPES, type KvCacheDtype } from './kv-cache.js';
export { MTP_QUANTIZATIONS } from './speculative.js';
export { SCHEDULING_POLICIES } from './scheduling.js';
export { TOOL_CALL_PARSERS, type ToolCallParser } from './reasoning-tools.js';

/** Every row, group by group in GROUPS order (the order of help and the README). */
export const FLAGS = [
  ...MODEL_IO_FLAGS,
  ...KV_CACHE_FLAGS,
  ...SPECULATIVE_FLAGS,
  ...SCHEDULING_FLAGS,
  ...MULTI_GPU_FLAGS,
  ...REASONING_TOOLS_FLAGS,
  ...OPERATIONS_FLAGS,
  ...LIMITS_FLAGS,
] as const;

export type FlagRow = (typeof FLAGS)[number];
