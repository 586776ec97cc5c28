// softmax(q kᵀ · scale + mask) v over the keys a KV cache holds.

import { kernelsFor } from "../backends/index.js";
import type { AttentionOptions, KVRows } from "../backends/kernels.js";
import type { Tensor } from "../tensor/tensor.js";

/**
 * q: [T, heads, headDim] at positions pos0..pos0+T−1; k, v: [≥ nKeys, kvHeads, headDim] as a
 * KV cache stores them (key j at position j).
 * Returns [T, heads · headDim].
 */
export function attention(q: Tensor, k: KVRows, v: KVRows, pos0: number, nKeys: number, kvHeads: number, opts: AttentionOptions): Tensor {
  const [T, heads, headDim] = q.shape;
  const out = q.like([T, heads * headDim]);
  kernelsFor(q.device).attention(q.data, k, v, T, pos0, nKeys, heads, kvHeads, headDim, opts, out.data);
  return out;
}
