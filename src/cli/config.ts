// The typed, frozen Config that `svc serve` runs with: its type is derived from the flag
// table, so a new row in flags.ts is a new field here with nothing else to edit. Also the
// rules that involve more than one flag, and the start-up check for unbuilt capabilities.
import { FLAGS, SERVE_WITHOUT_MODEL_BUILT, flagLabel, type FlagRow, type FlagSpec } from './flags/index.js';

type ValueOf<R> = R extends FlagSpec<string, infer T> ? T : never;

/** One camelCase field per flag (rows sharing a key share the field), e.g. `config.maxBatchSize`. */
export type Config = { readonly [R in FlagRow as R['key']]: ValueOf<R> };

/** A mutable draft of Config while flags are applied. */
export type ConfigDraft = { -readonly [K in keyof Config]: Config[K] };

/** Every field at its table default. */
export function defaultConfig(): ConfigDraft {
  const draft: Record<string, unknown> = {};
  for (const row of FLAGS) draft[row.key] = row.default;
  return draft as ConfigDraft;
}

/** Freezes an object and everything reachable from it, so no later stage can alter the
 *  configuration the process started with. */
export function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

export interface RuleOutcome {
  /** A usage error (exit 2), already formatted as one line. */
  readonly error?: string;
  readonly warnings: readonly string[];
}

/** Rules that involve more than one flag. The first error wins; warnings accumulate. */
export function checkCrossFlagRules(c: Config): RuleOutcome {
  const warnings: string[] = [];
  const fail = (error: string): RuleOutcome => ({ error, warnings });

  if (c.model !== undefined && c.modelFromPath !== undefined)
    return fail(`svc: --model-from-path: cannot be combined with a positional MODEL (got "${c.model}")`);
  if (c.demo && (c.model !== undefined || c.modelFromPath !== undefined))
    return fail('svc: --demo: cannot be combined with MODEL or --model-from-path');
  // Spec: --dflash is declared as conflicting with --speculative, and that is enforced.
  if (c.dflash && c.speculative) return fail('svc: --dflash: cannot be combined with --speculative');
  // DFlash drafts with a separate block-diffusion draft model; svc has no way to load or run one.
  if (c.dflash)
    return fail(
      'svc: --dflash: DFlash drafting needs a DFlash draft model, which svc cannot run; ' +
        'use --ngram-speculative, --self-speculative or --speculative (MTP weights) instead',
    );
  if (c.worldSize > 2)
    return fail(
      `svc: --world-size: at most 2 ranks are supported (two-way expert parallelism: --rank 0 the head, --rank 1 the expert worker), got ${c.worldSize}`,
    );
  if (c.rank >= c.worldSize) return fail(`svc: --rank: must be below --world-size (${c.worldSize}), got ${c.rank}`);
  if (c.worldSize > 1 && c.model === undefined && c.modelFromPath === undefined && !c.demo)
    return fail(
      `svc: --world-size ${c.worldSize}: needs the MODEL on the command line, the same on every rank ` +
        '(expert parallelism is set up at start-up; Library loads and swaps are single-node)',
    );
  if (c.rank > 0 && c.masterAddr === undefined)
    return fail(`svc: --rank ${c.rank}: needs --master-addr, the head's address (and --master-port when it is not 29500)`);
  // Spec: there is no accept-any-key mode, so auth without a key source cannot start.
  if (c.requireAuth && c.authToken === undefined && c.authTokensFile === undefined)
    return fail('svc: --require-auth: needs --auth-token or --auth-tokens-file');
  // Settings of a feature that is off: accepted (scripts switch the feature alone), but said.
  const drafting = c.ngramSpeculative || c.selfSpeculative || c.speculative;
  if (!drafting && c.numDrafts !== 1)
    warnings.push('svc: warning: --num-drafts has no effect without --ngram-speculative, --self-speculative or --speculative');
  if (!c.speculative && (c.mtpQuantization !== 'bf16' || c.mtpVocab !== 100000))
    warnings.push('svc: warning: --mtp-quantization/--mtp-vocab have no effect without --speculative');
  if (c.schedulingPolicy !== 'slai' && c.tbtDeadlineMs !== 100)
    warnings.push('svc: warning: --tbt-deadline-ms has no effect without --scheduling-policy slai');
  if (!c.requireAuth && (c.authToken !== undefined || c.authTokensFile !== undefined))
    warnings.push('svc: warning: --auth-token/--auth-tokens-file have no effect without --require-auth');
  if (c.worldSize === 1 && (c.masterAddr !== undefined || c.masterPort !== 29500))
    warnings.push('svc: warning: --master-addr/--master-port have no effect without --world-size 2');
  if (c.rank > 0) {
    // An expert worker has no HTTP side, scheduler or KV cache: the head's flags say nothing to it.
    const ignored = new Map<string, string>();
    for (const row of FLAGS as readonly FlagSpec<string, unknown>[])
      if (!EXPERT_WORKER_KEYS.has(row.key) && !ignored.has(row.key) && !sameValue((c as Record<string, unknown>)[row.key], row.default))
        ignored.set(row.key, flagLabel(row));
    if (ignored.size > 0)
      warnings.push(
        `svc: warning: rank ${c.rank} is an expert worker (no HTTP, no scheduler): ${[...ignored.values()].join(', ')} ` +
          `${ignored.size === 1 ? 'has' : 'have'} no effect there`,
      );
  }
  return { warnings };
}

/** The flags an expert worker (--rank 1) uses: what to load and how, and where the head is. */
const EXPERT_WORKER_KEYS: ReadonlySet<string> = new Set([
  'model',
  'modelFromPath',
  'cacheDir',
  'demo',
  'fastLoad',
  'rank',
  'worldSize',
  'masterAddr',
  'masterPort',
]);

function sameValue(a: unknown, b: unknown): boolean {
  return Object.is(a, b) || JSON.stringify(a) === JSON.stringify(b);
}

/** Start-up check: a flag whose capability is not built may only hold its default value.
 *  Returns the one-line error, or undefined when everything asked for exists. */
export function checkImplemented(
  c: Config,
  flags: readonly FlagSpec<string, unknown>[] = FLAGS as readonly FlagSpec<string, unknown>[],
): string | undefined {
  if (!SERVE_WITHOUT_MODEL_BUILT && c.model === undefined && c.modelFromPath === undefined)
    return 'svc: not implemented yet: serve without a model (Library)';

  const unbuilt: string[] = [];
  for (const row of flags) {
    const value = (c as Record<string, unknown>)[row.key];
    const built = row.built;
    const ok = built === true || (built === false ? Object.is(value, row.default) : built.when(value));
    if (ok) continue;
    // Switches are named alone; valued flags with the value asked for (e.g. --num-drafts 3).
    unbuilt.push(row.value.takesValue ? `${flagLabel(row)} ${row.value.format(value)}` : flagLabel(row));
  }
  return unbuilt.length > 0 ? `svc: not implemented yet: ${unbuilt.join(', ')}` : undefined;
}
