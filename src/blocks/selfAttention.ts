// Multi-head self-attention with grouped KV heads, RoPE and a KV cache:
//   q, k, v = x W_qᵀ, x W_kᵀ, x W_vᵀ;  q, k = rope(q), rope(k);  out = attention(q, K, V) W_oᵀ

import type { AttentionOptions } from "../backends/kernels.js";
import { attention, matmul, rmsNorm, rope, type RopeConfig } from "../primitives/index.js";
import type { Tensor } from "../tensor/tensor.js";
import type { Weight } from "../tensor/weight.js";
import type { Segment } from "./kvCache.js";

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

/**
 * x: [T, d], the rows of one or more sequences (`segments`) at `positions` → [T, d].
 * Each segment's keys and values go into its own cache (layer `layer`), and its queries attend
 * to that cache only.
 */
export function selfAttention(x: Tensor, w: AttentionWeights, c: AttentionConfig, segments: readonly Segment[], layer: number, positions: Int32Array): Tensor {
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
  const a = q.like([T, c.heads * c.headDim]);                      // [T, heads · headDim]
  for (const { cache, start, length, pos0 } of segments) {
    const kv = cache.layers[layer];
    kv.write(pos0, k.sliceRows(start, start + length), v.sliceRows(start, start + length));
    // The cache's row 0 holds position kv.base (> 0 on a sliding-window layer that dropped old keys).
    const out = attention(q.sliceRows(start, start + length), kv.keys, kv.values, pos0 - kv.base, pos0 + length - kv.base, c.kvHeads, c.attn);
    a.data.set(out.data, start * c.heads * c.headDim);
  }
  return matmul(a, w.o, w.oBias);                                  // [T, d]
}
