// A vision model's prompt: the chat template writes one image token per image (`<image>`,
// `<|vision_start|><|image_pad|><|vision_end|>`); the model reads as many image tokens as its
// encoder makes rows of that picture. Each placeholder is expanded here, on the main thread, so the
// context check, usage and the prefix cache all see the prompt the model runs; the engine gets each
// image's place in it (EngineImage) and its pixels.
import { ApiError } from '../common/api-error.js';
import type { EngineImage } from '../engine/types.js';
import type { ModelRuntime } from './model-runtime.js';
import { promptTooLong, type ChatPrompt } from './prompt.js';
import { imageParts, type ChatImagePart, type ChatRequest } from './request.js';
import type { ImageTokenLayout, ImageTokens } from '../model/vision/types.js';

/** The prompt with each image placeholder expanded to its image's tokens, and the images' places; the prompt itself without images. */
export function withImageTokens(chat: ChatRequest, prompt: ChatPrompt, runtime: ModelRuntime): ChatPrompt {
  const parts = imageParts(chat.messages);
  if (parts.length === 0) return prompt;
  const layout = runtime.vision?.layout;
  if (!layout) throw new Error('withImageTokens: images for a model without vision support');
  const placeholders = prompt.tokens.reduce((count, id) => count + (id === layout.imageTokenId ? 1 : 0), 0);
  if (placeholders !== parts.length) {
    throw new ApiError(
      400,
      `The model's chat template wrote ${placeholders} image placeholders for the request's ${parts.length} images; ` +
        'each image must appear exactly once in the prompt (is an image token typed in the text?).',
      { code: 'image_placeholder_mismatch', param: parts[0]!.param },
    );
  }
  const tokens: number[] = [];
  const images: EngineImage[] = [];
  let next = 0;
  for (const id of prompt.tokens) {
    if (id !== layout.imageTokenId) {
      tokens.push(id);
      continue;
    }
    const part = parts[next++]!;
    if (!part.image) throw new Error(`withImageTokens: the image at '${part.param}' was not loaded`);
    const { numTokens, grid } = tokensOf(layout, part);
    images.push({ offset: tokens.length, numTokens, ...(grid ? { grid } : {}), image: part.image });
    for (let i = 0; i < numTokens; i++) tokens.push(id);
  }
  if (tokens.length >= runtime.maxSeqLen) throw promptTooLong(runtime.maxSeqLen, tokens.length, 'messages');
  return { ...prompt, tokens, images };
}

/** The part's image tokens; an image the model's processor refuses (a RangeError: e.g. Qwen2-VL's aspect ratio over 200) is a 400. */
function tokensOf(layout: ImageTokenLayout, part: ChatImagePart): ImageTokens {
  try {
    return layout.tokensFor(part.image!.width, part.image!.height);
  } catch (err) {
    if (!(err instanceof RangeError)) throw err;
    throw new ApiError(400, `Invalid image in '${part.param}': the model cannot take it (${err.message}).`, {
      code: 'invalid_image',
      param: part.param,
    });
  }
}
