// LLaVA's image side (transformers' LlavaModel.get_image_features): preprocessing, the vision tower
// up to the configured hidden state(s), the select strategy, and the projector into the language
// model's embedding space. One image gives tokensPerImage rows, which the prompt's image
// placeholder tokens take in order.
import type { Ops } from '../../kernels/ops.js';
import type { Checkpoint } from '../types.js';
import { CheckpointWeights } from '../architectures/weights.js';
import type { DecodedImage, ImageEmbeddings, ImageTokenLayout, VisionEncoder } from './types.js';
import { llavaTokenLayout, llavaVisionConfig, type LlavaVisionConfig } from './llava-config.js';
import { VisionTransformer } from './vision-transformer.js';
import { LlavaProjector } from './llava-projector.js';
import { imagePreprocessing, preprocessImage, type ImagePreprocessing } from './preprocess.js';

export class LlavaVisionEncoder implements VisionEncoder {
  readonly imageTokenId: number;
  /** Rows one image becomes: the tower's rows, less CLIP's class row under the 'default' strategy. */
  readonly tokensPerImage: number;
  readonly config: LlavaVisionConfig;
  readonly layout: ImageTokenLayout;
  readonly preprocessing: ImagePreprocessing;
  private readonly tower: VisionTransformer;
  private readonly projector: LlavaProjector;

  /** Tensors as the loader names them (vision_tower.…, multi_modal_projector.…; loaders/multimodal-names.ts). */
  constructor(checkpoint: Checkpoint, ops: Ops, preprocessorConfig: Record<string, unknown> | null) {
    const raw = checkpoint.config.visionHfConfig;
    if (!raw) throw new Error(`${checkpoint.source}: not a vision-language checkpoint`);
    this.config = llavaVisionConfig(raw, `${checkpoint.source}: config.json`);
    const { tower, featureLayers } = this.config;
    this.preprocessing = imagePreprocessing(preprocessorConfig, tower, `${checkpoint.source}: preprocessor_config.json`);
    const w = new CheckpointWeights(checkpoint, ops);
    this.tower = new VisionTransformer(tower, w, 'vision_tower.', ops);
    const textHidden = checkpoint.config.hiddenSize;
    this.projector = new LlavaProjector(
      w,
      'multi_modal_projector.',
      tower.hiddenSize * featureLayers.length,
      textHidden,
      this.config.projectorAct,
      this.config.projectorBias,
      ops,
    );
    this.imageTokenId = this.config.imageTokenId;
    this.tokensPerImage = this.tower.numTokens - (this.config.dropFirstRow ? 1 : 0);
    this.layout = llavaTokenLayout(this.config);
    const promised = this.layout.tokensFor(1, 1).numTokens;
    if (promised !== this.tokensPerImage) throw new Error(`LLaVA: the tower gives ${this.tokensPerImage} rows, the layout ${promised}`);
  }

  encode(image: DecodedImage): ImageEmbeddings {
    return this.encodePixels(preprocessImage(image, this.preprocessing));
  }

  /** The embeddings of preprocessed pixels [3, imageSize, imageSize] (transformers' pixel_values of one image). */
  encodePixels(pixels: Float32Array): ImageEmbeddings {
    const features = this.tower.hiddenStates(pixels, this.config.featureLayers);
    const width = features.length / this.tower.numTokens;
    const rows = this.tokensPerImage;
    const embeddings = this.projector.project(features.subarray(features.length - rows * width), rows);
    return { embeddings, numTokens: rows };
  }
}
