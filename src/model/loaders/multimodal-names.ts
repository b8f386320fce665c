// Vision-language checkpoints nest the language model under a prefix; svc keeps one set of names.
// The language model's tensors get the plain decoder names (model.layers.N.…, model.embed_tokens,
// lm_head) the text architectures load, and the vision side a prefix without the wrapper's `model.`:
//   transformers 5:   model.language_model.X → model.X, model.vision_tower.X → vision_tower.X,
//                     model.multi_modal_projector.X → multi_modal_projector.X,
//                     model.visual.X → visual.X (Qwen2-VL's vision tower)
//   transformers 4 (llava-hf): language_model.model.X → model.X, language_model.lm_head.X → lm_head.X,
//                     vision_tower.vision_model.X → vision_tower.X
//   transformers 4 (Qwen2-VL): model.X and visual.X, already these names
// A text-only checkpoint has none of these prefixes and passes unchanged.
import type { Tensor } from '../types.js';

const RENAMES: readonly (readonly [string, string])[] = [
  ['model.language_model.', 'model.'],
  ['language_model.model.', 'model.'],
  ['language_model.lm_head.', 'lm_head.'],
  ['model.vision_tower.', 'vision_tower.'],
  ['vision_tower.vision_model.', 'vision_tower.'],
  ['model.multi_modal_projector.', 'multi_modal_projector.'],
  ['model.visual.', 'visual.'],
];

/** The name svc loads tensor `name` under. */
export function normalizedTensorName(name: string): string {
  for (const [from, to] of RENAMES) if (name.startsWith(from)) return normalizedTensorName(to + name.slice(from.length));
  return name;
}

/** Renames a checkpoint's tensors in place (normalizedTensorName); two tensors landing on one name is an error. */
export function normalizeMultimodalNames(tensors: Map<string, Tensor>, source: string): void {
  const renamed: [string, Tensor][] = [];
  for (const [name, t] of tensors) {
    const to = normalizedTensorName(name);
    if (to !== name) renamed.push([name, { ...t, name: to }]);
  }
  for (const [from] of renamed) tensors.delete(from);
  for (const [from, t] of renamed) {
    if (tensors.has(t.name)) throw new Error(`${source}: tensors ${from} and ${t.name} both load as ${t.name}`);
    tensors.set(t.name, t);
  }
}
