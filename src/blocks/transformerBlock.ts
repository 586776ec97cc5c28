// One pre-norm transformer block:
//   x = x + PostNorm(Attn(Norm(x)))        (PostNorm only in Gemma 2)
//   x = x + PostNorm(FFN(Norm(x)))         (FFN: dense, or a mixture of experts)

import { add } from "../primitives/index.js";
import type { Tensor } from "../tensor/tensor.js";
import { feedForward, type FeedForwardKind, type FeedForwardWeights } from "./feedForward.js";
import type { Segment } from "./kvCache.js";
import { mixtureOfExperts, type ExpertsWeights } from "./mixtureOfExperts.js";
import { norm, type NormWeights } from "./norm.js";
import { selfAttention, type AttentionConfig, type AttentionWeights } from "./selfAttention.js";

export interface BlockWeights {
  attnNorm: NormWeights;
  attn: AttentionWeights;
  postAttnNorm?: NormWeights;
  ffnNorm: NormWeights;
  ffn?: FeedForwardWeights;
  experts?: ExpertsWeights;
  postFfnNorm?: NormWeights;
}

export interface BlockConfig {
  attn: AttentionConfig;
  ffn: FeedForwardKind;
  expertsUsed: number;
}

/** x: [T, d], rows of the sequences `segments` at `positions` → [T, d] (layer `layer`) */
export function transformerBlock(x: Tensor, w: BlockWeights, c: BlockConfig, segments: readonly Segment[], layer: number, positions: Int32Array): Tensor {
  let h = selfAttention(norm(x, w.attnNorm), w.attn, c.attn, segments, layer, positions);
  if (w.postAttnNorm) h = norm(h, w.postAttnNorm);
  x = add(x, h);
  const g = norm(x, w.ffnNorm);
  let f = w.experts ? mixtureOfExperts(g, w.experts, c.expertsUsed) : feedForward(g, w.ffn!, c.ffn);
  if (w.postFfnNorm) f = norm(f, w.postFfnNorm);
  return add(x, f);
}
