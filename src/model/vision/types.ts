// The seam between image input (the protocols decode images: src/server/images/) and vision
// models (src/model/vision/): a decoded picture, and what a checkpoint's vision tower makes of it.

/** A decoded image: 8-bit RGB, row-major, height × width × 3 (a GIF's first frame; alpha dropped). */
export interface DecodedImage {
  readonly width: number;
  readonly height: number;
  readonly rgb: Uint8Array;
}

/** An image encoded into the language model's input space. */
export interface ImageEmbeddings {
  /** [numTokens, textHiddenSize]: one row per image token the prompt holds for this image. */
  readonly embeddings: Float32Array;
  readonly numTokens: number;
  /** Qwen2-VL: the merged patch grid (temporal, height, width) the decoder's M-RoPE positions follow. */
  readonly grid?: { readonly t: number; readonly h: number; readonly w: number };
}

/** The image tokens an image of a given size becomes in the prompt. */
export interface ImageTokens {
  readonly numTokens: number;
  /** M-RoPE models (Qwen2-VL): the merged patch grid; t · h · w = numTokens. */
  readonly grid?: { readonly t: number; readonly h: number; readonly w: number };
}

/**
 * What an image takes in the prompt, known from the config files alone (no weights): the main
 * thread expands each image placeholder to `tokensFor(...).numTokens` image tokens before it
 * submits the prompt, so lengths, usage and the prefix cache see the real prompt.
 */
export interface ImageTokenLayout {
  /** The token id the chat template's image placeholder is (config image_token_index / image_token_id). */
  readonly imageTokenId: number;
  /** Throws a RangeError for an image the model's processor refuses (e.g. Qwen2-VL: an aspect ratio over 200). */
  tokensFor(width: number, height: number): ImageTokens;
}

/** A checkpoint's vision tower and projector, preprocessing included (its preprocessor_config.json). */
export interface VisionEncoder {
  /** The token id the chat template's image placeholder expands to (config image_token_index / image_token_id). */
  readonly imageTokenId: number;
  /** Its prompt layout; encode(image).numTokens (and grid) equal layout.tokensFor(image.width, image.height)'s. */
  readonly layout: ImageTokenLayout;
  encode(image: DecodedImage): ImageEmbeddings;
}
