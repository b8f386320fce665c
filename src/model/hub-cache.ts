// Resolve a hub repository id ("org/name") to a snapshot directory in the local Hugging Face cache:
// <root>/models--org--name/snapshots/<revision>/, with refs/main naming the revision.
import { existsSync, readFileSync, readdirSync, statSync } from 'node:fs';
import { homedir } from 'node:os';
import { join, resolve } from 'node:path';
import { readEnv } from '../common/env.js';

/**
 * The cache root: explicit dir, else $HF_HUB_CACHE, else $HF_HOME/hub, else ~/.cache/huggingface/hub.
 * `env` (here and below) is the environment to read, process.env unless a test passes its own.
 */
export function hubCacheRoot(cacheDir?: string, env?: NodeJS.ProcessEnv): string {
  if (cacheDir) return resolve(cacheDir);
  const hubCache = readEnv('HF_HUB_CACHE', env);
  if (hubCache !== null) return resolve(hubCache);
  const hfHome = readEnv('HF_HOME', env);
  if (hfHome !== null) return resolve(hfHome, 'hub');
  return join(homedir(), '.cache', 'huggingface', 'hub');
}

/** Snapshot directory of `id` in the cache; throws listing every path it looked at. */
export function resolveModel(id: string, cacheDir?: string, env?: NodeJS.ProcessEnv): string {
  const root = hubCacheRoot(cacheDir, env);
  const searched: string[] = [];
  const parts = id.split('/');
  if (parts.length !== 2 || parts.some((p) => !p || p === '.' || p === '..')) {
    throw new Error(`model id "${id}" is not of the form org/name`);
  }
  const repoDir = join(root, `models--${parts[0]}--${parts[1]}`);
  const snapshots = join(repoDir, 'snapshots');
  const refMain = join(repoDir, 'refs', 'main');

  searched.push(refMain);
  if (existsSync(refMain)) {
    const rev = readFileSync(refMain, 'utf8').trim();
    const dir = join(snapshots, rev);
    searched.push(dir);
    if (rev && isDir(dir)) return dir;
  }
  // No usable refs/main (e.g. downloaded by revision): take the newest snapshot.
  searched.push(snapshots);
  if (isDir(snapshots)) {
    const revs = readdirSync(snapshots)
      .map((name) => join(snapshots, name))
      .filter(isDir)
      .sort((a, b) => statSync(b).mtimeMs - statSync(a).mtimeMs);
    if (revs.length > 0) return revs[0];
  }
  throw new Error(`model "${id}" not found in the hub cache; searched:\n  ${searched.join('\n  ')}`);
}

/**
 * The path to load: `--model-from-path` wins (a directory or a .gguf file, used as given);
 * otherwise the MODEL id resolved against the cache. Throws when neither is given.
 */
export function resolveModelSource(
  model: string | undefined,
  modelFromPath: string | undefined,
  cacheDir?: string,
  env?: NodeJS.ProcessEnv,
): string {
  if (modelFromPath) {
    const p = resolve(modelFromPath);
    if (!existsSync(p)) throw new Error(`--model-from-path ${modelFromPath}: no such file or directory`);
    return p;
  }
  if (model) return resolveModel(model, cacheDir, env);
  throw new Error('no model given: pass a MODEL id or --model-from-path');
}

function isDir(p: string): boolean {
  try {
    return statSync(p).isDirectory();
  } catch {
    return false;
  }
}
