// Qwen2-VL's image side (transformers' Qwen2VLModel.get_image_features): preprocessing to the
// image's own patch grid, then the vision tower, whose merger already outputs the language model's
// width. One image gives (grid h / merge) · (grid w / merge) rows, merge window by merge window (row-
// major over the merged grid), which the prompt's <|image_pad|> tokens take in order.
import type { Ops } from '../../kernels/ops.js';
import type { Checkpoint } from '../types.js';
import { CheckpointWeights } from '../architectures/weights.js';
import type { DecodedImage, ImageEmbeddings, ImageTokenLayout, VisionEncoder } from './types.js';
import { checkPreprocessingFits, qwen2VlTokenLayout, qwen2VlVisionConfig, type Qwen2VlVisionConfig } from './qwen2-vl-config.js';
import { preprocessQwen2Vl, qwen2VlPreprocessing, type Qwen2VlPatches, type Qwen2VlPreprocessing } from './qwen2-vl-preprocess.js';
import { Qwen2VisionTransformer } from './qwen2-vl-vision.js';

export class Qwen2VlVisionEncoder implements VisionEncoder {
  readonly imageTokenId: number;
  readonly config: Qwen2VlVisionConfig;
  readonly layout: ImageTokenLayout;
  readonly preprocessing: Qwen2VlPreprocessing;
  private readonly tower: Qwen2VisionTransformer;

  /** Tensors as the loader names them (visual.…; loaders/multimodal-names.ts). */
  constructor(checkpoint: Checkpoint, ops: Ops, preprocessorConfig: Record<string, unknown> | null) {
    const raw = checkpoint.config.visionHfConfig;
    if (!raw) throw new Error(`${checkpoint.source}: not a vision-language checkpoint`);
    this.config = qwen2VlVisionConfig(raw, `${checkpoint.source}: config.json`);
    // The merger writes the rows straight into the decoder's input.
    if (this.config.outDim !== checkpoint.config.hiddenSize) {
      throw new Error(
        `${checkpoint.source}: vision_config.hidden_size ${this.config.outDim} is not the language model's hidden size ${checkpoint.config.hiddenSize}`,
      );
    }
    this.preprocessing = qwen2VlPreprocessing(preprocessorConfig, `${checkpoint.source}: preprocessor_config.json`);
    checkPreprocessingFits(this.preprocessing, this.config, `${checkpoint.source}: preprocessor_config.json`);
    this.tower = new Qwen2VisionTransformer(this.config, new CheckpointWeights(checkpoint, ops), 'visual.', ops);
    this.imageTokenId = this.config.imageTokenId;
    this.layout = qwen2VlTokenLayout(this.config, this.preprocessing);
  }

  encode(image: DecodedImage): ImageEmbeddings {
    return this.encodePatches(preprocessQwen2Vl(image, this.preprocessing));
  }

  /** The embeddings of preprocessed patches (transformers' pixel_values of one image, and its grid). */
  encodePatches({ patches, gridH, gridW }: Qwen2VlPatches): ImageEmbeddings {
    const m = this.config.spatialMergeSize;
    const embeddings = this.tower.forward(patches, gridH, gridW);
    const grid = { t: 1, h: gridH / m, w: gridW / m };
    return { embeddings, numTokens: grid.h * grid.w, grid };
  }
}
