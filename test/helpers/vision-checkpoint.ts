// A servable vision-language model for end-to-end tests: LLaVA around svc-tiny-chat. The language
// model is svc-tiny-chat itself (its weights linked, its tokenizer and a chat template that writes
// Qwen's `<|vision_start|><|image_pad|><|vision_end|>` for each image part); the vision side is a
// small random SigLIP tower (32×32 pixels, 8×8 patches: 16 image tokens per image) and a random
// projector. No public vision checkpoint is small enough to ship beside the tests; the tower's and
// projector's numerics are checked against Hugging Face in vision-llava.test.ts, so the end-to-end
// tests here check what a server must do with images (placeholders, lengths, the engine, caching).
import { mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TINY_CHAT } from './paths.js';
import { rng, writeSafetensors, type SafetensorsEntry } from './safetensors-file.js';

/** <|image_pad|> in the Qwen vocabulary. */
export const TINY_VISION_IMAGE_TOKEN = 151655;
/** Image tokens per image: (32 / 8)² patches. */
export const TINY_VISION_TOKENS_PER_IMAGE = 16;

const VISION = { hidden: 64, intermediate: 128, layers: 2, heads: 4, imageSize: 32, patchSize: 8 };

/** svc-tiny-chat's template, taught image parts (and list contents wherever it reads a content as a string). */
function visionTemplate(): string {
  const config = JSON.parse(readFileSync(join(TINY_CHAT, 'tokenizer_config.json'), 'utf8')) as { chat_template: string };
  const text =
    "{%- if message.content is string %}{{- message.content }}{%- else %}{%- for part in message.content %}{%- if part.type == 'image' %}{{- '<|vision_start|><|image_pad|><|vision_end|>' }}{%- elif part.type == 'text' %}{{- part.text }}{%- endif %}{%- endfor %}{%- endif %}";
  const replacements: [string, string][] = [
    [
      "not(message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>'))",
      "not(message.content is string and message.content.startswith('<tool_response>') and message.content.endswith('</tool_response>'))",
    ],
    [
      "{{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}",
      `{{- '<|im_start|>' + message.role + '\\n' }}${text}{{- '<|im_end|>\\n' }}`,
    ],
  ];
  let template = config.chat_template;
  for (const [from, to] of replacements) {
    if (!template.includes(from)) throw new Error(`vision-checkpoint: svc-tiny-chat's template no longer has ${from}`);
    template = template.replace(from, to);
  }
  return template;
}

function visionTensors(textHidden: number, seed: number): SafetensorsEntry[] {
  const r = rng(seed);
  const { hidden: H, intermediate: I, layers, imageSize, patchSize: P } = VISION;
  const T = (imageSize / P) ** 2;
  const out: SafetensorsEntry[] = [];
  const add = (name: string, shape: number[], scale: number, offset = 0) => {
    const n = shape.reduce((a, b) => a * b, 1);
    out.push({ name, shape, dtype: 'f32', values: Float32Array.from({ length: n }, () => offset + scale * r.normal()) });
  };
  const t = 'vision_tower.vision_model.';
  add(`${t}embeddings.patch_embedding.weight`, [H, 3, P, P], 0.05);
  add(`${t}embeddings.patch_embedding.bias`, [H], 0.02);
  add(`${t}embeddings.position_embedding.weight`, [T, H], 0.1);
  for (let l = 0; l < layers; l++) {
    const p = `${t}encoder.layers.${l}.`;
    for (const norm of ['layer_norm1', 'layer_norm2']) {
      add(`${p}${norm}.weight`, [H], 0.05, 1);
      add(`${p}${norm}.bias`, [H], 0.02);
    }
    for (const proj of ['q_proj', 'k_proj', 'v_proj', 'out_proj']) {
      add(`${p}self_attn.${proj}.weight`, [H, H], 1 / Math.sqrt(H));
      add(`${p}self_attn.${proj}.bias`, [H], 0.02);
    }
    add(`${p}mlp.fc1.weight`, [I, H], 1 / Math.sqrt(H));
    add(`${p}mlp.fc1.bias`, [I], 0.02);
    add(`${p}mlp.fc2.weight`, [H, I], 1 / Math.sqrt(I));
    add(`${p}mlp.fc2.bias`, [H], 0.02);
  }
  add(`${t}post_layernorm.weight`, [H], 0.05, 1);
  add(`${t}post_layernorm.bias`, [H], 0.02);
  // The projector's output is scaled like the language model's own embedding rows.
  add('multi_modal_projector.linear_1.weight', [textHidden, H], 1 / Math.sqrt(H));
  add('multi_modal_projector.linear_1.bias', [textHidden], 0.02);
  add('multi_modal_projector.linear_2.weight', [textHidden, textHidden], 0.05 / Math.sqrt(textHidden));
  add('multi_modal_projector.linear_2.bias', [textHidden], 0.01);
  return out;
}

