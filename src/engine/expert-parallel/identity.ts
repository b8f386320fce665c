// The model identity the ranks compare at the handshake: both must run the same checkpoint. A
// hash of what decides the numbers — the normalized config and every tensor's name, dtype and
// shape — not of the weight bytes (reading them all would cost a pass over the file).
import { createHash } from 'node:crypto';
import { basename } from 'node:path';
import type { Checkpoint } from '../../model/types.js';
import type { ModelIdentity } from './protocol.js';

/** JSON with object keys sorted, so equal configs hash equal whatever order their fields were set in. */
function canonical(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(canonical);
  if (value !== null && typeof value === 'object')
    return Object.fromEntries(
      Object.keys(value)
        .sort()
        .map((k) => [k, canonical((value as Record<string, unknown>)[k])]),
    );
  return value;
}

export function modelIdentity(checkpoint: Checkpoint): ModelIdentity {
  const { config } = checkpoint;
  const tensors = [...checkpoint.tensors.values()]
    .map((t) => [t.name, t.dtype, t.shape] as const)
    .sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  const hash = createHash('sha256')
    .update(JSON.stringify(canonical({ config, tensors })))
    .digest('hex');
  const name = config.nameOrPath ?? basename(checkpoint.source);
  const summary =
    `${config.architecture} "${name}" (${checkpoint.format}, ${config.numLayers} layers, hidden ${config.hiddenSize}, ` +
    `${config.numExperts ?? 0} experts, ${checkpoint.tensors.size} tensors)`;
  return { hash, summary };
}
