// State-space checkpoints name their embeddings differently from the decoder families: Mamba / Mamba2
// keep everything under `backbone.` (backbone.embeddings.weight, backbone.layers.N, backbone.norm_f),
// Nemotron-H under `model.` with model.embeddings.weight. Renamed here to model.* and
// model.embed_tokens.weight, so the loader's tied-embedding rule (and every model) sees the usual
// names.
import type { Tensor } from '../types.js';

export function normalizeStateSpaceNames(tensors: Map<string, Tensor>): void {
  if (tensors.has('backbone.embeddings.weight') && !tensors.has('model.embed_tokens.weight')) {
    for (const [name, t] of [...tensors]) {
      if (!name.startsWith('backbone.')) continue;
      const renamed = `model.${name.slice('backbone.'.length)}`;
      if (tensors.has(renamed)) throw new Error(`tensor ${name}: ${renamed} exists too`);
      tensors.delete(name);
      tensors.set(renamed, { ...t, name: renamed });
    }
  }
  const embeddings = tensors.get('model.embeddings.weight');
  if (embeddings && !tensors.has('model.embed_tokens.weight')) {
    tensors.delete('model.embeddings.weight');
    tensors.set('model.embed_tokens.weight', { ...embeddings, name: 'model.embed_tokens.weight' });
  }
}
