// Multi-head self-attention with grouped KV heads, RoPE and (inference) a KV cache:
//   q, k, v = x W_qᵀ, x W_kᵀ, x W_vᵀ;  q, k = rope(q), rope(k);  out = attention(q, K, V) W_oᵀ

import type { AttentionOptions, AttentionSegment, KVRows } from "../backends/kernels.js";
import { attention, attentionSegments } from "../primitives/index.js";
import type { Tensor } from "../tensor/tensor.js";
import type { Segment } from "./kvCache.js";
import type { Ops, RopeSpec, Value } from "./ops.js";
import type { BlockNames } from "./tensorNames.js";

export interface AttentionConfig {
  heads: number;
  kvHeads: number;
  headDim: number;
  /** q, k, v projections carry biases (Qwen 2, GPT-2, ViT). */
  qkvBias: boolean;
  /** One fused [q; k; v] projection (GPT-2). */
  fusedQKV: boolean;
  outBias: boolean;
  /** RMSNorm of q and k: per head (Qwen 3) or over the whole projection (OLMoE). */
  qkNorm: "head" | "full" | null;
  normEps: number;
  /** This layer's rotary embedding (null: none). */
  rope: RopeSpec | null;
  /** Scale, soft-cap, this layer's window, causal or not. */
  attn: AttentionOptions;
}

/** x: [T, d] → [T, d], layer `layer`. */
export function selfAttention<X extends Value>(ops: Ops<X>, x: X, n: BlockNames, c: AttentionConfig, layer: number): X {
  const T = x.rows, H = c.heads, KV = c.kvHeads, D = c.headDim;
  const bias = (b: string) => (c.qkvBias ? b : null);
  let q: X, k: X, v: X;
  if (c.fusedQKV) {
    const qkv = ops.linear(x, n.attnQKV.weight, bias(n.attnQKV.bias));  // [T, (H + 2·KV)·D]
    [q, k, v] = [ops.sliceCols(qkv, 0, H * D), ops.sliceCols(qkv, H * D, (H + KV) * D), ops.sliceCols(qkv, (H + KV) * D, (H + 2 * KV) * D)];
  } else {
    // q [T, H·D], k and v [T, KV·D]
    [q, k, v] = ops.linears(x, [n.attnQ.weight, n.attnK.weight, n.attnV.weight], [bias(n.attnQ.bias), bias(n.attnK.bias), bias(n.attnV.bias)]);
  }
  if (c.qkNorm) {
    const perHead = c.qkNorm === "head";
    q = ops.rmsNorm(perHead ? ops.reshape(q, [T * H, D]) : q, n.attnQNorm.weight, c.normEps);
    k = ops.rmsNorm(perHead ? ops.reshape(k, [T * KV, D]) : k, n.attnKNorm.weight, c.normEps);
  }
  q = ops.reshape(q, [T, H, D]);
  k = ops.reshape(k, [T, KV, D]);
  if (c.rope) [q, k] = ops.ropePair(q, k, c.rope);
  const a = ops.attention(q, k, v, layer, c.attn);                     // [T, H·D]
  return ops.linear(a, n.attnOutput.weight, c.outBias ? n.attnOutput.bias : null); // [T, d]
}

/**
 * The inference half of attention: each segment's keys and values go into its own cache
 * (layer `layer`), and its queries attend to that cache; a segment without a cache (a ViT's
 * image) attends to its own rows.  q: [T, heads, headDim], k, v: [T, kvHeads · headDim].
 */
export function attendThroughCache(q: Tensor, k: Tensor, v: Tensor, segments: readonly Segment[], layer: number, kvHeads: number, opts: AttentionOptions): Tensor {
  const [T, heads, headDim] = q.shape, width = kvHeads * headDim;
  if (segments.every((s) => s.cache)) {
    // Every sequence has a cache (decoding, a server's batch): store each one's keys and values,
    // then one attention call for all of them.
    const parts: AttentionSegment[] = segments.map(({ cache, start, length, pos0 }) => {
      const kv = cache!.layers[layer];
      kv.write(pos0, k.sliceRows(start, start + length), v.sliceRows(start, start + length));
      // The cache's row 0 holds position kv.base (> 0 on a sliding-window layer that dropped old keys).
      return { k: kv.keys, v: kv.values, start, length, pos0: pos0 - kv.base, nKeys: pos0 + length - kv.base };
    });
    return attentionSegments(q, parts, kvHeads, opts);                 // [T, heads · headDim]
  }
  const a = q.like([T, heads * headDim]);                              // [T, heads · headDim]
  for (const { cache, start, length, pos0 } of segments) {
    let out: Tensor;
    if (cache) {
      const kv = cache.layers[layer];
      kv.write(pos0, k.sliceRows(start, start + length), v.sliceRows(start, start + length));
      // The cache's row 0 holds position kv.base (> 0 on a sliding-window layer that dropped old keys).
      out = attention(q.sliceRows(start, start + length), kv.keys, kv.values, pos0 - kv.base, pos0 + length - kv.base, kvHeads, opts);
    } else {
      out = attention(q.sliceRows(start, start + length), f32Rows(k.data.subarray(start * width, (start + length) * width)),
        f32Rows(v.data.subarray(start * width, (start + length) * width)), 0, length, kvHeads, opts);
    }
    a.data.set(out.data, start * heads * headDim);
  }
  return a;
}

/** Float32 rows in place, as the attention kernels read a cache's rows. */
function f32Rows(x: Float32Array): KVRows {
  return { type: "f32", bytes: new Uint8Array(x.buffer, x.byteOffset, x.byteLength) };
}
