// Multi-head self-attention with grouped KV heads, RoPE and a KV cache:
//   q, k, v = x W_qᵀ, x W_kᵀ, x W_vᵀ;  q, k = rope(q), rope(k);  out = attention(q, K, V) W_oᵀ

import type { AttentionOptions } from "../backends/kernels.js";
import { attention, matmul, rmsNorm, rope, type RopeConfig } from "../primitives/index.js";
import type { Tensor } from "../tensor/tensor.js";
import type { Weight } from "../tensor/weight.js";
import type { LayerCache } from "./kvCache.js";

export interface AttentionWeights {
  q: Weight; k: Weight; v: Weight; o: Weight;
  qBias?: Float32Array; kBias?: Float32Array; vBias?: Float32Array; oBias?: Float32Array;
  /** RMSNorm of q and k: per head (Qwen 3) or over the whole projection (OLMoE). */
  qNorm?: Float32Array; kNorm?: Float32Array;
}

export interface AttentionConfig {
  heads: number;
  kvHeads: number;
  headDim: number;
  rope: RopeConfig | null;
  invFreq: Float32Array;
  qkNorm: "head" | "full" | null;
  normEps: number;
  attn: AttentionOptions;
}

/** x: [T, d] at positions pos0.. → [T, d]; appends this layer's keys and values to the cache. */
export function selfAttention(x: Tensor, w: AttentionWeights, c: AttentionConfig, cache: LayerCache, pos0: number, positions: Int32Array): Tensor {
  const T = x.rows;
  let q = matmul(x, w.q, w.qBias);                                 // [T, heads · headDim]
  let k = matmul(x, w.k, w.kBias);                                 // [T, kvHeads · headDim]
  const v = matmul(x, w.v, w.vBias);                               // [T, kvHeads · headDim]
  if (c.qkNorm) {
    const qRows = c.qkNorm === "head" ? [T * c.heads, c.headDim] : [T, c.heads * c.headDim];
    const kRows = c.qkNorm === "head" ? [T * c.kvHeads, c.headDim] : [T, c.kvHeads * c.headDim];
    q = rmsNorm(q.reshape(qRows), w.qNorm!, c.normEps);
    k = rmsNorm(k.reshape(kRows), w.kNorm!, c.normEps);
  }
  q = q.reshape([T, c.heads, c.headDim]);
  k = k.reshape([T, c.kvHeads, c.headDim]);
  if (c.rope) {
    rope(q, positions, c.invFreq, c.rope);
    rope(k, positions, c.invFreq, c.rope);
  }
  cache.write(pos0, k, v);
  const a = attention(q, cache.k, cache.v, pos0, pos0 + T, c.kvHeads, c.attn); // [T, heads · headDim]
  return matmul(a, w.o, w.oBias);                                  // [T, d]
}
