// Rotary position embedding (Su et al. 2021) and its frequency table.

import { kernelsFor } from "../backends/index.js";
import type { RopeStyle } from "../backends/kernels.js";
import type { Tensor } from "../tensor/tensor.js";

export interface RopeConfig {
  /** θ base: frequency of pair i is base^(−2i/dims). */
  base: number;
  /** How many dims of each head rotate (the rest pass through). */
  dims: number;
  style: RopeStyle;
  /** Linear position scaling: positions are multiplied by this (1 / scaling factor). */
  freqScale: number;
  /** Per-pair divisors of the frequencies (Llama 3's rope_freqs.weight), or null. */
  freqFactors: Float32Array | null;
}

/** invFreq[i] = freqScale · base^(−2i/dims) / freqFactors[i] */
export function ropeInvFreq(c: RopeConfig): Float32Array {
  const inv = new Float32Array(c.dims / 2);
  for (let i = 0; i < inv.length; i++) {
    inv[i] = (c.freqScale * Math.pow(c.base, (-2 * i) / c.dims)) / (c.freqFactors ? c.freqFactors[i] : 1);
  }
  return inv;
}

/** q: [T, heads, headDim] and k: [T, kvHeads, headDim], both rotated in place at the same
 *  positions (one kernel call where the backend has the fused one). */
export function ropePair(q: Tensor, k: Tensor, positions: Int32Array, invFreq: Float32Array, c: Pick<RopeConfig, "dims" | "style">): [Tensor, Tensor] {
  const kernels = kernelsFor(q.device);
  if (!kernels.ropePair) return [rope(q, positions, invFreq, c), rope(k, positions, invFreq, c)];
  const [T, heads, headDim] = q.shape;
  kernels.ropePair(q.data, k.data, T, heads, k.shape[1], headDim, c.dims, positions, invFreq, c.style);
  return [q, k];
}

/** x: [T, heads, headDim], rotated in place at the given positions. */
export function rope(x: Tensor, positions: Int32Array, invFreq: Float32Array, c: Pick<RopeConfig, "dims" | "style">): Tensor {
  const [T, heads, headDim] = x.shape;
  kernelsFor(x.device).rope(x.data, T, heads, headDim, c.dims, positions, invFreq, c.style);
  return x;
}