/** The safetensors header's tensor names of a file. */
function tensorNames(path: string): string[] {
  const buf = readFileSync(path);
  const len = Number(buf.readBigUInt64LE(0));
  return Object.keys(JSON.parse(buf.subarray(8, 8 + len).toString('utf8')) as object).filter((k) => k !== '__metadata__');
}

/** Writes the model into a fresh temp directory (the caller removes it) and returns the directory. */
export function writeTinyVisionModel(seed = 7): string {
  const dir = mkdtempSync(join(tmpdir(), 'svc-tiny-vision-'));
  const text = JSON.parse(readFileSync(join(TINY_CHAT, 'config.json'), 'utf8')) as Record<string, unknown>;
  const config = {
    architectures: ['LlavaForConditionalGeneration'],
    model_type: 'llava',
    _name_or_path: 'svc-tiny-vision',
    text_config: text,
    vision_config: {
      model_type: 'siglip_vision_model',
      hidden_size: VISION.hidden,
      intermediate_size: VISION.intermediate,
      num_hidden_layers: VISION.layers,
      num_attention_heads: VISION.heads,
      image_size: VISION.imageSize,
      patch_size: VISION.patchSize,
      vision_use_head: false,
    },
    image_token_index: TINY_VISION_IMAGE_TOKEN,
    projector_hidden_act: 'gelu',
    vision_feature_layer: -1,
    vision_feature_select_strategy: 'full',
    tie_word_embeddings: text.tie_word_embeddings,
    eos_token_id: text.eos_token_id,
  };
  writeFileSync(join(dir, 'config.json'), JSON.stringify(config, null, 2));
  writeFileSync(
    join(dir, 'preprocessor_config.json'),
    JSON.stringify({
      image_processor_type: 'SiglipImageProcessor',
      do_resize: true,
      size: { height: VISION.imageSize, width: VISION.imageSize },
      resample: 2,
      do_rescale: true,
      rescale_factor: 1 / 255,
      do_normalize: true,
      image_mean: [0.5, 0.5, 0.5],
      image_std: [0.5, 0.5, 0.5],
    }),
  );
  for (const f of ['tokenizer.json', 'tokenizer_config.json', 'generation_config.json']) symlinkSync(join(TINY_CHAT, f), join(dir, f));
  writeFileSync(join(dir, 'chat_template.jinja'), visionTemplate());
  symlinkSync(join(TINY_CHAT, 'model.safetensors'), join(dir, 'text.safetensors'));
  const vision = visionTensors(text.hidden_size as number, seed);
  writeSafetensors(join(dir, 'vision.safetensors'), vision);
  const weightMap: Record<string, string> = {};
  for (const name of tensorNames(join(dir, 'text.safetensors'))) weightMap[name] = 'text.safetensors';
  for (const e of vision) weightMap[e.name] = 'vision.safetensors';
  writeFileSync(join(dir, 'model.safetensors.index.json'), JSON.stringify({ metadata: {}, weight_map: weightMap }));
  return dir;
}
