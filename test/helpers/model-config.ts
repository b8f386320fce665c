// A small Llama-shaped ModelConfig for tests that need shapes, not weights (KV cache, swap, ops).
import type { ModelConfig } from '../../src/model/types.js';

export function llamaConfig(over: Partial<ModelConfig> = {}): ModelConfig {
  return {
    architecture: 'llama',
    hiddenSize: 64,
    intermediateSize: 128,
    numLayers: 3,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 16,
    vocabSize: 100,
    ropeTheta: 10000,
    rmsNormEps: 1e-6,
    tieWordEmbeddings: false,
    slidingWindow: null,
    attentionBias: false,
    maxPositionEmbeddings: 512,
    bosTokenId: 1,
    eosTokenIds: [2],
    nameOrPath: null,
    ...over,
  };
}
