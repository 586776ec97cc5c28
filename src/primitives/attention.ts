// softmax(q kᵀ · scale + mask) v over the keys a KV cache holds.

import { kernelsFor } from "../backends/index.js";
import type { AttentionOptions, AttentionSegment, KVRows } from "../backends/kernels.js";
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

/**
 * attention for several sequences at once: q [rows, heads, headDim] holds each segment's rows
 * [start, start + length), and each attends to its own cached k, v (nKeys of them, its first
 * query at pos0). One kernel call when the backend has one (attentionBatch), else one per
 * segment; each row's values are the same either way. Returns [rows, heads · headDim].
 */
export function attentionSegments(q: Tensor, segments: readonly AttentionSegment[], kvHeads: number, opts: AttentionOptions): Tensor {
  const [T, heads, headDim] = q.shape, width = heads * headDim;
  const out = q.like([T, width]);
  const k = kernelsFor(q.device);
  if (k.attentionBatch && segments.length > 1 && segments.every((s) => s.k.type === segments[0].k.type && s.v.type === segments[0].k.type)) {
    k.attentionBatch(q.data, segments, heads, kvHeads, headDim, opts, out.data);
    return out;
  }
  for (const s of segments) {
    const rows = [s.start * width, (s.start + s.length) * width] as const;
    k.attention(q.data.subarray(...rows), s.k, s.v, s.length, s.pos0, s.nKeys, heads, kvHeads, headDim, opts, out.data.subarray(...rows));
  }
  return out;
}
